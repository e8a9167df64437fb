"""ThompsonBernoulli and FlopLedger."""

import numpy as np
import pytest

from swar_bench.referee.bandit import FlopLedger, ThompsonBernoulli


def test_priors_are_beta_1_1():
    b = ThompsonBernoulli(4, seed=3)
    np.testing.assert_array_equal(b.alpha, np.ones(4))
    np.testing.assert_array_equal(b.beta, np.ones(4))
    np.testing.assert_array_equal(b.pulls, np.zeros(4, dtype=np.int64))


def test_fractional_update():
    b = ThompsonBernoulli(3)
    b.update(1, 0.25)
    b.update(1, 1.0)
    b.update(2, 0.0)
    np.testing.assert_allclose(b.alpha, [1.0, 2.25, 1.0])
    np.testing.assert_allclose(b.beta, [1.0, 1.75, 2.0])
    np.testing.assert_array_equal(b.pulls, [0, 2, 1])
    np.testing.assert_allclose(b.posterior_mean(), [0.5, 0.5625, 1 / 3])


@pytest.mark.parametrize("reward", [-0.1, 1.5, float("nan"), float("inf")])
def test_reward_outside_unit_interval_is_refused(reward):
    b = ThompsonBernoulli(2)
    with pytest.raises(ValueError, match="reward"):
        b.update(0, reward)
    assert b.pulls.sum() == 0


def test_bad_arm_and_bad_n_arms():
    with pytest.raises(ValueError, match="n_arms"):
        ThompsonBernoulli(0)
    b = ThompsonBernoulli(2)
    with pytest.raises(ValueError, match="arm"):
        b.update(2, 0.5)


def test_mask_is_respected_and_validated():
    b = ThompsonBernoulli(4, seed=0)
    b.update(0, 1.0)
    assert {b.select([False, False, True, False]) for _ in range(50)} == {2}
    picks = {b.select([True, False, False, True]) for _ in range(200)}
    assert picks <= {0, 3} and picks == {0, 3}
    with pytest.raises(ValueError, match="no arm"):
        b.select([False] * 4)
    with pytest.raises(ValueError, match="one bool per arm"):
        b.select([True, True])


def test_same_seed_same_choices_different_seed_differs():
    def run(seed):
        b = ThompsonBernoulli(5, seed=seed)
        out = []
        for i in range(40):
            arm = b.select()
            out.append(arm)
            b.update(arm, (arm * 0.2 + 0.1 * (i % 3)) % 1.0)
        return out

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_concentrates_on_the_best_arm():
    b = ThompsonBernoulli(3, seed=11)
    truth = np.array([0.1, 0.8, 0.3])
    rng = np.random.default_rng(0)
    for _ in range(300):
        arm = b.select()
        b.update(arm, float(rng.random() < truth[arm]))
    assert b.pulls.sum() == 300
    assert b.pulls[1] > 0.7 * 300


def test_ledger_splits_evenly_and_charges():
    led = FlopLedger(1000.0, 4)
    assert led.share_flops == 250.0
    assert [led.remaining(a) for a in range(4)] == [250.0] * 4
    assert led.can_pay(0, 250.0) and not led.can_pay(0, 250.5)
    led.pay(0, 200.0)
    assert led.remaining(0) == 50.0 and led.remaining(1) == 250.0
    assert not led.can_pay(0, 60.0)
    with pytest.raises(ValueError, match="cannot pay"):
        led.pay(0, 60.0)
    assert led.remaining(0) == 50.0
    assert led.mask([50.0, 300.0, 10.0, 250.0]) == [True, False, True, True]
    assert led.total_spent == 200.0


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf")])
def test_ledger_refuses_bad_budget(budget):
    with pytest.raises(ValueError, match="budget_flops"):
        FlopLedger(budget, 2)


def test_ledger_masks_expensive_arm_in_bandit_loop():
    b = ThompsonBernoulli(2, seed=1)
    led = FlopLedger(200.0, 2)
    cost = [10.0, 60.0]
    for _ in range(30):
        mask = led.mask(cost)
        if not any(mask):
            break
        arm = b.select(mask)
        led.pay(arm, cost[arm])
        b.update(arm, 1.0 if arm == 1 else 0.0)
    assert b.pulls[1] <= 1  # share 100 FLOPs -> at most one pull of 60
    assert led.spent[1] <= 100.0 and led.spent[0] <= 100.0
    assert b.pulls.sum() <= 30


def test_state_dict_round_trip_resumes_the_same_stream():
    import json

    a = ThompsonBernoulli(3, seed=4)
    for r in (0.2, 0.9, 0.5):
        a.update(a.select(), r)
    saved = json.loads(json.dumps(a.state_dict()))
    expected = [a.select() for _ in range(20)]
    b = ThompsonBernoulli(3, seed=99)
    b.load_state_dict(saved)
    assert [b.select() for _ in range(20)] == expected
    np.testing.assert_array_equal(b.alpha, a.alpha)
    np.testing.assert_array_equal(b.pulls, a.pulls)
    with pytest.raises(ValueError, match="expected 2"):
        ThompsonBernoulli(2).load_state_dict(saved)

    led = FlopLedger(100.0, 2)
    led.pay(1, 30.0)
    other = FlopLedger(100.0, 2)
    other.load_state_dict(json.loads(json.dumps(led.state_dict())))
    assert other.remaining(1) == 20.0 and other.remaining(0) == 50.0
    with pytest.raises(ValueError, match="ledger state"):
        FlopLedger(50.0, 2).load_state_dict(led.state_dict())
