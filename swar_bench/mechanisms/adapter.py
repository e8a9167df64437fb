"""Accept loss-only mechanisms (docs/REFEREE.md, "Loss-only mechanisms"), which return a loss and no logits.

The original protocol's ContextMechanism (docs/REFEREE.md) trains and is scored through
``step(state, (x, y)) -> (state, mean_loss)`` only, so exact accuracy is unavailable for it; the
referee then reports the loss-threshold proxy (``loss < 0.5 * ln(vocab)``) for such a mechanism
and exact accuracy for everything that returns logits.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from swar_bench.mechanisms.base import check_positive_int
from swar_bench.mechanisms.protocol import State, map_state, measure_state_bytes


class LossOnlyAdapter(nn.Module):
    """Wrap a seed-style mechanism so the harness can train and account for it.

    Args:
        mechanism: an object with ``step(state, (x, y)) -> (state, mean_loss)`` (``mean_loss`` a
            scalar tensor, nats per supervised token); optionally ``init_state(batch_size)``,
            ``state_bytes(batch_size)``, ``flops_per_token``, ``parameters()``, and ``vocab`` /
            ``vocab_size``.
        vocab_size: token ids it reads; taken from ``mechanism.vocab_size`` / ``.vocab`` when None.

    Attributes:
        returns_logits: False; ``forward`` raises, callers use ``step`` / ``loss``.

    Raises:
        TypeError: when ``mechanism`` has no ``step`` method.
        ValueError: when no vocabulary size can be found.
    """

    returns_logits = False
    fixed_size_state = True

    def __init__(self, mechanism: Any, vocab_size: int | None = None):
        super().__init__()
        if not callable(getattr(mechanism, "step", None)):
            raise TypeError(
                f"{type(mechanism).__name__} has no step(state, (x, y)) method to adapt"
            )
        if vocab_size is None:
            vocab_size = getattr(mechanism, "vocab_size", None) or getattr(mechanism, "vocab", None)
        if vocab_size is None:
            raise ValueError(
                f"vocab_size is needed: {type(mechanism).__name__} has no vocab_size or vocab"
            )
        self.vocab_size = check_positive_int("vocab_size", int(vocab_size))
        if isinstance(mechanism, nn.Module):
            self.mechanism = mechanism
        else:
            self._wrapped = mechanism
            # the same Parameter objects, registered so optimizers and n_params see them
            params = (
                list(mechanism.parameters())
                if callable(getattr(mechanism, "parameters", None))
                else []
            )
            self.wrapped_params = nn.ParameterList(params)

    @property
    def wrapped(self) -> Any:
        """The adapted mechanism."""
        return self.mechanism if "mechanism" in self._modules else self._wrapped

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @property
    def flops_per_token(self) -> float:
        """The mechanism's own figure, else ``2 * n_params`` (forward matmul approximation)."""
        own = getattr(self.wrapped, "flops_per_token", None)
        return float(own) if own is not None else 2.0 * self.n_params

    def init_state(self, batch_size: int, device=None, dtype=None) -> State:
        """``mechanism.init_state(batch_size)`` moved to ``device``; None when it has none."""
        check_positive_int("batch_size", batch_size)
        init = getattr(self.wrapped, "init_state", None)
        if init is None:
            return None
        state = init(batch_size)
        return state if device is None else map_state(lambda t: t.to(device), state)

    def state_bytes(self, batch_size: int, seq_len: int = 0, dtype=None) -> int:
        """The mechanism's own ``state_bytes`` when it has one, else the measured bytes of
        ``init_state(batch_size)``."""
        own = getattr(self.wrapped, "state_bytes", None)
        if callable(own):
            return int(own(batch_size))
        return measure_state_bytes(self.init_state(batch_size))

    def detach_state(self, state: State) -> State:
        return map_state(torch.Tensor.detach, state)

    def step(
        self, state: State, batch: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[State, torch.Tensor]:
        """The mechanism's ``step(state, (x, y)) -> (state, mean_loss)``, unchanged."""
        return self.wrapped.step(state, batch)

    def loss(
        self, input_ids: torch.Tensor, labels: torch.Tensor, state: State
    ) -> tuple[torch.Tensor, State]:
        """``(mean_loss, state)`` for ``input_ids[B, T]`` and their targets ``labels[B, T]`` in the
        original protocol's convention (what ``step`` expects as ``y``)."""
        state, mean_loss = self.step(state, (input_ids, labels))
        return mean_loss, state

    def forward(self, input_ids: torch.Tensor, state: State = None):
        raise TypeError(
            f"{type(self.wrapped).__name__} returns only a mean loss (no logits); use step() / loss() "
            "and the loss-threshold proxy"
        )
