"""The fair-study protocol as pure functions of the records: the selection score, the gate and the
learning-rate choice. ``runner.py`` executes what these decide; ``report.py`` shows it.

- **Selection score** of a fit: the mean of three validation accuracies at the training N,
  ``ar_valid``, ``ar_expired_stale`` and ``passkey`` (each first averaged over the validation N
  where it is observed). The all-NULL model (answer NULL to every query) scores about
  ``(0 + 1 + 1/16) / 3 = 0.35``: any model that learned to recall, to forget or to keep the passkey
  scores above it. (The minimum of the three would collapse to the passkey term for a decay that
  cannot keep the passkey, ranking every such run at chance whatever it learned.)
- **Learning rate**: the grid value with the best mean score over the selection seeds; a pick at
  the grid's edge adds the next value beyond that edge (``extra_learning_rates``) and chooses again.
- **Gate** (``spec.Gate``): validation at the shortest training N, ``ar_valid >= 0.5`` or
  ``passkey_exact >= 0.9``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class _Gate(Protocol):
    def passes(self, ar_valid: float, passkey_exact: float) -> bool: ...

SCORE_KINDS = ("ar_valid", "ar_expired_stale", "passkey")


def _mean(values: Sequence[float]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def selection_score(val: Mapping[str, float], val_n: Sequence[int]) -> float:
    """The selection score from final validation accuracies ``{"<kind>/n<N>": accuracy}``.

    Each kind of ``SCORE_KINDS`` is averaged over the N in ``val_n`` where it is observed (not
    NaN, present); the score is the mean of the three (NaN when a kind is observed at no N)."""
    per_kind = [_mean([val.get(f"{k}/n{n}", math.nan) for n in val_n]) for k in SCORE_KINDS]
    return math.nan if any(math.isnan(v) for v in per_kind) else sum(per_kind) / len(per_kind)


def mean_score(scores: Sequence[float]) -> float:
    """The mean over seeds, NaN (a failed or unscored fit) counting as 0: a rate whose runs fail
    is not chosen over one whose runs finish."""
    return sum(0.0 if math.isnan(s) else s for s in scores) / len(scores) if scores else math.nan


def choose_rate(
    grid: Sequence[float],
    below: Sequence[float],
    above: Sequence[float],
    score_of: Callable[[float], float | None],
) -> tuple[float | None, list[float], bool]:
    """Walk the grid as the protocol does: ``(chosen, grid used, complete)``.

    ``score_of(lr)`` is the mean selection score over the selection seeds, or None while some of
    its fits are not done. A best value at an edge (ties go to the smaller rate) extends the grid by
    the next value of ``below`` (descending from the grid) or ``above`` (ascending); the walk stops
    at an interior best or when that side has no more values. ``complete`` is False while a score
    the decision needs is missing (then ``chosen`` is None and ``grid used`` lists what must run).
    """
    used = sorted(grid)
    below = sorted((v for v in below if v < used[0]), reverse=True)
    above = sorted(v for v in above if v > used[-1])
    while True:
        scores = {lr: score_of(lr) for lr in used}
        if any(s is None for s in scores.values()):
            return None, used, False
        best = max(used, key=lambda lr: (scores[lr], -lr))
        if best == used[0] and below:
            used.insert(0, below.pop(0))
        elif best == used[-1] and above:
            used.append(above.pop(0))
        else:
            return best, used, True


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def gate_passed(gate: _Gate, record: Mapping[str, Any] | None) -> bool:
    """Whether a fit record passes ``gate`` now: the thresholds may have changed since the record
    was written, its validation at the gate N has not (a missing record or value passes nothing)."""
    values = (record or {}).get("gate") or {}
    return gate.passes(_num(values.get("ar_valid")), _num(values.get("passkey_exact")))


def retry_due(gate: _Gate, fits: Sequence[Mapping[str, Any] | None]) -> bool:
    """Whether a mechanism has earned its one longer retry: of ``fits`` (every fit it ran: the
    selection fits at each rate the walk used and every seed at the chosen rate, None for a fit
    that failed), not one passes ``gate``, and at least one trained (a retry trains longer: it is
    for fits that did not learn, not for fits that crashed).

    The runner runs the retry when this holds; the report and ``study status`` call a mechanism
    for which it holds and whose retry record is missing unfinished, never "did not learn"."""
    return any(f is not None for f in fits) and not any(gate_passed(gate, f) for f in fits)
