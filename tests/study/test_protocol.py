"""The fair-study protocol's decisions: the selection score, the gate, the learning-rate walk."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.study.protocol import choose_rate, mean_score, selection_score
from swar_bench.study.spec import Gate


def test_all_null_model_scores_about_0_35_and_a_learner_more():
    """All-NULL: ar_valid 0, every stale key answered NULL (1), passkey at chance (1/16)."""
    null = {
        "ar_valid/n32": 0.0,
        "ar_valid/n64": 0.0,
        "ar_expired_stale/n64": 1.0,
        "passkey/n32": 1 / 16,
        "passkey/n64": 1 / 16,
    }
    assert selection_score(null, [32, 64]) == pytest.approx((0 + 1 + 1 / 16) / 3)
    # a short decay: recalls live keys, forgets, never keeps the passkey
    forgetter = {**null, "ar_valid/n32": 0.8, "ar_valid/n64": 0.7}
    assert selection_score(forgetter, [32, 64]) == pytest.approx((0.75 + 1 + 1 / 16) / 3)
    assert selection_score(forgetter, [32, 64]) > selection_score(null, [32, 64]) + 0.2


def test_a_kind_observed_at_no_n_gives_nan():
    assert math.isnan(selection_score({"ar_valid/n32": 1.0, "passkey/n32": 1.0}, [32]))


def test_mean_score_counts_a_failed_fit_as_zero():
    assert mean_score([0.8, math.nan]) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("ar_valid", "passkey_exact", "passed"),
    [
        (0.5, 0.0, True),
        (0.49, 0.9, True),
        (0.49, 0.89, False),
        (math.nan, 0.95, True),
        (math.nan, math.nan, False),
    ],
)
def test_gate_passes_on_either_condition(ar_valid, passkey_exact, passed):
    assert Gate().passes(ar_valid, passkey_exact) is passed


def test_pick_at_the_edge_extends_the_grid_then_stops():
    scores = {1e-4: 0.5, 3e-4: 0.6, 1e-3: 0.7, 3e-3: 0.8, 1e-2: 0.9, 3e-2: 0.4}
    chosen, used, complete = choose_rate([3e-4, 1e-3, 3e-3, 1e-2], [1e-4], [3e-2], scores.get)
    assert (chosen, used, complete) == (1e-2, [3e-4, 1e-3, 3e-3, 1e-2, 3e-2], True)
    # a missing score stops the walk and says what must run
    partial = {k: v for k, v in scores.items() if k != 3e-2}
    assert choose_rate([3e-4, 1e-3, 3e-3, 1e-2], [1e-4], [3e-2], partial.get) == (
        None,
        [3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
        False,
    )


rates = st.lists(
    st.sampled_from([1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]),
    min_size=2,
    max_size=9,
    unique=True,
)


@settings(max_examples=200, deadline=None)
@given(rates=rates, n_grid=st.integers(2, 9), data=st.data())
def test_choice_is_the_best_of_what_ran_and_interior_unless_the_extensions_ran_out(
    rates, n_grid, data
):
    rates = sorted(rates)
    lo = data.draw(st.integers(0, max(0, len(rates) - 2)))
    grid = rates[lo : lo + max(2, min(n_grid, len(rates) - lo))]
    below, above = rates[:lo], rates[lo + len(grid) :]
    scores = {r: data.draw(st.floats(0, 1)) for r in rates}
    chosen, used, complete = choose_rate(grid, below, above, scores.get)
    assert complete
    assert set(grid) <= set(used) <= set(rates)
    assert used == sorted(used) and used == [
        r for r in rates if used[0] <= r <= used[-1]
    ]  # contiguous
    assert scores[chosen] == max(scores[r] for r in used)
    if chosen == used[0]:
        assert used[0] == rates[0]  # no value was left below
    if chosen == used[-1] and scores[used[-1]] > max(scores[r] for r in used[:-1]):
        assert used[-1] == rates[-1]  # no value was left above
