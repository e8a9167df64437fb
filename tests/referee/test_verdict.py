"""referee verdict: paired tests on synthetic outcomes with hand-computed p-values, refusals, the CLI."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.referee.cli import main
from swar_bench.referee.evaluate import evaluate
from swar_bench.referee.verdict import mcnemar_exact, paired_permutation, verdict, verdict_table

from .conftest import small_gru


def _with_outcomes(result, suite, index, correct):
    """``result`` whose ``suite`` cell ``index`` holds the per-instance outcomes ``correct``
    (one probe position each)."""
    out = copy.deepcopy(result)
    cell = out["suites"][suite][index]
    cell["per_probe"] = {
        "correct": [int(v) for v in correct],
        "count": [1] * len(correct),
        "loss": [0.0] * len(correct),
    }
    return out


def _cell(v, suite, index):
    return [c for c in v["cells"] if c["suite"] == suite][index]


def test_mcnemar_by_hand():
    # 1 pair only the baseline got right, 9 only the challenger: p = 2 * P(X >= 9 | 10, 1/2)
    base = np.array([1] + [0] * 9 + [1] * 5, dtype=bool)
    chal = np.array([0] + [1] * 9 + [1] * 5, dtype=bool)
    assert mcnemar_exact(base, chal) == (1, 9, pytest.approx(2 * 11 / 1024))
    assert mcnemar_exact(base, base) == (0, 0, 1.0)


def test_paired_permutation_by_hand():
    # 4 pairs, all differences +0.5: of the 16 sign assignments only all-plus and all-minus reach
    # |mean| = 0.5, so the exact two-sided p is 2/16
    assert paired_permutation([0.0, 0.2, 0.4, 0.1], [0.5, 0.7, 0.9, 0.6], seed=0) == pytest.approx(
        0.125
    )
    assert paired_permutation([0.3, 0.3], [0.3, 0.3], seed=0) == 1.0


def test_verdict_names_the_winner_per_cell(gru_result):
    base_outcomes = [1] + [0] * 9 + [1] * 5
    chal_outcomes = [0] + [1] * 9 + [1] * 5
    base = _with_outcomes(gru_result, "needle", 0, base_outcomes)
    chal = _with_outcomes(gru_result, "needle", 0, chal_outcomes)
    v = verdict(base, chal)
    needle = _cell(v, "needle", 0)
    assert needle["test"] == "exact McNemar" and needle["n_probes"] == 15
    assert (needle["baseline_only"], needle["challenger_only"]) == (1, 9)
    assert needle["p_value"] == pytest.approx(0.021484375)
    assert needle["winner"] == "challenger" and needle["difference"] == pytest.approx(8 / 15)
    # every other cell holds the same outcomes on both sides: ties with p = 1
    others = [c for c in v["cells"] if c is not needle]
    assert all(c["winner"] == "tie" and c["p_value"] == 1.0 for c in others)
    assert v["summary"]["needle"] == {"challenger": 1, "baseline": 0, "tie": 1}
    assert v["beats_baseline"] is True
    # swapped roles: the baseline wins, so the challenger does not beat it
    back = verdict(chal, base)
    assert _cell(back, "needle", 0)["winner"] == "baseline" and back["beats_baseline"] is False
    # at alpha 0.01 the same difference is a tie
    assert _cell(verdict(base, chal, alpha=0.01), "needle", 0)["winner"] == "tie"
    text = verdict_table(v)
    row = next(line for line in text.splitlines() if line.startswith("needle      6 "))
    assert row.split() == [
        "needle", "6", "accuracy", "15", "0.400", "0.933", "+0.533", "exact", "McNemar", "1/9",
        "0.0215", "challenger",
    ]
    assert "wins 1, loses 0, ties 7 of 8 cells: beats the baseline" in text
    # the perplexity cells (many positions per instance) use the paired permutation test
    assert _cell(v, "perplexity", 0)["test"] == "paired permutation"


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda r: r["protocol"].__setitem__("seed", 1), "seed=0 vs seed=1"),
        (lambda r: r["protocol"].__setitem__("ranges", [6, 24]), "ranges="),
        (lambda r: r["protocol"].__setitem__("train_protocol", "matched_flops"), "train_protocol="),
        (lambda r: r["protocol"].__setitem__("compute_budget_flops", 1.0), "compute_budget_flops="),
        (
            lambda r: [c["flops"].__setitem__("train", 2 * c["flops"]["train"]) for c in r["suites"]["copy"]],
            "at matched FLOPs: copy at range 6",
        ),
        (lambda r: r["suites"]["needle"][1].pop("per_probe"), "challenger suites.needle.per_probe is missing"),
        (
            lambda r: r["suites"]["needle"][0]["per_probe"].__setitem__("correct", [1] * 10),
            r"challenger suites\.needle\.per_probe at range \d+: its lists differ in length \(loss \d+, count \d+, correct 10\)",
        ),
        (
            lambda r: r["suites"]["copy"][0]["per_probe"].pop("count"),
            r"challenger suites\.copy\.per_probe at range \d+: count is not a list of numbers",
        ),
        (
            lambda r: r["suites"]["copy"][0]["per_probe"]["loss"].__setitem__(0, "x"),
            r"challenger suites\.copy\.per_probe at range \d+: loss is not a list of numbers",
        ),
    ],
)
def test_verdict_refuses_unmatched_terms(gru_result, edit, match):
    other = copy.deepcopy(gru_result)
    edit(other)
    with pytest.raises(ValueError, match=match) as e:
        verdict(gru_result, other)
    assert "\n" not in str(e.value)


@settings(max_examples=30, deadline=None)
@given(
    side=st.sampled_from(["baseline", "challenger"]),
    key=st.sampled_from(["loss", "count", "correct"]),
    cut=st.integers(-3, 3).filter(bool),
)
def test_per_probe_lists_of_another_length_are_one_line(gru_result, side, key, cut):
    broken = copy.deepcopy(gru_result)
    probes = broken["suites"]["needle"][0]["per_probe"]
    n = len(probes["loss"])
    probes[key] = probes[key][: n + cut] if cut < 0 else probes[key] + probes[key][:cut]
    pair = (broken, gru_result) if side == "baseline" else (gru_result, broken)
    with pytest.raises(ValueError, match=rf"^{side} suites\.needle\.per_probe at range \d+: its lists differ in length") as e:
        verdict(*pair)
    assert f"{key} {n + cut}" in str(e.value) and "\n" not in str(e.value)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_mcnemar_is_symmetric_and_ignores_concordant_pairs(pairs):
    base = np.array([a for a, _ in pairs])
    chal = np.array([b for _, b in pairs])
    b, c, p = mcnemar_exact(base, chal)
    b2, c2, p2 = mcnemar_exact(chal, base)
    assert (b2, c2) == (c, b) and p2 == pytest.approx(p)
    assert 0.0 < p <= 1.0 and (b != c or p == 1.0)
    extra = np.ones(5, dtype=bool)  # pairs both got right change nothing
    assert mcnemar_exact(np.r_[base, extra], np.r_[chal, extra])[2] == pytest.approx(p)


def test_cli_on_real_results_matched_flops(tmp_path, capsys, small_kwargs):
    kw = {
        **small_kwargs,
        "ranges": (6,),
        "curriculum_rounds": 0,
        "train_protocol": "matched_flops",
        "compute_budget_flops": 1.5e7,
    }
    paths = {}
    for name, d in (("gru16", 16), ("gru32", 32)):
        paths[name] = tmp_path / name / "result.json"
        paths[name].parent.mkdir()
        paths[name].write_text(json.dumps(evaluate(small_gru(0, d_model=d), **kw)))
    out = tmp_path / "v" / "verdict.json"
    argv = ["verdict", "--baseline", str(paths["gru16"]), "--challenger", str(paths["gru32"])]
    assert main([*argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verdict: gru32 (challenger) vs gru16 (baseline) | training matched_flops" in text
    v = json.loads(out.read_text())
    assert len(v["cells"]) == 4 and all(0.0 <= c["p_value"] <= 1.0 for c in v["cells"])
    assert all(c["n_probes"] == kw["n_eval_trials"] for c in v["cells"])
    assert not math.isnan(v["challenger"]["train_flops"])
    # the fixed-step results of the same two models spend different FLOPs: refused, one line
    for name, d in (("gru16", 16), ("gru32", 32)):
        fixed = evaluate(small_gru(0, d_model=d), **{**kw, "train_protocol": "fixed_steps"})
        paths[name].write_text(json.dumps(fixed))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at matched FLOPs" in err[0]
    assert main([*argv, "--alpha", "2"]) == 2
    assert capsys.readouterr().err == "swar-bench referee verdict: error: --alpha=2: expected a significance level in (0, 1)\n"
