"""Truncated-BPTT training on probe instances, and the FLOP rule the referee charges for it.

FLOPs (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1; the referee
original protocol's "6 * n_params * n_tokens"): a token that is forwarded *and* backpropagated costs
``6 * n_params`` FLOPs, a token that is only forwarded (evaluation, and the no-grad prefix of a
long training sequence) ``2 * n_params``. Counted from the tokens actually processed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from swar_bench.mechanisms.protocol import State
from swar_bench.referee.stream import ChunkResult, Runner
from swar_bench.tbptt import tbptt_chunks

TRAIN_FLOPS_PER_PARAM = 6
"""FLOPs per parameter per forward+backward token (Kaplan et al. 2020)."""

FORWARD_FLOPS_PER_PARAM = 2
"""FLOPs per parameter per forward-only token (Kaplan et al. 2020)."""


def flops(n_params: int, *, tokens_forward: int = 0, tokens_backward: int = 0) -> float:
    """``2 * n_params * tokens_forward + 6 * n_params * tokens_backward`` (FLOPs)."""
    return float(
        FORWARD_FLOPS_PER_PARAM * n_params * tokens_forward
        + TRAIN_FLOPS_PER_PARAM * n_params * tokens_backward
    )


def train_step_tokens(batch_size: int, length: int, tbptt_steps: int) -> tuple[int, int]:
    """``(tokens_forward, tokens_backward)`` of one ``train_tbptt`` call on ``[batch_size, length]``.

    The last ``min(tbptt_steps, length)`` positions are backpropagated, the rest only forwarded.
    """
    window = min(int(tbptt_steps), int(length))
    return int(batch_size) * (int(length) - window), int(batch_size) * window


@dataclass
class TrainStep:
    """Outcome of one ``train_tbptt`` call.

    Attributes:
        loss: mean cross-entropy (nats) over the supervised positions of the trained window,
            before the update (NaN when the window has none).
        tokens_forward: tokens only forwarded (no-grad prefix).
        tokens_backward: tokens forwarded and backpropagated (the window).
    """

    loss: float
    tokens_forward: int
    tokens_backward: int


def train_tbptt(
    mechanism: object,
    optimizer: torch.optim.Optimizer,
    input_ids: np.ndarray,
    targets: np.ndarray,
    *,
    vocab: int,
    tbptt_steps: int = 256,
    chunk_size: int = 4096,
    grad_clip: float | None = 1.0,
) -> TrainStep:
    """One optimizer step on a batch by truncated BPTT, the loss only on supervised positions.

    ``input_ids`` / ``targets`` are ``np.int64[B, T]`` (aligned targets, -100 unsupervised). The
    prefix ``[0, T - tbptt_steps)`` is streamed forward under ``torch.no_grad`` in chunks of
    ``chunk_size`` tokens (constant memory at any ``T``), the state is detached, and the last
    ``tbptt_steps`` tokens are run with gradients; their mean loss over supervised positions is
    backpropagated, the gradient norm clipped to ``grad_clip`` and ``optimizer`` stepped. For the probe
    suites, whose only supervised position is the last one, this is exactly truncated BPTT with
    the loss on the probe position: a chunk without supervised positions contributes no gradient.
    When the window has no supervised position no step is taken.

    Raises:
        ValueError: ``tbptt_steps`` < 1, or shapes of ``input_ids`` and ``targets`` differ.
    """
    if tbptt_steps < 1:
        raise ValueError(f"tbptt_steps={tbptt_steps!r}: expected an integer >= 1")
    if input_ids.shape != targets.shape or input_ids.ndim != 2:
        raise ValueError(
            f"input_ids {input_ids.shape} and targets {targets.shape}: expected the same [B, T] shape"
        )
    runner = Runner(mechanism, vocab)
    B, T = input_ids.shape
    split = max(0, T - int(tbptt_steps))

    def forward(state: State, ids: np.ndarray, tgt: np.ndarray) -> tuple[State, ChunkResult]:
        out = runner.chunk(state, ids, tgt)
        return out.state, out

    with torch.no_grad():
        state = runner.init_state(B)
        if split > 0:
            prefix = (input_ids[:, :split], targets[:, :split])
            for chunk in tbptt_chunks(forward, state, *prefix, chunk_size, runner.detach):
                state = chunk.state
    state = runner.detach(state)
    out = runner.chunk(state, input_ids[:, split:], targets[:, split:])
    tokens_forward, tokens_backward = train_step_tokens(B, T, tbptt_steps)
    if out.loss is None:
        return TrainStep(float("nan"), tokens_forward, tokens_backward)
    optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    if grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(runner.mechanism.parameters(), float(grad_clip))
    optimizer.step()
    return TrainStep(float(out.loss.detach()), tokens_forward, tokens_backward)
