"""The ContextMechanism protocol: the one interface every mechanism, the harness and the referee share.

A mechanism is a causal language model whose whole memory of the past is an explicit ``state``
object (a tensor, or a tuple / list / dict / dataclass of tensors). Streaming a sequence chunk by
chunk with the state carried must give the same logits as one call on the whole sequence
(tested for every mechanism and by ``swar-bench check-mechanism``; see docs/ARCHITECTURE.md, "The
ContextMechanism protocol", and docs/MECHANISMS.md, "Bring your own layer").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import torch

State = Any
"""A tensor, or a (nested) tuple / list / dict / dataclass of tensors; ``None`` leaves allowed."""


@runtime_checkable
class ContextMechanism(Protocol):
    """What the harness and the referee need from a sequence model.

    Attributes:
        vocab_size: number of token ids the model reads and predicts (logits' last dim).
        n_params: number of trainable parameters.
        flops_per_token: forward FLOPs per token (a training step costs ~3x this; the referee
            uses the Kaplan/Hoffmann approximation 6 * n_params per trained token).
    """

    vocab_size: int

    @property
    def n_params(self) -> int: ...

    @property
    def flops_per_token(self) -> float: ...

    def init_state(
        self, batch_size: int, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> State:
        """The empty state for ``batch_size`` sequences."""

    def forward(self, input_ids: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """``input_ids[B, T]`` int64 -> ``(logits[B, T, vocab_size]`` float, new state)."""

    def detach_state(self, state: State) -> State:
        """The same state cut from the autograd graph (truncated BPTT boundary)."""

    def state_bytes(self, batch_size: int) -> int:
        """Analytic size of the state in bytes for ``batch_size`` sequences; equals
        ``measure_state_bytes(init_state(batch_size))`` for every fixed-size mechanism."""


def iter_state_tensors(state: State) -> Iterator[torch.Tensor]:
    """Every tensor in a (nested) state, depth first."""
    if state is None:
        return
    if isinstance(state, torch.Tensor):
        yield state
    elif dataclasses.is_dataclass(state) and not isinstance(state, type):
        for f in dataclasses.fields(state):
            yield from iter_state_tensors(getattr(state, f.name))
    elif isinstance(state, dict):
        for v in state.values():
            yield from iter_state_tensors(v)
    elif isinstance(state, (tuple, list)):
        for v in state:
            yield from iter_state_tensors(v)
    elif isinstance(state, (int, float, bool)):
        return
    else:
        raise TypeError(f"state leaf of type {type(state).__name__} is not a tensor or container of tensors")


def map_state(fn, state: State) -> State:
    """Apply ``fn`` to every tensor of a (nested) state, keeping its structure."""
    if state is None or isinstance(state, (int, float, bool)):
        return state
    if isinstance(state, torch.Tensor):
        return fn(state)
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return dataclasses.replace(
            state, **{f.name: map_state(fn, getattr(state, f.name)) for f in dataclasses.fields(state) if f.init}
        )
    if isinstance(state, dict):
        return {k: map_state(fn, v) for k, v in state.items()}
    if isinstance(state, tuple):
        return tuple(map_state(fn, v) for v in state)
    if isinstance(state, list):
        return [map_state(fn, v) for v in state]
    raise TypeError(f"state leaf of type {type(state).__name__} is not a tensor or container of tensors")


def measure_state_bytes(state: State) -> int:
    """Bytes held by the tensors of a state: sum of ``numel * element_size``."""
    return sum(t.numel() * t.element_size() for t in iter_state_tensors(state))


def is_fixed_size(mechanism: Any) -> bool:
    """Whether a mechanism's state size is independent of the tokens seen: its
    ``fixed_size_state`` attribute, True when absent (full attention's KV cache sets it False)."""
    return bool(getattr(mechanism, "fixed_size_state", True))


def state_bytes_at(mechanism: Any, batch_size: int, seq_len: int) -> int:
    """State bytes for ``batch_size`` sequences after ``seq_len`` tokens: ``state_bytes(batch_size)``
    for a fixed-size mechanism, ``state_bytes(batch_size, seq_len=seq_len)`` for a growing one."""
    if is_fixed_size(mechanism):
        return int(mechanism.state_bytes(batch_size))
    return int(mechanism.state_bytes(batch_size, seq_len=seq_len))


CLASS_MEMBERS = ("init_state", "detach_state")
"""What a ``ContextMechanism`` class must define for the harness to train and evaluate it, beside
``torch.nn.Module``'s ``forward`` (``vocab_size`` is an instance attribute, set by ``__init__``,
so a class cannot be checked for it before it is built; the referee also reads ``state_bytes``)."""

PROTOCOL_EXPECTED = ("expected a class following swar_bench/mechanisms/protocol.py "
                     "(swar-bench check-mechanism CLASS_PATH checks one)")
"""How a refusal of a class that is no ``ContextMechanism`` ends."""


def class_not_a_mechanism(cls: type) -> str | None:
    """Why the class ``cls`` cannot be a ``ContextMechanism`` before it is built, e.g. ``GRU is not
    a ContextMechanism (missing init_state, detach_state)``; None when it may be one
    (a ``torch.nn.Module`` subclass defining every member of ``CLASS_MEMBERS``)."""
    missing = [name for name in CLASS_MEMBERS if not callable(getattr(cls, name, None))]
    if isinstance(cls, type) and issubclass(cls, torch.nn.Module) and not missing:
        return None
    if isinstance(cls, type) and not issubclass(cls, torch.nn.Module):
        missing = ["torch.nn.Module as a base class", *missing]
    return f"{getattr(cls, '__name__', cls)} is not a ContextMechanism (missing {', '.join(missing)})"
