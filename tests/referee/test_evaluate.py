"""Streaming, TBPTT training, and ``evaluate`` end to end on small stand-in ranges."""

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.referee.evaluate import (
    check_ranges,
    evaluate,
    length_curriculum,
    self_knowledge_correlation,
)
from swar_bench.referee.stream import Runner, chunk_bounds, stream
from swar_bench.referee.suites import make_batch, random_permutation
from swar_bench.referee.table import comparison_table
from swar_bench.referee.train import train_step_tokens, train_tbptt

from .conftest import small_gru


def test_chunk_bounds():
    assert chunk_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert chunk_bounds(10, 4, split=7) == [(0, 4), (4, 7), (7, 10)]
    assert chunk_bounds(3, 8, split=0) == [(0, 3)]


def test_streaming_does_not_depend_on_chunk_size(make_gru):
    m = make_gru()
    x, y = make_batch(
        "perplexity",
        seed=0,
        split="eval",
        distance=50,
        vocab=17,
        first_index=0,
        batch_size=3,
        perm=random_permutation(np.random.default_rng(0), 17),
    )
    runner = Runner(m, 17)
    a = stream(runner, x, y, chunk_size=50, tail=8)
    b = stream(runner, x, y, chunk_size=7, tail=8)
    np.testing.assert_allclose(a.loss_sum, b.loss_sum, rtol=1e-5)
    np.testing.assert_allclose(a.tail_loss_sum, b.tail_loss_sum, rtol=1e-5)
    np.testing.assert_array_equal(a.correct, b.correct)
    np.testing.assert_array_equal(a.n_supervised, [50, 50, 50])
    np.testing.assert_array_equal(a.tail_n_supervised, [8, 8, 8])
    assert a.tokens == 150


def test_train_tbptt_counts_tokens_and_trains_only_the_probe_position(make_gru):
    m = make_gru()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x, y = make_batch(
        "copy", seed=0, split="train", distance=20, vocab=17, first_index=0, batch_size=2
    )
    step = train_tbptt(m, opt, x, y, vocab=17, tbptt_steps=8, chunk_size=4)
    assert (
        (step.tokens_forward, step.tokens_backward)
        == (2 * 13, 2 * 8)
        == train_step_tokens(2, 21, 8)
    )
    # the loss is the mean probe loss before the update: recompute it on an untouched copy
    ref = stream(Runner(make_gru(), 17), x, y, chunk_size=21)
    assert step.loss == pytest.approx(ref.loss_sum.sum() / 2, rel=1e-5)
    # a window with no supervised position takes no step
    before = copy.deepcopy(m.state_dict())
    y_none = np.full_like(y, -100)
    out = train_tbptt(m, opt, x, y_none, vocab=17, tbptt_steps=8)
    assert math.isnan(out.loss)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())


def test_trained_probe_loss_below_untrained_on_copy_at_distance_6(make_gru):
    m = make_gru()
    x, y = make_batch(
        "copy", seed=0, split="eval", distance=6, vocab=17, first_index=0, batch_size=64
    )
    untrained = stream(Runner(m, 17), x, y, chunk_size=64).loss_sum.mean()
    opt = torch.optim.Adam(m.parameters(), lr=3e-2)
    for i in range(40):
        xt, yt = make_batch(
            "copy", seed=0, split="train", distance=6, vocab=17, first_index=16 * i, batch_size=16
        )
        train_tbptt(m, opt, xt, yt, vocab=17, tbptt_steps=16)
    trained = stream(Runner(m, 17), x, y, chunk_size=64).loss_sum.mean()
    assert trained < untrained - 0.1


def _in_unit(v):
    return v is None or 0.0 <= v <= 1.0


def test_result_shape_and_ranges(gru_result, small_kwargs):
    r = gru_result
    ranges = list(small_kwargs["ranges"])
    assert r["protocol"]["ranges"] == ranges
    assert [p["range"] for p in r["forgetting_curve"]] == ranges  # one point per range
    for cells in r["suites"].values():
        assert [c["range"] for c in cells] == ranges
        for c in cells:
            assert _in_unit(c["accuracy"]) and _in_unit(c["proxy_accuracy"])
            assert c["accuracy"] is not None
            assert c["loss"] > 0 and c["solved"] == (c["loss"] < r["solved_threshold"])
    assert r["solved_threshold"] == pytest.approx(0.5 * math.log(17))
    assert r["mechanism"]["loss_only"] is False


def test_curriculum_pulls_at_most_rounds(gru_result, small_kwargs):
    cur = gru_result["curriculum"]
    assert (
        sum(cur["pulls"])
        == cur["rounds_run"]
        == len(cur["history"])
        <= small_kwargs["curriculum_rounds"]
    )
    for h in cur["history"]:
        assert 0.0 <= h["reward"] <= 1.0
    # fractional updates: alpha + beta = 2 + pulls per arm
    np.testing.assert_allclose(np.add(cur["alpha"], cur["beta"]), 2 + np.array(cur["pulls"]))
    assert all(f <= cur["share_flops"] for f in cur["flops_per_arm"])


def test_flops_are_counted_from_tokens(gru_result, small_kwargs):
    r = gru_result
    n = r["mechanism"]["n_params"]
    B = small_kwargs["batch_size"]
    total_train = total_eval = 0.0
    for suite, cells in r["suites"].items():
        for c in cells:
            T = c["range"] if suite == "perplexity" else c["range"] + 1
            fwd, bwd = train_step_tokens(B, T, small_kwargs["tbptt_steps"])
            assert c["tokens"]["train_forward"] == c["train_steps"] * fwd
            assert c["tokens"]["train_backward"] == c["train_steps"] * bwd
            assert c["tokens"]["eval"] == small_kwargs["n_eval_trials"] * T
            assert (
                c["flops"]["train"]
                == 2 * n * c["tokens"]["train_forward"] + 6 * n * c["tokens"]["train_backward"]
            )
            assert c["flops"]["eval"] == 2 * n * c["tokens"]["eval"]
            total_train += c["flops"]["train"]
            total_eval += c["flops"]["eval"]
    assert r["flops"]["train"] == total_train and r["flops"]["eval"] == total_eval
    assert r["flops"]["total"] == pytest.approx(total_train + total_eval + r["curriculum"]["flops"])


def test_state_bytes_measured_after_the_largest_range(gru_result, growing_cache):
    st = gru_result["state"]
    assert st["state_bytes"] == st["state_bytes_analytic"] == 16 * 4  # one block, d_model=16, fp32
    assert st["within_budget"] and st["fixed_size"]
    r = evaluate(
        growing_cache,
        ranges=(6, 20),
        state_budget_bytes=64,
        seed=0,
        n_train_steps=1,
        n_eval_trials=2,
        perplexity_steps=1,
        curriculum_rounds=0,
        batch_size=2,
    )
    assert r["state"]["state_bytes"] == 4 * 21  # every token of the needle at range 20 kept
    assert not r["state"]["within_budget"] and not r["state"]["fixed_size"]
    assert r["curriculum"] is None and "curriculum_rounds=0" in r["curriculum_reason"]


def test_identical_seeds_give_identical_results(make_gru, small_kwargs, gru_result):
    assert evaluate(make_gru(0), **small_kwargs) == gru_result
    other = evaluate(make_gru(0), **{**small_kwargs, "seed": 1})
    assert other["suites"] != gru_result["suites"]


def test_fresh_copy_per_cell_no_leakage(make_gru, small_kwargs, gru_result):
    m = make_gru(0)
    before = copy.deepcopy(m.state_dict())
    budget = 1e15  # never binding, so each cell trains the same number of steps in both runs
    kw = {**small_kwargs, "compute_budget_flops": budget, "curriculum_rounds": 0}
    both = evaluate(m, **kw)
    assert all(
        torch.equal(before[k], v) for k, v in m.state_dict().items()
    )  # user's mechanism untouched
    only = evaluate(make_gru(0), **{**kw, "ranges": (6,), "compute_budget_flops": budget / 2})
    for suite in both["suites"]:
        assert only["suites"][suite][0] == both["suites"][suite][0]


def test_flop_ledger_rations_long_ranges(make_gru, small_kwargs):
    kw = {
        **small_kwargs,
        "n_train_steps": 5,
        "perplexity_steps": 5,
        "curriculum_rounds": 0,
        "ranges": (6, 40),
    }
    n = make_gru().n_params
    B, tb = kw["batch_size"], kw["tbptt_steps"]
    cost = lambda T: 2 * n * train_step_tokens(B, T, tb)[0] + 6 * n * train_step_tokens(B, T, tb)[1]
    budget = 2 * 2.5 * cost(41)  # share per range: 2.5 steps at range 40
    r = evaluate(make_gru(), **{**kw, "compute_budget_flops": budget})
    needle = r["suites"]["needle"]
    assert needle[0]["train_steps"] == 5 and needle[0]["train_stopped"] == "n_train_steps"
    assert needle[1]["train_steps"] == 2 and needle[1]["train_stopped"] == "flop ledger"
    # the perplexity cell's cap is perplexity_steps, and it is named as such
    ppl = r["suites"]["perplexity"]
    assert ppl[0]["train_steps"] == 5 and ppl[0]["train_stopped"] == "perplexity_steps"
    for cells in r["suites"].values():
        assert all(c["flops"]["train"] <= budget / 2 for c in cells)


def _row_flops(n_params, length, tbptt):
    fwd, bwd = train_step_tokens(1, length, tbptt)
    return 2 * n_params * fwd + 6 * n_params * bwd


def test_matched_flops_protocol_spends_each_share_whatever_the_model_size(make_gru, small_kwargs):
    kw = {
        **small_kwargs,
        "ranges": (6,),
        "curriculum_rounds": 0,
        "train_protocol": "matched_flops",
    }
    # one range: the whole ledger is its share, > 30 training rows of the bigger model, so that
    # one row (the most two cells can differ by) is < 5% of it
    budget = 1.5e7
    results = {}
    for d in (16, 32):
        mech = make_gru(0, d_model=d)
        r = evaluate(mech, **{**kw, "compute_budget_flops": budget})
        assert r["protocol"]["train_protocol"] == "matched_flops"
        for suite, cells in r["suites"].items():
            for c in cells:
                length = c["range"] if suite == "perplexity" else c["range"] + 1
                row = _row_flops(mech.n_params, length, kw["tbptt_steps"])
                rows = int(budget // row)  # the rows the share pays for, by hand
                assert c["train_rows"] == rows and c["train_stopped"] == "flop ledger"
                assert c["train_steps"] == -(-rows // kw["batch_size"])  # ceil: a last short step
                assert c["flops"]["train"] == pytest.approx(rows * row)
                assert budget - row < c["flops"]["train"] <= budget
        results[f"d{d}"] = r
    small, big = results["d16"]["suites"]["needle"][0], results["d32"]["suites"]["needle"][0]
    assert small["train_steps"] > 2 * big["train_steps"]  # the bigger model takes fewer steps
    assert "matched FLOPs (each cell trains" in comparison_table(results)
    # the card's fixed-step protocol on the same two models spends 3.6x apart: refused
    fixed = {
        name: evaluate(
            make_gru(0, d_model=d),
            **{**kw, "compute_budget_flops": budget, "train_protocol": "fixed_steps"},
        )
        for name, d in (("d16", 16), ("d32", 32))
    }
    with pytest.raises(ValueError, match="at matched FLOPs: needle at range 6"):
        comparison_table(fixed)
    with pytest.raises(ValueError, match="train_protocol='nope': expected one of fixed_steps"):
        evaluate(make_gru(), **{**kw, "train_protocol": "nope"})


@settings(max_examples=12, deadline=None)
@given(budget=st.floats(1e4, 4e6), distance=st.integers(6, 30))
def test_matched_flops_spends_the_share_to_within_one_row(budget, distance):
    mech = small_gru(0)
    r = evaluate(
        mech,
        ranges=(distance,),
        state_budget_bytes=1024,
        seed=0,
        n_eval_trials=1,
        curriculum_rounds=0,
        batch_size=4,
        tbptt_steps=8,
        compute_budget_flops=budget,
        train_protocol="matched_flops",
    )
    for suite, (c,) in r["suites"].items():
        row = _row_flops(mech.n_params, distance if suite == "perplexity" else distance + 1, 8)
        assert budget - row < c["flops"]["train"] <= budget


def test_loss_only_mechanism_reports_only_the_proxy(loss_only_gru, small_kwargs):
    before = copy.deepcopy(loss_only_gru.inner.state_dict())
    r = evaluate(loss_only_gru, **{**small_kwargs, "curriculum_rounds": 2})
    assert all(torch.equal(before[k], v) for k, v in loss_only_gru.inner.state_dict().items())
    assert r["mechanism"]["loss_only"] is True and r["mechanism"]["class"].endswith("LossOnlyGRU")
    assert r["mechanism"]["n_params"] == loss_only_gru.inner.n_params
    assert r["curriculum"]["rounds_run"] == 2
    assert "accuracy is None" in r["accuracy_note"]
    for cells in r["suites"].values():
        for c in cells:
            assert c["accuracy"] is None and 0.0 <= c["proxy_accuracy"] <= 1.0 and c["loss"] > 0
    assert r["state"]["state_bytes"] == 64
    assert "proxy_accuracy" in r["self_knowledge_reason"] or r["self_knowledge_correlation"] is None
    # the loss is the mechanism's own: the same weights with logits give the same probe losses
    with_logits = evaluate(loss_only_gru.inner, **{**small_kwargs, "curriculum_rounds": 2})
    for suite in r["suites"]:
        for a, b in zip(r["suites"][suite], with_logits["suites"][suite]):
            assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
            assert a["proxy_accuracy"] == b["proxy_accuracy"]
    # the zoo's adapter is accepted as is, with the same numbers
    from swar_bench.mechanisms import LossOnlyAdapter

    adapted = evaluate(LossOnlyAdapter(loss_only_gru), **{**small_kwargs, "curriculum_rounds": 2})
    assert adapted["suites"] == r["suites"]


def test_self_knowledge_correlation():
    r, why = self_knowledge_correlation([1.0, 0.5, 0.0], [0.1, 1.0, 2.0])
    assert r == pytest.approx(np.corrcoef([0.0, 0.5, 1.0], [0.1, 1.0, 2.0])[0, 1]) and why == ""
    assert self_knowledge_correlation([1.0, 0.0], [2.0, 0.5])[0] == pytest.approx(-1.0)
    for acc, loss, reason in [
        ([0.5], [1.0], "at least 2"),
        ([0.0, 0.0], [1.0, 2.0], "zero variance"),
        ([0.0, 1.0], [1.0, 1.0], "zero variance"),
        ([None, 1.0], [1.0, 2.0], "missing"),
    ]:
        r, why = self_knowledge_correlation(acc, loss)
        assert math.isnan(r) and reason in why


def test_bad_arguments_are_refused_with_one_line(make_gru, small_kwargs):
    m = make_gru()
    for key, value, match in [
        ("ranges", (12, 6), "strictly increasing"),
        ("ranges", (2.5,), "ranges"),
        ("ranges", (4,), "integer >= 6"),
        ("state_budget_bytes", 0, "state_budget_bytes"),
        ("seed", -1, "seed"),
        ("compute_budget_flops", -5.0, "compute_budget_flops"),
        ("vocab", 40, "vocab_size"),
        ("n_eval_trials", 0, "n_eval_trials"),
    ]:
        with pytest.raises(ValueError, match=match) as e:
            evaluate(m, **{**small_kwargs, key: value})
        assert "\n" not in str(e.value)
    assert check_ranges((1e3, 1e4, 1e5, 1e6), 3) == (1000, 10000, 100000, 1000000)
    # the value is echoed as given: the CLI parses ranges as floats, "-8" must not read "-8.0"
    with pytest.raises(ValueError) as e:
        check_ranges((-8.0, 16.0), 3)
    assert str(e.value) == "ranges[0]=-8: expected an integer >= 6"
    with pytest.raises(ValueError) as e:
        check_ranges((8, 12.5), 3)
    assert str(e.value) == "ranges[1]=12.5: expected an integer >= 6"


def test_length_curriculum_masks_arms_the_ledger_cannot_pay(make_gru):
    m = make_gru()
    perm = random_permutation(np.random.default_rng(0), 17)
    out = length_curriculum(
        m,
        torch.optim.Adam(m.parameters(), lr=1e-2),
        (4, 64),
        vocab=17,
        n_rounds=30,
        compute_budget_flops=1.0,
        seed=0,
        perm=perm,
        batch_size=2,
        tbptt_steps=8,
    )
    assert out["rounds_run"] == 0 and out["stopped"] == "flop ledger"
    pull = out["pull_flops"]
    assert 3.5 * pull[0] < pull[1]
    budget = 2 * 3.5 * pull[0]  # a share of 3.5 short pulls: arm 1 cannot afford a single pull
    out = length_curriculum(
        m,
        torch.optim.Adam(m.parameters(), lr=1e-2),
        (4, 64),
        vocab=17,
        n_rounds=30,
        compute_budget_flops=budget,
        seed=0,
        perm=perm,
        batch_size=2,
        tbptt_steps=8,
    )
    assert out["pulls"] == [3, 0] and out["stopped"] == "flop ledger"


def test_a_diverged_run_gives_strict_json(make_gru, small_kwargs):
    import json

    from swar_bench.referee.table import comparison_table

    m = make_gru()
    with torch.no_grad():
        m.head.weight.fill_(float("nan"))
    r = evaluate(m, **{**small_kwargs, "curriculum_rounds": 1})
    json.dumps(r, allow_nan=False)
    assert r["suites"]["needle"][0]["loss"] is None and r["self_knowledge_correlation"] is None
    assert "  GRU " in comparison_table(r)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_evaluate_on_cuda_matches_cpu(make_gru, small_kwargs, gru_result):
    r = evaluate(make_gru(0).to("cuda"), **small_kwargs)
    assert r["tokens"] == gru_result["tokens"] and r["flops"] == gru_result["flops"]
    assert r["state"] == gru_result["state"]
    for suite, cells in gru_result["suites"].items():
        for a, b in zip(r["suites"][suite], cells):
            assert a["loss"] == pytest.approx(b["loss"], abs=1e-3)


def test_a_state_growing_as_log_t_is_reported_at_the_tokens_measured():
    from swar_bench.mechanisms import LogLinearAttention

    torch.manual_seed(0)
    model = LogLinearAttention(vocab_size=17, d_model=8, n_layers=1, n_heads=1, chunk_size=8)
    r = evaluate(
        model,
        ranges=(6, 20),
        state_budget_bytes=64,
        seed=0,
        n_train_steps=1,
        n_eval_trials=2,
        perplexity_steps=1,
        curriculum_rounds=0,
        batch_size=2,
    )
    st = r["state"]
    levels = st["measured_after_tokens"].bit_length()  # 21 tokens: 5 levels of [8, 8] floats
    assert st["state_bytes"] == st["state_bytes_analytic"] == 24 * 3 * 4 + 8 + levels * 64 * 4
    assert st["state_bytes_initial"] == 24 * 3 * 4 + 8 and not st["fixed_size"]
