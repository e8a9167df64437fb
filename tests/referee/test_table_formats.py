"""The referee table writes each kind of number one way: FLOPs ``1.901e+11`` (never ``1.4e+11``
beside ``1.93e+11``), perplexities and accuracies with two decimals, counts with separators."""

import copy
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.referee.table import comparison_table

FLOPS = re.compile(r"\d\.\d{3}e[+-]\d{2}")


def _summary(text):
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("mechanism  n_params"))
    head, row = lines[i], lines[i + 1]
    return dict(zip(re.split(r"\s{2,}", head), re.split(r"\s{2,}", row)))


@settings(max_examples=25, deadline=None)
@given(train=st.floats(1e3, 1e15), extra=st.floats(0, 1e13), ppl=st.floats(1.0, 999.0), budget=st.floats(1e6, 1e14))
def test_every_number_of_a_kind_has_one_format(gru_result, train, extra, ppl, budget):
    r = copy.deepcopy(gru_result)
    r["flops"]["train"], r["flops"]["total"] = train, train + extra
    r["protocol"]["compute_budget_flops"] = budget
    for cell in r["suites"]["perplexity"]:
        cell["perplexity"] = ppl
    text = comparison_table(r)
    summary = _summary(text)
    assert summary["FLOPs train"] == f"{train:.3e}" and FLOPS.fullmatch(summary["FLOPs train"])
    assert summary["FLOPs total"] == f"{train + extra:.3e}"
    assert f"FLOP budget {budget:.3e} per ledger" in text.splitlines()[0]
    assert summary["n_params"] == f"{r['mechanism']['n_params']:,}"
    ppl_cells = re.findall(r"(\S+) / \d\.\d\d \[", text.split("perplexity (ppl / acc)")[1])
    assert ppl_cells and all(c == f"{ppl:.2f}" for c in ppl_cells)


def test_reported_case(gru_result):
    r = copy.deepcopy(gru_result)
    r["flops"]["train"], r["flops"]["total"] = 1.4e11, 1.93e11
    r["suites"]["perplexity"][0]["perplexity"] = 1.9
    text = comparison_table(r)
    assert "1.400e+11" in text and "1.930e+11" in text and "1.4e+11" not in text
    assert "1.90 / " in text
