"""Confidence intervals for the benchmark's numbers: accuracies (Wilson) and means across seeds (t).

Torch-free, so the study report and the referee's table code use it without loading torch.
Every interval comes from scipy; nothing here is computed by hand.

- An accuracy of ``correct`` out of ``count`` items gets the 95% Wilson score interval (Wilson 1927;
  Brown, Cai & DasGupta 2001 recommend it over the normal "Wald" interval, which collapses to a
  point at 0 and 1): ``scipy.stats.binomtest(correct, count).proportion_ci(0.95, "wilson")``.
  The items are counted in the unit the accuracy is scored in: answer tokens, or sequences for
  ``passkey_exact``.
- A cell with fewer than ``FEW_ITEMS`` (30) items is marked with ``FEW_MARK`` in every table: its
  interval is wide and the accuracy should not be read alone.
- A mean across seeds gets the Student-t 95% interval ``mean +- t_{0.975, s-1} * sd / sqrt(s)``
  (``scipy.stats.t.interval``) beside the min-max spread, clipped to the quantity's range when
  it has one (``[0, 1]`` for an accuracy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
"""Confidence level of every interval the benchmark reports."""

FEW_ITEMS = 30
"""A cell counted over fewer items than this is marked ``FEW_MARK``."""

FEW_MARK = "*"
"""Suffix of a table cell counted over fewer than ``FEW_ITEMS`` items."""

MISSING = "none"
"""Table and CSV cell for a quantity with no observations (e.g. stale queries at n32,
docs/TASK.md "Answer rule"), or one that is undefined (a correlation over one N)."""


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 0:
        raise ValueError(f"{name}={value!r}: expected an integer >= 0")
    return int(value)


@dataclass(frozen=True)
class Proportion:
    """``correct`` out of ``count`` items with its 95% Wilson interval ``[low, high]``.

    ``accuracy``, ``low`` and ``high`` are NaN when ``count == 0``.
    """

    correct: int
    count: int
    accuracy: float
    low: float
    high: float

    @property
    def few(self) -> bool:
        """True when fewer than ``FEW_ITEMS`` items (but at least one) were counted."""
        return 0 < self.count < FEW_ITEMS

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """JSON-ready: ``correct``, ``count``, ``accuracy``, ``ci_low``, ``ci_high`` (None when
        ``count == 0``) and ``few`` (fewer than ``FEW_ITEMS`` items)."""

        def num(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {
            "correct": self.correct,
            "count": self.count,
            "accuracy": num(self.accuracy),
            "ci_low": num(self.low),
            "ci_high": num(self.high),
            "few": self.few,
        }


def wilson(correct: int, count: int, confidence: float = CONFIDENCE) -> Proportion:
    """``correct`` / ``count`` and its Wilson score interval (scipy's ``binomtest(...).proportion_ci``).

    Args:
        correct: items scored correct (int >= 0).
        count: items scored (int >= ``correct``); 0 gives NaN accuracy and bounds.
        confidence: confidence level in (0, 1), default 0.95.

    Raises:
        ValueError: a negative or non-integer count, or ``correct > count`` (one line naming both).
    """
    k, n = _count("correct", correct), _count("count", count)
    if k > n:
        raise ValueError(f"correct={k} > count={n}: expected at most count correct items")
    if n == 0:
        return Proportion(0, 0, math.nan, math.nan, math.nan)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(k, n, k / n, float(ci.low), float(ci.high))


def clopper_pearson(successes: int, trials: int, confidence: float = CONFIDENCE) -> Proportion:
    """``successes`` / ``trials`` with its exact (Clopper-Pearson) binomial interval (scipy's
    ``binomtest(...).proportion_ci(method="exact")``): the interval for outcomes that are
    all-or-nothing per seed ("3 of 5 seeds learned"), where a t interval over 0/1 values means
    nothing.

    Raises:
        ValueError: a negative or non-integer count, or ``successes > trials`` (one line).
    """
    k, n = _count("successes", successes), _count("trials", trials)
    if k > n:
        raise ValueError(f"successes={k} > trials={n}: expected at most trials successes")
    if n == 0:
        return Proportion(0, 0, math.nan, math.nan, math.nan)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return Proportion(k, n, k / n, float(ci.low), float(ci.high))


def wilson_arrays(
    correct: np.ndarray, count: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise Wilson bounds ``(low, high)`` of integer arrays of one shape (NaN where count is 0)."""
    correct = np.asarray(correct)
    count = np.asarray(count)
    if correct.shape != count.shape:
        raise ValueError(
            f"correct has shape {correct.shape} and count {count.shape}: expected one shape"
        )
    low = np.full(count.shape, np.nan)
    high = np.full(count.shape, np.nan)
    for idx in np.ndindex(count.shape):
        p = wilson(int(correct[idx]), int(count[idx]), confidence)
        low[idx], high[idx] = p.low, p.high
    return low, high


def format_proportion(p: Proportion, digits: int = 3) -> str:
    """Table cell ``"0.953 [0.931, 0.968] (512)"``; ``"0.900 [0.74, 0.97] (20)*"`` when fewer than
    ``FEW_ITEMS`` items; ``"none (0)"`` when nothing was counted."""
    if p.count == 0:
        return f"{MISSING} (0)"
    cell = f"{p.accuracy:.{digits}f} [{p.low:.{digits}f}, {p.high:.{digits}f}] ({p.count})"
    return cell + (FEW_MARK if p.few else "")


def format_accuracy(correct: int, count: int, digits: int = 3) -> str:
    """``format_proportion(wilson(correct, count))``."""
    return format_proportion(wilson(correct, count), digits)


FEW_NOTE = (
    f"Cells read `accuracy [95% Wilson interval] (items)`; {FEW_MARK} marks a cell counted over "
    f"fewer than {FEW_ITEMS} items."
)
"""The legend printed under every table of intervals."""


@dataclass(frozen=True)
class SeedSpread:
    """A quantity measured once per seed: mean, min, max and the 95% t interval of the mean.

    ``low`` / ``high`` are NaN with fewer than 2 finite values (no spread to estimate) and equal
    the mean when every seed gave the same value.
    """

    values: tuple[float, ...]
    mean: float
    minimum: float
    maximum: float
    low: float
    high: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: values, mean, min, max, ci_low, ci_high (None for NaN)."""

        def num(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {
            "values": [num(v) for v in self.values],
            "mean": num(self.mean),
            "min": num(self.minimum),
            "max": num(self.maximum),
            "ci_low": num(self.low),
            "ci_high": num(self.high),
        }


def seed_spread(
    values: Sequence[float], confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None
) -> SeedSpread:
    """Mean across seeds with its min-max and Student-t interval (``scipy.stats.t.interval`` with
    ``s - 1`` degrees of freedom and scale ``sem``); NaN values (a missing run) are left out.

    ``bounds``: the range the quantity cannot leave (``(0.0, 1.0)`` for an accuracy); the t
    interval, symmetric by construction, is clipped to it (a mean of 0.95 over three seeds must not
    read "CI 0.80-1.10").

    Raises:
        ValueError: ``values`` is not a 1-D sequence of numbers, or ``bounds`` is not
            ``(low, high)`` with ``low <= high``.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"values={values!r}: expected one number per seed")
    if bounds is not None and not (len(bounds) == 2 and bounds[0] <= bounds[1]):
        raise ValueError(f"bounds={bounds!r}: expected (low, high) with low <= high")
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        nan = math.nan
        return SeedSpread(tuple(arr.tolist()), nan, nan, nan, nan, nan)
    mean = float(finite.mean())
    low = high = math.nan
    if finite.size >= 2:
        sem = float(stats.sem(finite))
        if sem == 0.0:
            low = high = mean
        else:
            low, high = (
                float(v) for v in stats.t.interval(confidence, finite.size - 1, loc=mean, scale=sem)
            )
            if bounds is not None:
                low, high = max(low, bounds[0]), min(high, bounds[1])
    return SeedSpread(
        tuple(arr.tolist()), mean, float(finite.min()), float(finite.max()), low, high
    )


def format_spread(s: SeedSpread, digits: int = 3) -> str:
    """Table cell ``"0.912 (0.887–0.930; 95% CI 0.85–0.97)"``; ``"none"`` without values."""
    if not math.isfinite(s.mean):
        return MISSING
    n = sum(math.isfinite(v) for v in s.values)
    text = f"{s.mean:.{digits}f} ({s.minimum:.{digits}f}–{s.maximum:.{digits}f}"
    if math.isfinite(s.low):
        text += f"; CI {s.low:.{digits}f}–{s.high:.{digits}f}"
    return text + f"; {n} seeds)"
