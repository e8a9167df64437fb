"""Self-knowledge AUROC and the correlation's permutation baseline, on synthetic controls."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.callbacks.calibration import CalibrationCounts, CalibrationReport
from swar_bench.callbacks.self_knowledge import (
    TokenConfidences,
    auroc_per_n,
    permutation_baseline,
)
from swar_bench.tasks.oracle import ANSWER_KINDS

VALID = ANSWER_KINDS.index("ar_valid")
STALE = ANSWER_KINDS.index("ar_expired_stale")
NS = (32, 64, 128, 256, 512)


def _measure(batches):
    """Feed ``(n_writes, correct, confidence, loss, kind)`` batches through the callback's metrics;
    return the report, its per-N AUROC and the permutation baseline."""
    counts, tokens = CalibrationCounts(NS), TokenConfidences()
    for n, correct, conf, loss, kind in batches:
        target = torch.zeros(len(correct), dtype=torch.int64)
        pred = torch.where(torch.as_tensor(correct), target, target + 1)
        args = (pred, target, torch.as_tensor(loss), torch.as_tensor(conf))
        counts.update(*args, n_writes=n)
        tokens.update(*args, torch.as_tensor(kind, dtype=torch.int64), n_writes=n)
    report = CalibrationReport.from_counts(NS, counts.compute())
    values = tokens.compute()
    auroc = auroc_per_n(report.n_writes, values)
    baseline = permutation_baseline(report.n_writes, values, report.correlation.value, 200, 0)
    return report, auroc, baseline


def test_calibrated_model_scores_high():
    # confidence c and correct with probability c; at n32 c ~ U(0, 1), so by hand
    # AUROC = P(c_right > c_wrong) = 4 * int_0^1 x (x - x^2 / 2) dx = 5/6; at larger N the
    # confidences (and so the accuracy) fall
    rng = np.random.default_rng(0)
    batches = []
    for i, n in enumerate(NS):
        conf = rng.uniform(0, 1, 4000) ** (1 + i)  # lower confidence (and accuracy) at larger N
        correct = rng.uniform(0, 1, conf.size) < conf
        # a wrong answer's target shares the remaining 1 - c with the other 38 of 40 tokens
        loss = np.where(correct, -np.log(conf), -np.log((1 - conf) / 39 + 1e-9))
        batches.append((n, correct, conf, loss, np.full(conf.size, VALID)))
    report, auroc, baseline = _measure(batches)
    assert auroc[0] == pytest.approx(5 / 6, abs=0.03) and (auroc > 0.8).all()
    assert report.correlation.value > 0.9
    assert report.correlation.value > baseline.high and baseline.p_value < 0.01


def test_confidence_independent_of_correctness_is_at_chance_and_at_its_baseline():
    rng = np.random.default_rng(1)
    batches = []
    for i, n in enumerate(NS):
        correct = rng.uniform(0, 1, 4000) < 0.9 - 0.2 * i  # accuracy falls with N
        conf = rng.uniform(0.3, 1.0, correct.size)  # ... but confidence knows nothing of it
        batches.append((n, correct, conf, -np.log(conf), np.full(conf.size, VALID)))
    report, auroc, baseline = _measure(batches)
    np.testing.assert_allclose(auroc, 0.5, atol=0.03)
    assert baseline.low <= report.correlation.value <= baseline.high
    assert baseline.p_value > 0.05


def test_answer_mix_alone_gives_a_high_correlation_that_its_baseline_explains():
    # The failure the card's correlation cannot see: a model at chance within each answer type
    # (its loss says nothing about whether a given token is right), where only the mix of types
    # changes with N. Expired queries (answer NULL): right 90%, loss ~0.2; valid queries: right
    # 5%, loss ~3.0. The card's correlation is ~1, and so is its baseline.
    rng = np.random.default_rng(2)
    batches = []
    for i, n in enumerate(NS):
        valid = rng.uniform(0, 1, 4000) < 0.1 + 0.2 * i
        correct = rng.uniform(0, 1, valid.size) < np.where(valid, 0.05, 0.9)
        loss = np.clip(np.where(valid, 3.0, 0.2) + rng.normal(0, 0.1, valid.size), 0.01, None)
        conf = np.exp(-loss)
        batches.append((n, correct, conf, loss, np.where(valid, VALID, STALE)))
    report, _, baseline = _measure(batches)
    assert report.correlation.value > 0.99
    assert baseline.mean > 0.99 and baseline.p_value > 0.05


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_baseline_and_auroc_do_not_depend_on_token_order(seed):
    rng = np.random.default_rng(seed)
    size = 60
    tokens = {
        "n_writes": rng.choice(NS[:3], size),
        "answer_kind": rng.choice([VALID, STALE], size),
        "correct": rng.uniform(0, 1, size) < 0.5,
        "loss": rng.exponential(1.0, size),
        "confidence": rng.uniform(0, 1, size),
    }

    def measured(order):
        metric = TokenConfidences()
        for i in order:
            metric.update(
                torch.tensor([0 if tokens["correct"][i] else 1]),
                torch.tensor([0]),
                torch.tensor([tokens["loss"][i]]),
                torch.tensor([tokens["confidence"][i]]),
                torch.tensor([tokens["answer_kind"][i]]),
                n_writes=int(tokens["n_writes"][i]),
            )
        values = metric.compute()
        present = tuple(n for n in NS[:3] if (values["n_writes"] == n).any())
        return auroc_per_n(present, values), permutation_baseline(present, values, 0.5, 20, 3)

    a1, b1 = measured(range(size))
    a2, b2 = measured(rng.permutation(size))
    np.testing.assert_array_equal(a1, a2)
    assert b1 == b2 or (math.isnan(b1.mean) and math.isnan(b2.mean))
    finite = a1[np.isfinite(a1)]
    assert ((finite >= 0) & (finite <= 1)).all()


def test_bad_permutation_count_is_refused():
    tokens = TokenConfidences().compute()
    with pytest.raises(ValueError, match="n_permutations=0: expected an integer >= 1"):
        permutation_baseline((32,), tokens, 0.5, 0)
