"""comparison_table: rendering, and refusal to compare results not run on the same terms."""

import copy

import pytest

from swar_bench.referee.table import comparison_table


def test_single_result_and_mapping(gru_result):
    text = comparison_table(gru_result)
    assert "GRU" in text and "range=6" in text and "range=12" in text
    for suite in ("needle", "copy", "multi_hop", "perplexity"):
        assert suite in text
    needle6 = gru_result["suites"]["needle"][0]
    assert (
        f"{needle6['accuracy']:.2f} / {needle6['proxy_accuracy']:.2f} / {needle6['loss']:.3f}"
        in text
    )
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
    assert f"- / {c['proxy_accuracy']:.2f} / {c['loss']:.3f}" in text
