"""Truncated backpropagation through time (TBPTT): the chunk loop the harness and the referee share.

A sequence ``[B, T]`` is cut along ``T`` into chunks; the mechanism runs chunk after chunk with
its state carried over, and the state is cut from the autograd graph (``detach_state``) at every
chunk boundary, so a chunk's loss backpropagates through that chunk alone and memory does not
grow with ``T`` (Williams & Peng 1990, "An efficient gradient-based algorithm for on-line training
of recurrent network trajectories"). ``TBPTTModule.training_step`` (one backward, and optionally
one optimizer step, per chunk) and the referee's ``train_tbptt`` (a no-grad prefix, then one
trained window) both run :func:`tbptt_chunks`; the loss on supervised positions is
:func:`supervised_cross_entropy` for the harness and the referee's ``Runner.chunk`` (which also
serves loss-only mechanisms) for the referee. No Lightning here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
"""Target value of an unsupervised position (the Hugging Face / PyTorch convention)."""

R = TypeVar("R")


def chunk_bounds(length: int, chunk_size: int, split: int | None = None) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``[0, length)`` in pieces of at most ``chunk_size`` tokens.

    When ``split`` is given, ``split`` is a chunk boundary: ``[0, split)`` and ``[split, length)`` are
    cut separately (the training window and the tail window start on a boundary).

    Raises:
        ValueError: ``chunk_size`` < 1.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size!r}: expected an integer >= 1")
    cuts = [0, length] if split is None or split <= 0 or split >= length else [0, split, length]
    out = []
    for a, b in itertools.pairwise(cuts):
        out.extend((s, min(s + chunk_size, b)) for s in range(a, b, chunk_size))
    return out


@dataclass
class Chunk(Generic[R]):
    """One chunk of :func:`tbptt_chunks`.

    Attributes:
        start, stop: its positions ``[start, stop)`` along ``T``.
        result: what ``step`` returned besides the state (e.g. the chunk's loss, still attached).
        state: the state after the chunk, not yet detached.
    """

    start: int
    stop: int
    result: R
    state: Any


def tbptt_chunks(
    step: Callable[[Any, Any, Any], tuple[Any, R]],
    state: Any,
    input_ids: Any,
    targets: Any,
    chunk_size: int,
    detach: Callable[[Any], Any],
) -> Iterator[Chunk[R]]:
    """Run ``step(state, input_ids[:, a:b], targets[:, a:b]) -> (state, result)`` on the chunks
    of :func:`chunk_bounds` ``(T, chunk_size)`` in order, carrying the state, and yield each
    :class:`Chunk`; once the caller is done with a chunk (its backward, its optimizer step) the
    state is detached (``detach``) before the next chunk runs.

    ``input_ids`` / ``targets``: ``[B, T]`` tensors or arrays (sliced along axis 1 only).

    Raises:
        ValueError: ``chunk_size`` < 1.
    """
    for start, stop in chunk_bounds(input_ids.shape[1], chunk_size):
        state, result = step(state, input_ids[:, start:stop], targets[:, start:stop])
        yield Chunk(start, stop, result, state)
        state = detach(state)


def supervised_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy (nats, float32 logits) over the supervised positions and their count.

    Args:
        logits: ``[B, t, V]`` (any float dtype).
        targets: ``int64 [B, t]``, :data:`IGNORE_INDEX` at unsupervised positions.

    Returns:
        ``(loss_sum, count)``: a 0-d float32 tensor (0 when nothing is supervised) and an int.
    """
    loss_sum = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )
    return loss_sum, int((targets != IGNORE_INDEX).sum())
