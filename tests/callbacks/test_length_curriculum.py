"""LengthCurriculum: reward rule, FLOP ledger masking, exact resume, and a real Trainer run."""

from __future__ import annotations

import copy
import io
import math

import lightning.pytorch as pl
import numpy as np
import pytest
import torch

from swar_bench.callbacks import LengthCurriculum
from swar_bench.callbacks.length_curriculum import expected_tokens_per_example
from swar_bench.tasks.passkey_swar import TRAIN_N

from .fakes import CurriculumDataModule, TrainLossModule


def test_expected_tokens_match_the_card_table():
    # Card, "Statistics": mean length 132 at n32, 252 at n64, 492 at n128, 972 at n256.
    assert [expected_tokens_per_example(n) for n in TRAIN_N] == [132.0, 252.0, 492.0, 972.0]


def test_reward_is_loss_improvement_per_relative_flop():
    cb = LengthCurriculum((32, 64), seed=0)
    cb.n_params = 10
    ln40 = math.log(40)
    cb.observe(32, 3.0, tokens=264)  # first batch at n32: nothing to compare yet
    np.testing.assert_array_equal(cb.bandit.alpha, [1.0, 1.0])
    cb.observe(32, 2.0, tokens=264)  # improvement 1 nat, relative cost 1
    cb.observe(64, 3.0, tokens=504)
    cb.observe(64, 2.5, tokens=504)  # improvement 0.5 nat at 252/132 the cost
    cb.observe(64, 2.9, tokens=504)  # worse: reward 0
    r32, r64 = 1.0 / ln40, (0.5 / ln40) / (252 / 132)
    np.testing.assert_allclose(cb.bandit.alpha, [1 + r32, 1 + r64])
    np.testing.assert_allclose(cb.bandit.beta, [2 - r32, 1 + (1 - r64) + 1])
    np.testing.assert_array_equal(cb.bandit.pulls, [1, 2])
    assert cb.flops_spent == 6 * 10 * (2 * 264 + 3 * 504)
    assert cb.reward(32, 100.0, 0.0) == 1.0  # clipped to 1 before the cost division
    assert cb.reward(64, 100.0, 0.0) == pytest.approx(132 / 252)


def test_select_returns_a_training_n_and_unknown_n_is_refused():
    cb = LengthCurriculum(seed=3)
    cb.n_params = 1
    assert all(cb.select() in TRAIN_N for _ in range(20))
    with pytest.raises(
        ValueError, match=r"n_writes=48: expected one of the curriculum's \[32, 64, 128, 256\]"
    ):
        cb.observe(48, 1.0, tokens=100)


def _drive(cb, steps, start=None):
    """Simulate the DataModule: train each chosen N, loss falling with its own count."""
    n = start if start is not None else cb.select()
    seen = []
    for _ in range(steps):
        if n is None:
            break
        seen.append(n)
        loss = 3.0 / (1 + seen.count(n)) + 0.01 * (len(seen) % 3)
        n = cb.observe(n, loss, tokens=int(expected_tokens_per_example(n)))
    return seen, n


def test_ledger_masks_arms_that_cannot_pay_and_stops_when_none_can():
    # n_params 1: a batch at n32 costs 6 * 132 = 792 FLOPs, at n256 6 * 972 = 5832.
    # Each arm's share is 7920: n32 can pay exactly 10 batches, n256 one (then 2088 are left).
    cb = LengthCurriculum((32, 256), budget_flops=2 * 7920, seed=1)
    cb.n_params = 1
    seen, last = _drive(cb, steps=100)
    assert last is None
    assert (seen.count(32), seen.count(256)) == (10, 1)
    assert cb.ledger.remaining(0) == 0.0 and cb.ledger.remaining(1) == 7920 - 5832
    np.testing.assert_allclose(cb.next_cost_flops(), [792, 5832])
    assert cb.ledger.mask([792, 5832]) == [False, False]


def test_a_masked_arm_is_never_chosen_while_others_can_pay():
    cb = LengthCurriculum((32, 256), budget_flops=2 * 5000, seed=2)
    cb.n_params = 1
    seen, _ = _drive(cb, steps=6, start=32)  # 5000 < 5832: n256 can never pay
    assert seen == [32] * 6


def test_state_dict_round_trip_resumes_exactly():
    kwargs = {"n_writes_values": TRAIN_N, "budget_flops": 6 * 20 * 972.0, "seed": 5}
    a = LengthCurriculum(**kwargs)
    a.n_params = 1
    _, n = _drive(a, steps=7)
    buffer = io.BytesIO()
    torch.save(copy.deepcopy(a.state_dict()), buffer)  # must survive a checkpoint
    buffer.seek(0)
    b = LengthCurriculum(**kwargs)
    b.n_params = 1
    b.load_state_dict(torch.load(buffer, weights_only=True))
    assert b.current_n == a.current_n == n
    rest_a, _ = _drive(a, steps=25, start=n)
    rest_b, _ = _drive(b, steps=25, start=n)
    assert rest_a == rest_b and len(set(rest_a)) > 1
    np.testing.assert_array_equal(a.bandit.alpha, b.bandit.alpha)
    np.testing.assert_array_equal(a.ledger.spent, b.ledger.spent)
    np.testing.assert_array_equal(a.choice_counts, b.choice_counts)
    # A fresh curriculum with the same seed but no restored state chooses differently.
    c = LengthCurriculum(**kwargs)
    c.n_params = 1
    assert _drive(c, steps=25, start=n)[0] != rest_a


def test_state_dict_from_other_buckets_is_refused():
    a = LengthCurriculum((32, 64))
    with pytest.raises(ValueError, match=r"checkpoint curriculum over n_writes \[32, 64\]"):
        LengthCurriculum((32, 128)).load_state_dict(a.state_dict())


def _fit(callback, datamodule, max_steps):
    trainer = pl.Trainer(
        accelerator="cpu",
        max_steps=max_steps,
        logger=False,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=1,
    )
    trainer.fit(TrainLossModule(), datamodule=datamodule)
    return trainer


def test_trainer_run_sets_train_n_and_logs_choices():
    dm = CurriculumDataModule()
    callback = LengthCurriculum(seed=0)
    trainer = _fit(callback, dm, max_steps=12)
    assert trainer.global_step == 12
    assert len(dm.calls) == 13  # one at train start, one after every batch
    assert set(dm.calls) <= set(TRAIN_N) and len(set(dm.calls)) > 1
    assert callback.n_params == 1
    assert callback.choice_counts.sum() == 13
    assert callback.flops_spent == 6 * sum(2 * (12 + 3 * n) for n in dm.served[:12])
    logged = trainer.logged_metrics
    assert float(logged["curriculum/n_writes"]) == dm.calls[-1]
    means = [float(logged[f"curriculum/posterior_mean/n{n}"]) for n in TRAIN_N]
    np.testing.assert_allclose(means, callback.bandit.posterior_mean(), rtol=1e-6)


def test_trainer_stops_when_the_flop_budget_is_spent():
    dm = CurriculumDataModule()
    # 4 arms x 3 batches at n32 worth of FLOPs each: n256 (2 * 780 tokens) can never pay.
    budget = 4 * 3 * 6 * 2 * (12 + 3 * 32)
    callback = LengthCurriculum(budget_flops=budget, seed=0)
    trainer = _fit(callback, dm, max_steps=200)
    assert trainer.global_step < 200
    assert not any(callback.ledger.mask(callback.next_cost_flops().tolist()))


def test_fit_without_set_train_n_is_refused():
    class NoCurriculum(CurriculumDataModule):
        set_train_n = None

    with pytest.raises(TypeError, match="needs a DataModule with set_train_n"):
        _fit(LengthCurriculum(), NoCurriculum(), max_steps=1)


def test_seed_none_follows_the_runs_global_seed(monkeypatch):
    """``seed=None``: the bandit's seed is the run's ``seed_everything`` (``PL_GLOBAL_SEED``), so the
    seeds of a study draw different curricula; bad seeds are refused in one line."""
    pl.seed_everything(7)
    assert LengthCurriculum(seed=None).seed == 7
    monkeypatch.delenv("PL_GLOBAL_SEED", raising=False)
    assert LengthCurriculum(seed=None).seed == 0
    streams = {s: [c.bandit.select() for c in [LengthCurriculum(seed=s)] for _ in range(20)] for s in (1, 2)}
    assert streams[1] != streams[2]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=rf"seed={bad!r}: expected an integer >= 0"):
            LengthCurriculum(seed=bad)
