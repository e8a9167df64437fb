"""benchmarks/bench_frontier_speed.py: workers take turns and report; bad arguments are refused."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_frontier_speed.py"
_spec = importlib.util.spec_from_file_location("bench_frontier_speed", BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_a_side_by_side_run_of_this_tree_against_itself_reports_both_and_a_ratio(capsys):
    root = str(BENCH.parents[1])
    assert bench.main(["--mechanisms", "GatedLinearAttention", "--baseline", root, "--steps", "1",
                       "--rounds", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| GatedLinearAttention")]
    assert [r[3].strip() for r in rows] == ["this", "baseline"]
    assert float(rows[0][4].replace(",", "")) > 0 and rows[0][5].strip().endswith("%")
    assert rows[0][6].strip().endswith("x") and rows[1][6].strip() == "-"
    # one round: the per-round range is that round's ratio, printed twice
    low, high = rows[0][7].strip().split("..")
    assert low == high and rows[1][7].strip() == "-"
    assert f"imported {root}/swar_bench/__init__.py" in out


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 5), length=st.integers(0, 9), as_dict=st.booleans())
def test_tokens_are_counted_for_this_tree_s_batches_and_an_older_checkout_s_dicts(batch, length, as_dict):
    """An older checkout (a ``--baseline``) yields dict batches: counting its tokens raised
    AttributeError ('dict' object has no attribute 'input_ids') and ended its worker."""
    ids = torch.zeros(batch, length, dtype=torch.long)
    b = {"input_ids": ids, "labels": ids} if as_dict else SimpleNamespace(input_ids=ids)
    assert bench.batch_tokens(b) == batch * length


def test_the_matmul_peak_is_positive():
    assert bench.matmul_peak_gflops(n=64, repeats=2) > 0


@pytest.mark.parametrize("argv", [
    ["--mechanisms", "Nope"], ["--precisions", "16-mixed"], ["--steps", "0"], ["--baseline", "/nonexistent"],
])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        bench.main(argv)
