"""Probe suites: the card's structure on small vocabularies, the Markov stream, disjoint seeds."""

import math

import numpy as np
import pytest

from swar_bench.referee.suites import (
    IGNORE,
    copy_suite,
    instance_rng,
    make_batch,
    mark,
    markov_optimal_loss,
    markov_oracle_loss,
    markov_suite,
    multi_hop_suite,
    needle_suite,
    random_permutation,
)


@pytest.mark.parametrize("vocab", [3, 4, 5, 17])
@pytest.mark.parametrize("distance", [2, 3, 9, 40])
def test_needle_structure(vocab, distance):
    for s in range(20):
        x, y = needle_suite(np.random.default_rng(s), distance=distance, vocab=vocab)
        assert x.dtype == np.int64 and x.shape == y.shape == (distance + 1,)
        key, value = x[0], x[1]
        assert x[distance] == key and y[distance] == value
        assert (x < vocab - 1).all()
        assert key not in x[2:distance]  # the recurrence is the one cue
        assert (y[:distance] == IGNORE).all()


@pytest.mark.parametrize("vocab", [3, 5, 17])
@pytest.mark.parametrize("distance", [1, 2, 7, 33])
def test_copy_structure(vocab, distance):
    for s in range(20):
        x, y = copy_suite(np.random.default_rng(s), distance=distance, vocab=vocab)
        assert x.shape == (distance + 1,)
        assert y[distance] == x[0] and x[distance] == mark(vocab)
        assert (x[:distance] < vocab - 1).all()
        assert (y[:distance] == IGNORE).all()


@pytest.mark.parametrize("vocab", [3, 5, 17])
@pytest.mark.parametrize("hops,distance", [(1, 2), (3, 6), (3, 7), (2, 30)])
def test_multi_hop_structure(vocab, hops, distance):
    for s in range(20):
        x, y = multi_hop_suite(np.random.default_rng(s), distance=distance, vocab=vocab, hops=hops)
        marks = np.flatnonzero(x == mark(vocab))
        assert len(marks) == hops + 1 and marks[-1] == distance
        anchors = x[marks[:-1] + 1]
        assert (marks[:-1] + 1 < distance).all() and (np.diff(marks) >= 2).all()
        assert (anchors < vocab - 1).all()
        assert y[distance] == anchors.sum() % (vocab - 1)
        assert (y[:distance] == IGNORE).all()


def test_multi_hop_answer_needs_every_anchor():
    # Over many instances, the answer is not a function of the last anchor alone.
    answers = {}
    for s in range(300):
        x, y = multi_hop_suite(np.random.default_rng(s), distance=12, vocab=5, hops=3)
        last = x[np.flatnonzero(x == mark(5))[-2] + 1]
        answers.setdefault(int(last), set()).add(int(y[12]))
    assert all(len(v) > 1 for v in answers.values())


def test_suites_refuse_bad_sizes():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="distance=1"):
        needle_suite(rng, distance=1, vocab=5)
    with pytest.raises(ValueError, match="vocab=2"):
        copy_suite(rng, distance=4, vocab=2)
    with pytest.raises(ValueError, match="distance=5"):
        multi_hop_suite(rng, distance=5, vocab=5, hops=3)
    with pytest.raises(ValueError, match="hops=0"):
        multi_hop_suite(rng, distance=5, vocab=5, hops=0)
    with pytest.raises(ValueError, match="perm"):
        markov_suite(rng, length=4, vocab=5, perm=np.array([0, 1, 2, 3, 3]))


@pytest.mark.parametrize("resample_prob", [0.0, 0.1, 0.5])
def test_markov_matches_slow_reference(resample_prob):
    vocab, length = 6, 500
    perm = random_permutation(np.random.default_rng(1), vocab)
    x, y = markov_suite(
        np.random.default_rng(2), length=length, vocab=vocab, perm=perm, resample_prob=resample_prob
    )
    rng = np.random.default_rng(2)  # the same draws, consumed in the same order
    fresh = rng.integers(0, vocab, size=length + 1, dtype=np.int64)
    reset = rng.random(length + 1) < resample_prob
    ref = [int(fresh[0])]
    for t in range(1, length + 1):
        ref.append(int(fresh[t]) if reset[t] else int(perm[ref[-1]]))
    np.testing.assert_array_equal(x, ref[:-1])
    np.testing.assert_array_equal(y, ref[1:])
    if resample_prob == 0.0:
        np.testing.assert_array_equal(y, perm[x])


def test_markov_optimal_loss():
    vocab, eps = 5, 0.2
    p_hit = 1 - eps + eps / vocab
    expected = -(p_hit * math.log(p_hit) + (vocab - 1) * (eps / vocab) * math.log(eps / vocab))
    assert markov_optimal_loss(vocab, eps) == pytest.approx(expected)
    assert markov_optimal_loss(vocab, 0.0) == 0.0
    assert markov_optimal_loss(vocab, 1.0) == pytest.approx(math.log(vocab))
    # the empirical rate at which the rule holds matches 1 - eps + eps / vocab
    perm = random_permutation(np.random.default_rng(0), vocab)
    x, y = markov_suite(
        np.random.default_rng(3), length=200_000, vocab=vocab, perm=perm, resample_prob=eps
    )
    assert np.mean(y == perm[x]) == pytest.approx(p_hit, abs=0.005)


def test_train_and_eval_instances_are_disjoint_and_deterministic():
    kw = {"seed": 0, "distance": 40, "vocab": 17, "first_index": 0, "batch_size": 32}
    for suite in ("needle", "copy", "multi_hop"):
        xt, _ = make_batch(suite, split="train", **kw)
        xe, _ = make_batch(suite, split="eval", **kw)
        assert not {r.tobytes() for r in xt} & {r.tobytes() for r in xe}
        np.testing.assert_array_equal(xt, make_batch(suite, split="train", **kw)[0])
    # row b of a batch is instance first_index + b, whatever the batch it is drawn in
    a, _ = make_batch(
        "needle", seed=0, split="eval", distance=10, vocab=17, first_index=0, batch_size=4
    )
    b, _ = make_batch(
        "needle", seed=0, split="eval", distance=10, vocab=17, first_index=2, batch_size=2
    )
    np.testing.assert_array_equal(a[2:], b)
    with pytest.raises(ValueError, match="split"):
        instance_rng(0, "test", "needle", 10, 0)


def test_markov_oracle_loss_is_the_true_models_loss():
    vocab, eps = 5, 0.3
    perm = random_permutation(np.random.default_rng(0), vocab)
    x, y = markov_suite(
        np.random.default_rng(1), length=64, vocab=vocab, perm=perm, resample_prob=eps
    )
    probs = np.full((vocab, vocab), eps / vocab)
    probs[np.arange(vocab), perm] += 1 - eps
    expected = -np.log(probs[x, y]).sum()
    assert markov_oracle_loss(x, y, vocab=vocab, perm=perm, resample_prob=eps) == pytest.approx(
        expected
    )
