"""scripts/gpu_check.sh without a GPU: its options, the refusal without CUDA, and every command it
would run parsed by its own program (fit and referee via --print_config, the benchmark run small
on the CPU)."""

import importlib.util
import itertools
import shlex
import subprocess
import sys
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def _run(*args, env=None):
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _commands(out: Path) -> dict[str, tuple[int, list[str]]]:
    result = _run("--dry-run", "--python", sys.executable, "--out", str(out))
    assert result.returncode == 0, result.stderr
    steps = {}
    for line in result.stdout.splitlines():
        name, rest = line.split(" (limit ", 1)
        limit, command = rest.split(" s): ", 1)
        steps[name] = (int(limit), shlex.split(command))
    return steps


def test_dry_run_lists_four_steps_within_eight_minutes(tmp_path):
    steps = _commands(tmp_path)
    assert list(steps) == ["pytest_cuda", "fit_fsdp", "bench_fla_vs_torch", "referee_two_ranges"]
    assert sum(limit for limit, _ in steps.values()) <= 8 * 60 - 30  # leaves time for start-up
    assert (
        steps["pytest_cuda"][1][-4:] == ["-m", "cuda", "-q", "-p", "no:cacheprovider", "tests"][-4:]
    )
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_usage_errors_and_no_cuda_are_one_line_exit_2():
    bad = _run("--bogus")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "unknown option '--bogus'" in bad.stderr
    assert _run("--out").returncode == 2
    assert "usage: scripts/gpu_check.sh" in _run("--help").stdout
    if not _cuda():
        no_gpu = _run("--python", sys.executable)
        assert no_gpu.returncode == 2
        assert "sees no CUDA device" in no_gpu.stderr


def _print_config(command: list[str], capsys) -> dict:
    """``command`` (``python -m swar_bench.cli ...``) with --print_config, in this process."""
    from swar_bench.cli import main

    assert command[1:3] == ["-m", "swar_bench.cli"]
    try:
        code = main([*command[3:], "--print_config"])
    except SystemExit as done:  # jsonargparse exits after printing
        code = done.code
    assert code in (0, None)
    return yaml.safe_load(capsys.readouterr().out)


def test_fit_and_referee_commands_parse(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    steps = _commands(tmp_path)
    config = _print_config(steps["fit_fsdp"][1], capsys)
    assert config["trainer"]["max_steps"] == 50
    assert (
        config["trainer"]["strategy"]["class_path"] == "lightning.pytorch.strategies.FSDPStrategy"
    )
    config = _print_config(steps["referee_two_ranges"][1], capsys)
    assert config["ranges"] == [1000, 10000] and config["device"] == "cuda"


def test_benchmark_command_runs_small_on_the_cpu(tmp_path, capsys):
    _, command = _commands(tmp_path)["bench_fla_vs_torch"]
    assert command[1] == "benchmarks/bench_training.py"
    small = {"--device": "cpu", "--d-model": "32", "--n-heads": "2", "--seq-len": "64",
             "--batch-size": "2", "--warmup": "1", "--repeats": "1"}  # fmt: skip
    args = [small.get(prev, a) for prev, a in itertools.pairwise(command[1:]) if a != "--bf16"]
    spec = importlib.util.spec_from_file_location("bench_training", ROOT / command[1])
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    threads = torch.get_num_threads()
    try:
        assert bench.main(args) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "| GatedDeltaNet | torch |" in out
    if not torch.cuda.is_available():
        assert "GatedDeltaNet (fla): not run: backend='fla' needs a CUDA tensor" in out
        assert "ratio GatedDeltaNet" not in out


def _cuda():
    return torch.cuda.is_available()


def test_every_command_runs_as_the_words_it_prints(tmp_path):
    """Each step's arguments reach the program as printed, whatever --out holds: a space and glob
    characters (``[x]`` would match the folder ``x`` made here; ``[1000,10000]`` a file named 1)."""
    import json
    import os

    calls = tmp_path / "calls.jsonl"
    fake = tmp_path / "python"  # stands in for the interpreter: records its arguments, succeeds
    fake.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c 'import json, os, sys; "
                    "open(os.environ[\"FAKE_PYTHON_LOG\"], \"a\").write(json.dumps(sys.argv[1:]) + \"\\n\")' \"$@\"\n")
    fake.chmod(0o755)
    out = tmp_path / "a b" / "[x]"
    (tmp_path / "a b" / "x" / "fit").mkdir(parents=True)  # what an unquoted "$OUT/fit" would glob to
    (tmp_path / "a b" / "x" / "referee").mkdir()
    printed = {name: command for name, (_, command) in _commands(out).items()}  # --dry-run, read with shlex
    assert printed["fit_fsdp"][-1] == f"{out}/fit" and printed["referee_two_ranges"][-3:] == [
        "cuda", "--out", f"{out}/referee"]
    result = subprocess.run(["bash", str(SCRIPT), "--python", str(fake), "--out", str(out)], capture_output=True,
                            text=True, timeout=120, check=False, env={**os.environ, "FAKE_PYTHON_LOG": str(calls)})
    assert result.returncode == 0, result.stdout + result.stderr
    ran = [json.loads(line) for line in calls.read_text().splitlines()][1:]  # after the CUDA probe
    assert ran == [command[1:] for command in printed.values()]
    assert ran[-1][ran[-1].index("--ranges") + 1] == "[1000,10000]"
