"""swar_bench.utils.intervals: Wilson intervals and seed spreads against published and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.intervals import (
    FEW_ITEMS,
    format_accuracy,
    format_spread,
    seed_spread,
    wilson,
    wilson_arrays,
)

Z = 1.959963984540054  # the 0.975 quantile of the standard normal


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) score interval, the textbook closed form (Newcombe 1998, method 3)."""
    p = k / n
    centre = p + Z * Z / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - half) / (1 + Z * Z / n), (centre + half) / (1 + Z * Z / n)


@pytest.mark.parametrize(
    "k, n, low, high",
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table II, method 3
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_matches_newcombe_1998(k, n, low, high):
    p = wilson(k, n)
    assert (p.low, p.high) == pytest.approx((low, high), abs=5e-5)
    assert p.accuracy == k / n


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_the_closed_form_and_contains_the_estimate(kn):
    k, n = kn
    p = wilson(k, n)
    assert (p.low, p.high) == pytest.approx(wilson_by_hand(k, n), abs=1e-9)
    assert 0.0 <= p.low <= k / n <= p.high <= 1.0
    assert p.few == (n < FEW_ITEMS)


def test_empty_cell_and_bad_counts():
    p = wilson(0, 0)
    assert p.count == 0 and math.isnan(p.low) and not p.few
    assert format_accuracy(0, 0) == "none (0)"
    assert p.as_dict()["ci_low"] is None
    with pytest.raises(ValueError, match="correct=3 > count=2"):
        wilson(3, 2)
    with pytest.raises(ValueError, match="count=-1: expected an integer >= 0"):
        wilson(0, -1)


def test_format_marks_cells_under_30_items():
    assert format_accuracy(29, 29) == "1.000 [0.883, 1.000] (29)*"
    assert format_accuracy(30, 30) == "1.000 [0.886, 1.000] (30)"


def test_wilson_arrays_elementwise():
    low, high = wilson_arrays(np.array([[81, 0]]), np.array([[263, 0]]))
    assert low[0, 0] == pytest.approx(0.2553, abs=5e-5) and math.isnan(high[0, 1])


def test_seed_spread_t_interval_by_hand():
    # mean 0.8, sd 0.1, n 3: t_{0.975, 2} = 4.302653, half-width 4.302653 * 0.1 / sqrt(3) = 0.248414
    s = seed_spread([0.7, 0.8, 0.9])
    assert s.mean == pytest.approx(0.8)
    assert (s.minimum, s.maximum) == (0.7, 0.9)
    assert (s.low, s.high) == pytest.approx((0.8 - 0.248414, 0.8 + 0.248414), abs=1e-6)
    assert format_spread(s) == "0.800 (0.700–0.900; CI 0.552–1.048; 3 seeds)"


def test_seed_spread_degenerate_inputs():
    one = seed_spread([0.5])
    assert one.mean == 0.5 and math.isnan(one.low)
    same = seed_spread([0.5, 0.5])
    assert same.low == same.high == 0.5
    missing = seed_spread([float("nan"), 0.4, 0.6])
    assert missing.mean == pytest.approx(0.5) and missing.as_dict()["values"][0] is None
    assert format_spread(seed_spread([float("nan")])) == "none"


def test_seed_spread_clips_the_t_interval_to_the_quantitys_range():
    # reported: HGRN2's forgetting score read "0.001 [-0.005, 0.007]", an accuracy below 0
    s = seed_spread([0.0, 0.0, 0.003], bounds=(0.0, 1.0))
    assert s.low == 0.0 and s.high == pytest.approx(0.001 + 4.302653 * 0.0017320508 / math.sqrt(3), abs=1e-6)
    assert format_spread(seed_spread([0.7, 0.8, 0.9], bounds=(0.0, 1.0))) == "0.800 (0.700–0.900; CI 0.552–1.000; 3 seeds)"
    with pytest.raises(ValueError, match=r"bounds=\(1\.0, 0\.0\): expected \(low, high\) with low <= high"):
        seed_spread([0.5, 0.6], bounds=(1.0, 0.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.just(float("nan"))), min_size=1, max_size=6))
def test_a_clipped_seed_interval_stays_in_range_and_holds_the_mean(values):
    s = seed_spread(values, bounds=(0.0, 1.0))
    unclipped = seed_spread(values)
    if math.isfinite(s.low):
        assert 0.0 <= s.low <= s.mean + 1e-12 and s.mean - 1e-12 <= s.high <= 1.0
        assert (s.low, s.high) == (max(unclipped.low, 0.0), min(unclipped.high, 1.0))
