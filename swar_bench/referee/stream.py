"""Drive a mechanism over a long ``[B, T]`` sequence chunk by chunk: the referee's one inner loop.

Two kinds of mechanism are driven the same way:

- a ``ContextMechanism`` (``forward(input_ids, state) -> (logits, state)``): per-position loss and
  exact argmax correctness come from the logits;
- a loss-only mechanism in the original protocol's style (docs/REFEREE.md, "Loss-only mechanisms"; ``step(state, (x, y)) -> (state, mean_loss)``,
  no logits): only the mean loss over the chunk's supervised positions is known, so the referee
  reports only the loss-threshold proxy for it (see ``is_loss_only``).

Memory does not grow with ``T``: a chunk's logits are reduced to sums before the next chunk runs,
and the carried state is detached at every chunk boundary (truncated BPTT).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from swar_bench.mechanisms.adapter import LossOnlyAdapter
from swar_bench.mechanisms.protocol import State, map_state
from swar_bench.referee.suites import IGNORE
from swar_bench.tbptt import chunk_bounds
from swar_bench.utils import interrupts


def is_loss_only(mechanism: object) -> bool:
    """True when ``mechanism`` exposes only a loss, not logits.

    That is the case when it declares ``returns_logits = False`` (the convention of the zoo's
    ``LossOnlyAdapter``), or it has a callable ``step`` and no ``forward`` of its own (a plain
    ``nn.Module`` subclass that does not override ``forward``).
    """
    flag = getattr(mechanism, "returns_logits", None)
    if flag is not None:
        return not bool(flag)
    if not callable(getattr(mechanism, "step", None)):
        return False
    forward = getattr(type(mechanism), "forward", None)
    return forward is None or forward is torch.nn.Module.forward


def as_mechanism(mechanism: object) -> object:
    """``mechanism`` itself, or a original-protocol-style loss-only one wrapped in the zoo's ``LossOnlyAdapter``.

    A raw original-protocol-style mechanism (``step`` and no logits, no ``returns_logits`` flag) has
    ``init_state(batch_size)`` without device / dtype; the adapter gives it the protocol's
    signature and shares its parameters.
    """
    if getattr(mechanism, "returns_logits", None) is None and is_loss_only(mechanism):
        return LossOnlyAdapter(mechanism)
    return mechanism


def count_params(mechanism: object) -> int:
    """Trainable parameters: the protocol's ``n_params`` when present, else the sum over ``parameters()``."""
    n = getattr(mechanism, "n_params", None)
    if n is not None:
        return int(n)
    params = getattr(mechanism, "parameters", None)
    if params is None:
        return 0
    return int(sum(p.numel() for p in params() if p.requires_grad))


def mechanism_device(mechanism: object) -> torch.device:
    """The device of the mechanism's first parameter or buffer (CPU when it has none)."""
    for getter in ("parameters", "buffers"):
        fn = getattr(mechanism, getter, None)
        if fn is not None:
            for t in fn():
                return t.device
    return torch.device("cpu")


@dataclass
class ChunkResult:
    """One chunk's outcome. Sums are over the chunk's supervised positions (``targets != IGNORE``).

    Attributes:
        state: the carried state after the chunk.
        loss: scalar mean cross-entropy (nats) over the supervised positions, differentiable;
            ``None`` when the chunk has none.
        n_supervised: ``int64[B]`` supervised positions per row.
        loss_sum: ``float64[B]`` summed loss per row (``None`` for loss-only mechanisms with B > 1).
        correct: ``int64[B]`` exact argmax hits per row (``None`` for loss-only mechanisms).
    """

    state: State
    loss: torch.Tensor | None
    n_supervised: np.ndarray
    loss_sum: np.ndarray | None
    correct: np.ndarray | None


class Runner:
    """Runs one mechanism on the referee's ``vocab``-token alphabet.

    Args:
        mechanism: a ``ContextMechanism`` or a loss-only mechanism (``is_loss_only``).
        vocab: alphabet size of the suites; must be <= ``mechanism.vocab_size`` when the
            mechanism has one. Logits are restricted to the first ``vocab`` ids, so chance is
            ``ln(vocab)`` for every mechanism that returns logits (a loss-only mechanism's loss is
            its own, over its own vocabulary).

    Raises:
        ValueError: ``vocab`` larger than the mechanism's vocabulary.
    """

    def __init__(self, mechanism: object, vocab: int) -> None:
        mechanism = as_mechanism(mechanism)
        self.mechanism = mechanism
        self.vocab = int(vocab)
        own = getattr(mechanism, "vocab_size", None)
        if own is not None and self.vocab > int(own):
            raise ValueError(
                f"vocab={vocab!r}: expected at most the mechanism's vocab_size ({own})"
            )
        self.loss_only = is_loss_only(mechanism)
        self.device = mechanism_device(mechanism)

    def init_state(self, batch_size: int) -> State:
        """The mechanism's empty state for ``batch_size`` sequences on its device."""
        return self.mechanism.init_state(batch_size, self.device, None)

    def detach(self, state: State) -> State:
        """Cut ``state`` from the autograd graph (the mechanism's ``detach_state`` when it has one)."""
        fn = getattr(self.mechanism, "detach_state", None)
        return fn(state) if fn is not None else map_state(torch.Tensor.detach, state)

    def chunk(self, state: State, input_ids: np.ndarray, targets: np.ndarray) -> ChunkResult:
        """Run one chunk: ``input_ids`` / ``targets`` ``np.int64[B, t]`` (aligned targets, ``IGNORE`` = -100).

        Raises:
            ValueError: a loss-only mechanism returned a non-scalar loss.
            KeyboardInterrupt / swar_bench.utils.interrupts.Terminated: a stop was recorded
                (``swar_bench.utils.interrupts.raise_if_stopped``).
        """
        interrupts.raise_if_stopped()  # a Ctrl-C / SIGTERM whose first delivery was lost
        x = torch.as_tensor(input_ids, dtype=torch.int64, device=self.device)
        y = torch.as_tensor(targets, dtype=torch.int64, device=self.device)
        supervised = y != IGNORE
        n_sup = supervised.sum(dim=1).cpu().numpy().astype(np.int64)
        if self.loss_only:
            state, mean_loss = self.mechanism.step(state, (x, y))
            if not torch.is_tensor(mean_loss):
                mean_loss = torch.as_tensor(float(mean_loss))
            if mean_loss.numel() != 1:
                raise ValueError(
                    f"step returned a loss of shape {tuple(mean_loss.shape)}: expected a scalar mean loss"
                )
            total = int(n_sup.sum())
            loss = mean_loss.reshape(()) if total > 0 else None
            loss_sum = None
            if x.shape[0] == 1:
                loss_sum = np.array([float(loss.detach()) * total if loss is not None else 0.0])
            return ChunkResult(state, loss, n_sup, loss_sum, None)
        logits, state = self.mechanism(x, state)
        logits = logits[..., : self.vocab].float()
        per_pos = F.cross_entropy(
            logits.reshape(-1, self.vocab), y.reshape(-1), ignore_index=IGNORE, reduction="none"
        ).view_as(y)
        total = int(n_sup.sum())
        loss = per_pos.sum() / total if total > 0 else None
        with torch.no_grad():
            loss_sum = per_pos.detach().double().sum(dim=1).cpu().numpy()
            hits = (logits.detach().argmax(dim=-1) == y) & supervised
            correct = hits.sum(dim=1).cpu().numpy().astype(np.int64)
        return ChunkResult(state, loss, n_sup, loss_sum, correct)


@dataclass
class StreamResult:
    """Totals of one streamed pass over ``[B, T]``.

    Attributes:
        state: the state after the last token (detached).
        state_rows: sequences that ``state`` holds (1 for a loss-only mechanism run row by row).
        n_supervised, loss_sum, correct: per-row totals as in ``ChunkResult`` (``loss_sum`` /
            ``correct`` ``None`` where unavailable).
        tail_n_supervised, tail_loss_sum: the same restricted to the last ``tail`` positions
            (zeros when ``tail`` is 0).
        tokens: tokens processed (``B * T``).
    """

    state: State
    state_rows: int
    n_supervised: np.ndarray
    loss_sum: np.ndarray | None
    correct: np.ndarray | None
    tail_n_supervised: np.ndarray
    tail_loss_sum: np.ndarray
    tokens: int


def stream(
    runner: Runner, input_ids: np.ndarray, targets: np.ndarray, *, chunk_size: int, tail: int = 0
) -> StreamResult:
    """Forward-only pass over ``input_ids`` / ``targets`` ``np.int64[B, T]`` in chunks, under ``torch.no_grad``.

    Loss-only mechanisms with ``B > 1`` are run one row at a time, since their mean loss cannot be
    split by row. ``tail`` > 0 also totals the last ``tail`` positions (the "deep in the stream"
    window of the perplexity suite).
    """
    B, T = input_ids.shape
    if runner.loss_only and B > 1:
        parts = [
            stream(
                runner, input_ids[b : b + 1], targets[b : b + 1], chunk_size=chunk_size, tail=tail
            )
            for b in range(B)
        ]
        return StreamResult(
            state=parts[-1].state,
            state_rows=1,
            n_supervised=np.concatenate([p.n_supervised for p in parts]),
            loss_sum=np.concatenate([p.loss_sum for p in parts]),
            correct=None,
            tail_n_supervised=np.concatenate([p.tail_n_supervised for p in parts]),
            tail_loss_sum=np.concatenate([p.tail_loss_sum for p in parts]),
            tokens=sum(p.tokens for p in parts),
        )
    split = T - tail if tail > 0 else None
    n_sup = np.zeros(B, dtype=np.int64)
    loss_sum = np.zeros(B, dtype=np.float64)
    correct = None if runner.loss_only else np.zeros(B, dtype=np.int64)
    tail_n = np.zeros(B, dtype=np.int64)
    tail_loss = np.zeros(B, dtype=np.float64)
    with torch.no_grad():
        state = runner.init_state(B)
        for a, b in chunk_bounds(T, chunk_size, split):
            out = runner.chunk(state, input_ids[:, a:b], targets[:, a:b])
            state = runner.detach(out.state)
            n_sup += out.n_supervised
            loss_sum += out.loss_sum
            if correct is not None:
                correct += out.correct
            if split is not None and a >= split:
                tail_n += out.n_supervised
                tail_loss += out.loss_sum
    return StreamResult(state, B, n_sup, loss_sum, correct, tail_n, tail_loss, B * T)
