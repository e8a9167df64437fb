"""comparison_table: rendering, and refusal to compare results not run on the same terms."""

import copy

import pytest

from swar_bench.referee.table import check_result, comparison_table


def test_single_result_and_mapping(gru_result):
    text = comparison_table(gru_result)
    assert "GRU" in text and "range=6" in text and "range=12" in text
    for suite in ("needle", "copy", "multi_hop", "perplexity"):
        assert suite in text
    needle6 = gru_result["suites"]["needle"][0]
    # 4 held-out needles, 0 right: 95% Wilson interval [0, 0.49] by hand; under 30 positions: "*"
    assert needle6["count"] == 4 and needle6["correct"] == 0
    assert needle6["accuracy_ci"] == pytest.approx([0.0, 0.489891], abs=1e-6)
    assert f"0.00 [0.00, 0.49] (4)* / 0.00 / {needle6['loss']:.3f}" in text
    assert "training: fixed steps (the referee's protocol" in text
    two = comparison_table({"a": gru_result, "b": copy.deepcopy(gru_result)})
    assert "  a " in two and "  b " in two
    assert two.count("within_budget") == 1


@pytest.mark.parametrize(
    "key,value",
    [
        ("ranges", [6, 24]),
        ("seed", 1),
        ("vocab", 40),
        ("state_budget_bytes", 2048.0),
        ("compute_budget_flops", 1e9),
        ("n_eval_trials", 16),
        ("train_protocol", "matched_flops"),
    ],
)
def test_refuses_unmatched_results(gru_result, key, value):
    other = copy.deepcopy(gru_result)
    other["protocol"][key] = value
    with pytest.raises(ValueError, match=f"cannot compare 'base' and 'other': {key}=") as e:
        comparison_table({"base": gru_result, "other": other})
    assert "\n" not in str(e.value)


def test_refuses_non_results(gru_result):
    with pytest.raises(ValueError, match="expected an evaluate"):
        comparison_table({"x": {"protocol": {}}})
    with pytest.raises(ValueError, match="non-empty"):
        comparison_table({})


def test_loss_only_cells_show_no_accuracy(gru_result):
    r = copy.deepcopy(gru_result)
    r["mechanism"]["loss_only"] = True
    for cells in r["suites"].values():
        for c in cells:
            c["accuracy"] = None
    text = comparison_table({"lo": r})
    c = r["suites"]["needle"][0]
    assert f"none / {c['proxy_accuracy']:.2f} / {c['loss']:.3f}" in text


def _without_suites(r):
    r["suites"] = {}


def _protocol_str(r):
    r["protocol"] = "x"


def _cell_without_loss(r):
    del r["suites"]["copy"][1]["loss"]


def _short_curve(r):
    r["forgetting_curve"] = r["forgetting_curve"][:1]


def _n_params_str(r):
    r["mechanism"]["n_params"] = "3"


def _protocol_without_hops(r):
    del r["protocol"]["hops"]


@pytest.mark.parametrize(
    "break_it, problem",
    [
        (_without_suites, "suites.needle is missing"),
        (_protocol_str, "protocol is 'x' (str), not a mapping"),
        (_cell_without_loss, "suites.copy[1].loss is missing"),
        (_short_curve, "forgetting_curve has 1 points, not one per range (2)"),
        (_n_params_str, "mechanism.n_params is '3' (str), not an integer"),
        (_protocol_without_hops, "protocol.hops is missing"),
    ],
)
def test_malformed_results_are_named_in_one_line(gru_result, break_it, problem):
    bad = copy.deepcopy(gru_result)
    break_it(bad)
    expected = "; expected an evaluate() result (schema 'swar_bench.referee/2')"
    with pytest.raises(ValueError) as e:
        comparison_table({"good": gru_result, "bad": bad})
    assert str(e.value) == f"results['bad']: {problem}{expected}"
    with pytest.raises(ValueError) as e:  # a single result is checked as well
        comparison_table(bad)
    assert str(e.value) == f"result: {problem}{expected}"
    check_result(gru_result, "r")  # the real thing passes


def test_check_result_rejects_non_mappings_and_other_schemas(gru_result):
    with pytest.raises(ValueError, match=r"^f\.json: the top level is \[1\] \(list\), not a mapping"):
        check_result([1], "f.json")
    other = dict(gru_result, schema="swar_bench.referee/0")
    with pytest.raises(ValueError, match="schema is 'swar_bench.referee/0', not 'swar_bench"):
        check_result(other, "f.json")


def _spent(result, factor):
    """``result`` with every cell's training FLOPs multiplied by ``factor``."""
    out = copy.deepcopy(result)
    for cells in out["suites"].values():
        for c in cells:
            c["flops"]["train"] *= factor
    return out


def test_refuses_unmatched_training_flops_unless_told(gru_result):
    # 4.8e5 vs 1.8e6 training FLOPs at one FLOP budget (a reported example): 73% apart
    bigger = _spent(gru_result, 1.8e6 / 4.8e5)
    with pytest.raises(ValueError, match="at matched FLOPs: needle at range 6 spent") as e:
        comparison_table({"base": gru_result, "big": bigger})
    assert "73.3% apart, more than the tolerance 5.0%" in str(e.value)
    assert "\n" not in str(e.value)
    # 4.9% apart is within the default 5%; 5.1% is not; any difference passes with inf / None
    comparison_table({"base": gru_result, "near": _spent(gru_result, 1 / 0.951)})
    with pytest.raises(ValueError, match="5.1% apart"):
        comparison_table({"base": gru_result, "far": _spent(gru_result, 1 / 0.949)})
    assert "big" in comparison_table({"base": gru_result, "big": bigger}, flops_tolerance=float("inf"))
    comparison_table({"base": gru_result, "big": bigger}, flops_tolerance=None)
    with pytest.raises(ValueError, match="flops_tolerance=-1: expected a relative difference >= 0"):
        comparison_table({"base": gru_result}, flops_tolerance=-1)
