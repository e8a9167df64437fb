"""MQAR generator: Zoology's examples exactly, layout, labels, refusals, seeded fill, gaps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.tasks.mqar import (
    IGNORE_INDEX,
    MQARParams,
    gap_probabilities,
    multiquery_ar,
    query_gaps,
)
from tests.tasks.zoology_reference import multiquery_ar as zoology_multiquery_ar


@st.composite
def _zoology_params(draw):
    """Parameter sets Zoology accepts (num_passes=1: its only working value), kept small."""
    num_kv_pairs = draw(st.integers(1, 8))
    input_seq_len = 2 * draw(st.integers(2 * num_kv_pairs, 2 * num_kv_pairs + 40))
    vocab_size = draw(st.integers(input_seq_len + 1, input_seq_len + 300))
    return {
        "vocab_size": vocab_size,
        "num_examples": draw(st.integers(1, 12)),
        "input_seq_len": input_seq_len,
        "seed": draw(st.integers(0, 2**32 - 1)),
        "power_a": draw(st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0])),
        "num_kv_pairs": num_kv_pairs,
    }


@settings(max_examples=150, deadline=None)
@given(_zoology_params())
def test_identical_to_zoology_without_random_fill(kwargs):
    inputs, labels = multiquery_ar(**kwargs, random_non_queries=False)
    ref_inputs, ref_labels = zoology_multiquery_ar(**kwargs, random_non_queries=False)
    assert inputs.dtype == np.int64 and labels.dtype == np.int64
    np.testing.assert_array_equal(inputs, ref_inputs.numpy())
    np.testing.assert_array_equal(labels, ref_labels.numpy())


def test_figure2_segment_identical_to_zoology():
    # Zoology figure 2, T=64: vocab 8192, 4 pairs, its train seed; the first 300 examples.
    kwargs = {"vocab_size": 8192, "num_examples": 300, "input_seq_len": 64, "seed": 843828734,
                  "num_kv_pairs": 4, "random_non_queries": False}
    inputs, labels = multiquery_ar(**kwargs)
    ref_inputs, ref_labels = zoology_multiquery_ar(**kwargs)
    np.testing.assert_array_equal(inputs, ref_inputs.numpy())
    np.testing.assert_array_equal(labels, ref_labels.numpy())


def test_examples_by_value():
    inputs, labels = multiquery_ar(vocab_size=20, num_examples=2, input_seq_len=16, seed=0,
                                   num_kv_pairs=2, random_non_queries=False)
    # Values printed by Zoology's own function (tests/tasks/zoology_reference.py).
    np.testing.assert_array_equal(inputs, [
        [8, 15, 3, 12, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0, 0],
        [4, 15, 2, 11, 4, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
    ])
    x = IGNORE_INDEX
    np.testing.assert_array_equal(labels, [
        [x, x, x, x, x, x, 15, x, x, x, 12, x, x, x, x, x],
        [x, x, x, x, 15, x, x, x, 11, x, x, x, x, x, x, x],
    ])
    inputs, labels = multiquery_ar(vocab_size=8192, num_examples=1, input_seq_len=64,
                                   seed=843828734, num_kv_pairs=4, random_non_queries=False)
    assert inputs[0, :8].tolist() == [739, 5236, 3514, 5454, 3106, 6073, 983, 6007]
    assert {int(t): int(labels[0, t]) for t in np.flatnonzero(labels[0] != x)} == {
        8: 6073, 10: 5236, 18: 5454, 40: 6007}


@settings(max_examples=60, deadline=None)
@given(_zoology_params(), st.integers(1, 3), st.booleans())
def test_layout_and_labels(kwargs, num_passes, random_non_queries):
    n, T = kwargs["num_kv_pairs"], kwargs["input_seq_len"]
    if 2 * n * num_passes + 2 * n > T:
        num_passes = 1
    inputs, labels = multiquery_ar(**kwargs, num_passes=num_passes,
                                   random_non_queries=random_non_queries)
    V, C = kwargs["vocab_size"], 2 * n * num_passes
    assert inputs.shape == labels.shape == (kwargs["num_examples"], T)
    for x, y in zip(inputs, labels):
        keys, values = x[0:2 * n:2], x[1:2 * n:2]
        assert len(set(keys)) == n and len(set(values)) == n
        assert ((keys >= 1) & (keys < V // 2)).all() and ((values >= V // 2) & (values < V)).all()
        np.testing.assert_array_equal(x[:C], np.tile(x[:2 * n], num_passes))
        q = np.flatnonzero(y != IGNORE_INDEX)
        assert len(q) == n and (q >= C).all() and ((q - C) % 2 == 0).all()
        assert sorted(x[q]) == sorted(keys)  # each key queried once
        answer = dict(zip(keys, values))
        assert [answer[k] for k in x[q]] == list(y[q])
        if not random_non_queries:
            rest = np.ones(T, bool)
            rest[:C] = False
            rest[q] = False
            assert (x[rest] == 0).all()


def test_random_fill_is_seeded_and_uniform():
    kwargs = {"vocab_size": 64, "num_examples": 400, "input_seq_len": 32, "seed": 7, "num_kv_pairs": 2}
    a, la = multiquery_ar(**kwargs)
    b, _lb = multiquery_ar(**kwargs)
    np.testing.assert_array_equal(a, b)
    plain, lp = multiquery_ar(**kwargs, random_non_queries=False)
    np.testing.assert_array_equal(la, lp)  # the fill never changes pairs, queries or labels
    filled = plain == 0
    np.testing.assert_array_equal(a[~filled], plain[~filled])
    counts = np.bincount(a[filled], minlength=64)
    assert counts.min() > 0.7 * counts.mean() and counts.max() < 1.3 * counts.mean()
    c, _ = multiquery_ar(**{**kwargs, "seed": 8})
    assert (c != a).any()


def test_global_numpy_rng_untouched():
    np.random.seed(5)
    expected = np.random.random_sample()
    np.random.seed(5)
    multiquery_ar(vocab_size=40, num_examples=3, input_seq_len=16, seed=1, num_kv_pairs=2)
    assert np.random.random_sample() == expected


def test_num_passes_repeats_pairs_where_zoology_fails():
    kwargs = {"vocab_size": 100, "num_examples": 3, "input_seq_len": 32, "seed": 0, "num_kv_pairs": 2,
                  "random_non_queries": False}
    with pytest.raises(ValueError, match="broadcast"):
        zoology_multiquery_ar(**kwargs, num_passes=2)
    inputs, labels = multiquery_ar(**kwargs, num_passes=2)
    assert inputs.shape == (3, 32)
    np.testing.assert_array_equal(inputs[:, :4], inputs[:, 4:8])
    gaps = query_gaps(inputs, labels, 2, num_passes=2)
    q = labels != IGNORE_INDEX
    key_pos = np.where(q, np.arange(32) - gaps, -1)
    assert set(key_pos[q].tolist()) <= {4, 6}  # the last writing, in the second pass


@pytest.mark.parametrize("change, match", [
    ({"input_seq_len": 63}, "input_seq_len=63: expected an even length"),
    ({"vocab_size": 64}, "vocab_size=64: expected more than input_seq_len=64"),
    ({"num_kv_pairs": 17}, "input_seq_len=64: expected at least 68 tokens"),
    ({"num_kv_pairs": 8, "num_passes": 4}, "expected at least 80 tokens"),
    ({"num_kv_pairs": 0}, "num_kv_pairs=0: expected a positive integer"),
    ({"num_examples": 2.0}, "num_examples=2.0: expected a positive integer"),
    ({"num_passes": True}, "num_passes=True: expected a positive integer"),
    ({"seed": -1}, r"seed=-1: expected an integer in \[0, 2\*\*32\)"),
    ({"seed": 2**32}, r"seed=4294967296: expected an integer"),
    ({"power_a": 0.0}, "power_a=0.0: expected a positive finite number"),
    ({"power_a": float("nan")}, "power_a=nan"),
    ({"random_non_queries": "no"}, "random_non_queries='no': expected true or false"),
])
def test_refusals_are_one_line(change, match):
    kwargs = {"vocab_size": 8192, "num_examples": 2, "input_seq_len": 64, "seed": 0, "num_kv_pairs": 4}
    with pytest.raises(ValueError, match=match) as info:
        multiquery_ar(**{**kwargs, **change})
    assert "\n" not in str(info.value)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 20), st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_params_accept_exactly_what_zoology_asserts(n, half_len, seed):
    T = 2 * half_len
    try:
        MQARParams(vocab_size=T + 1, num_examples=1, input_seq_len=T, seed=seed, num_kv_pairs=n)
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == (4 * n <= T)


def test_gap_probabilities_are_zoologys_power_law():
    p = gap_probabilities(64, 4, power_a=0.01)
    assert p.shape == (28,) and p.dtype == np.float64
    assert p.sum() == pytest.approx(1.0)
    g = np.arange(1, 29)
    np.testing.assert_allclose(p, g ** -0.99 / (g ** -0.99).sum(), rtol=1e-12)
    assert (np.diff(p) < 0).all()
    np.testing.assert_allclose(gap_probabilities(20, 2, power_a=1.0), np.full(8, 1 / 8))
    assert gap_probabilities(64, 4, num_passes=2).shape == (24,)
    with pytest.raises(ValueError, match="input_seq_len=15"):
        gap_probabilities(15, 2)


def test_first_query_follows_the_power_law():
    _inputs, labels = multiquery_ar(vocab_size=8192, num_examples=3000, input_seq_len=64,
                                   seed=3, num_kv_pairs=1, random_non_queries=False)
    slot = (np.argmax(labels != IGNORE_INDEX, axis=1) - 2) // 2
    freq = np.bincount(slot, minlength=31) / 3000
    p = gap_probabilities(64, 1)
    assert np.abs(freq - p).max() < 0.03


def test_query_gaps_by_value_and_refusals():
    inputs, labels = multiquery_ar(vocab_size=20, num_examples=2, input_seq_len=16, seed=0,
                                   num_kv_pairs=2, random_non_queries=False)
    gaps = query_gaps(inputs, labels, 2)
    # example 0: key 8 (position 0) queried at 6, key 3 (position 2) queried at 10
    assert gaps[0].tolist() == [0] * 6 + [6, 0, 0, 0, 8, 0, 0, 0, 0, 0]
    assert gaps[1].tolist() == [0] * 4 + [4, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]
    bad = inputs.copy()
    bad[0, 6] = 5
    with pytest.raises(ValueError, match="example 0 position 6 queries token 5"):
        query_gaps(bad, labels, 2)
    with pytest.raises(ValueError, match="expected equal"):
        query_gaps(inputs[:, :8], labels, 2)
