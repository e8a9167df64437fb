"""Output piped into a reader that stops early (`swar-bench --help | head -1`) ends quietly (fault:
`swar-bench --help | head -1` and `swar-bench study status configs/studies/frontier.yaml | head -1`
ended in a `BrokenPipeError` traceback, exit 1). Now nothing is printed on stderr and the exit
status is 141 (128 + SIGPIPE), as for a shell tool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _piped(argv: list[str], keep: int) -> tuple[int, str, bytes]:
    """Run ``swar-bench ARGV`` with stdout a pipe whose reader takes ``keep`` bytes (at most) and
    closes it; (exit status, stderr, what was read)."""
    proc = subprocess.Popen([sys.executable, "-m", "swar_bench.cli", *argv], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    taken = proc.stdout.read(keep) if keep else b""
    proc.stdout.close()  # the reader is gone (head -1 exits)
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), err, taken


@pytest.mark.parametrize("argv", [["--help"], ["study", "status", "configs/studies/frontier.yaml"]],
                         ids=["--help", "study status"])
def test_the_reported_pipes_end_quietly(argv):
    status, err, taken = _piped(argv, 20)
    assert err == "" and status in (0, 141), err
    assert taken


COMMANDS = [["--help"], ["data", "--help"], ["referee", "compare", "--help"], ["study", "run", "--help"],
            ["study", "status", "configs/studies/frontier.yaml"], ["data", "show", "--config", "n32"],
            ["check-mechanism", "--help"], ["--version"]]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.sampled_from(COMMANDS), keep=st.integers(0, 300))
def test_any_command_whose_reader_leaves_early_ends_without_a_traceback(argv, keep):
    """The kind: any command's output, its reader gone after any number of bytes (none included):
    no traceback, nothing on stderr, exit 0 (all of it fitted in the pipe) or 141."""
    status, err, _ = _piped(argv, keep)
    assert "Traceback" not in err and "BrokenPipe" not in err and err == "", err
    assert status in (0, 141)


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_command_whose_reader_took_nothing_ends_quietly(argv):
    """Each command once with a reader that takes nothing (found by the property above: `data show
    --config n32` with the pipe closed at once caught the BrokenPipeError itself and exited 1)."""
    status, err, _ = _piped(argv, 0)
    assert err == "" and status in (0, 141), (status, err)
