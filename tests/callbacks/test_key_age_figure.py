"""The key-age figure: the gray zone (w, 2w] is shaded, no line runs through it, and the axis says
what a correct answer is on each side."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.patches import Polygon, Rectangle

from swar_bench.callbacks.answer_type_accuracy import (
    AGE_BIN_UPPER,
    KINDS,
    AccuracyReport,
    age_bin_bounds,
    key_age_sides,
    plot_accuracy_vs_key_age,
)

N_BINS = len(AGE_BIN_UPPER) + 1


def report(age_count, n_writes=(32, 256)):
    age_count = np.asarray(age_count, dtype=np.int64)
    ones = np.ones((len(n_writes), len(KINDS)), dtype=np.int64)
    return AccuracyReport(n_writes=n_writes, correct=ones, count=2 * ones, age_correct=age_count // 2, age_count=age_count)


def test_sides_of_the_gray_zone():
    valid, expired = key_age_sides(report(np.ones((2, N_BINS))), window=16)
    lo, hi = age_bin_bounds()
    assert list(hi[valid]) == list(range(1, 17))  # one bin per age 1..16
    assert lo[expired].min() == 33 and not (valid & expired).any()
    assert not valid[16] and not expired[16]  # the bin 17-32 is the gray zone itself


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=N_BINS, max_size=N_BINS), min_size=1, max_size=4))
def test_no_line_runs_through_the_gray_zone(counts):
    r = report(counts, n_writes=tuple(32 * 2**i for i in range(len(counts))))
    fig = plot_accuracy_vs_key_age(r, window=16)
    ax = fig.axes[0]
    lines = ax.get_lines()
    for line in lines:
        x = np.asarray(line.get_xdata(), dtype=float)
        assert (x <= 16).all() or (x > 32).all(), x
    # every observed bin outside the gray zone is drawn, once, in its N's colour
    valid, expired = key_age_sides(r)
    drawn = sum(len(line.get_xdata()) for line in lines)
    assert drawn == int(((r.age_count > 0) & (valid | expired)).sum())
    labels = [line.get_label() for line in lines if not line.get_label().startswith("_")]
    assert labels == [f"n{n}" for n, row in zip(r.n_writes, r.age_count) if ((row > 0) & (valid | expired)).any()]


def test_the_zone_is_shaded_and_each_side_says_what_is_correct():
    counts = np.zeros((1, N_BINS), dtype=np.int64)
    counts[0, :16] = 4
    counts[0, 17:20] = 4
    ax = plot_accuracy_vs_key_age(report(counts, n_writes=(64,))).axes[0]
    spans = [p for p in ax.patches if isinstance(p, (Polygon, Rectangle)) and "gray zone" in p.get_label()]
    assert len(spans) == 1
    xs = spans[0].get_xy()[:, 0] if isinstance(spans[0], Polygon) else [spans[0].get_x(), spans[0].get_x() + spans[0].get_width()]
    assert (min(xs), max(xs)) == (16.5, 32.5)
    texts = [t.get_text().strip() for t in ax.texts]
    assert "age <= 16: correct = the key's latest value" in texts
    assert "age > 32: correct = NULL" in texts
    (left, right) = ax.get_lines()
    assert left.get_color() == right.get_color()
