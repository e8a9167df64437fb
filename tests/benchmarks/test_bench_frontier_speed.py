"""benchmarks/bench_frontier_speed.py: workers take turns and report; bad arguments are refused."""

import importlib.util
from pathlib import Path

import pytest

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


def test_the_matmul_peak_is_positive():
    assert bench.matmul_peak_gflops(n=64, repeats=2) > 0


@pytest.mark.parametrize("argv", [
    ["--mechanisms", "Nope"], ["--precisions", "16-mixed"], ["--steps", "0"], ["--baseline", "/nonexistent"],
])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        bench.main(argv)
