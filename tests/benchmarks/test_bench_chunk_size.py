"""benchmarks/bench_chunk_size.py: one small run prints a row per chunk size, the config's first."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_chunk_size.py"
_spec = importlib.util.spec_from_file_location("bench_chunk_size", BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_one_round_prints_each_chunk_size_with_its_ratio(capsys):
    default = bench.config_init_args("GatedDeltaNet")["chunk_size"]
    other = 8 if default != 8 else 16
    assert bench.main(["--mechanisms", "GatedDeltaNet", "--chunks", str(other), "--batch-size", "2",
                       "--rounds", "1", "--warmup", "0"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| GatedDeltaNet")]
    assert [r.split("|")[2].strip() for r in rows] == [f"{default} (config)", str(other)]
    assert rows[0].split("|")[5].strip() == "1.00x"
    assert float(rows[1].split("|")[6]) <= 1e-5  # the chunk forms agree within float32 rounding


def test_every_benchmarked_mechanism_has_a_chunked_config():
    for name in bench.CONFIGS:
        assert "chunk_size" in bench.config_init_args(name)


@pytest.mark.parametrize("argv", [["--mechanisms", "Nope"], ["--chunks", "0"], ["--chunks", "x"], ["--rounds", "0"]])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        bench.main(argv)
