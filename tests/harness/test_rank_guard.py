"""The ranks of a DDP run end with the process that started them (fault: ranks of runs whose rank 0
was killed waited in the rendezvous for --collective_timeout, holding their memory, and runs
killed one after another filled the machine until the out-of-memory killer stepped in):
``swar_bench.utils.ranks.guard_rank``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.ranks import LAUNCHER_PID, guard_rank
from tests.harness.cli_lines import QUICKSTART

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, uses prctl")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _environ(pid: int) -> bytes:
    """The environment of process ``pid``; empty once it has ended (a short-lived child of rank 0
    can end between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("when", ["rendezvous", "training"])
def test_a_killed_rank_zero_takes_its_ranks_with_it(tmp_path, when):
    """Rank 0 of a two-process DDP fit killed by SIGKILL (no handler runs): rank 1 ends too, long
    before the collective timeout (300 s here) it would otherwise wait out."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(LAUNCHER_PID, None)
    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", QUICKSTART, "--trainer.devices=2",
            "--trainer.max_steps=100000", "--collective_timeout=300", "--trainer.enable_progress_bar=false"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rank = []
    try:
        deadline = time.monotonic() + 300  # a bound on a hang (imports are slow on a loaded machine)
        while not rank and proc.poll() is None and time.monotonic() < deadline:
            rank = [p for p in _children(proc.pid) if b"LOCAL_RANK=1" in _environ(p)]
            time.sleep(0.05)  # the event: rank 1 started
        assert rank, proc.communicate(timeout=60)
        if when == "training":  # the event: a checkpoint of a step, written once both ranks trained
            ckpts = tmp_path / "runs"
            while not list(ckpts.rglob("*.ckpt")) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        ended = time.monotonic() + 120  # far below the 300 s the rank would wait
        while _alive(rank[0]) and time.monotonic() < ended:
            time.sleep(0.05)
        assert not _alive(rank[0]), f"rank 1 (pid {rank[0]}) outlived its rank 0"
    finally:
        for pid in _children(proc.pid) + rank + [proc.pid]:  # a rank that outlived rank 0 is no child now
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


GUARD = """import os, sys
from swar_bench.utils.ranks import guard_rank
try:
    print(guard_rank(), os.environ.get("SWAR_BENCH_LAUNCHER_PID"))
except SystemExit as stop:
    print("exit", stop.code)
"""


@settings(max_examples=12, deadline=None)
@given(local_rank=st.sampled_from([None, "", "0", "1", "3"]), launcher=st.sampled_from([None, "", "parent", "other", "x"]))
def test_guard_rank_guards_exactly_the_ranks_of_a_live_launcher(local_rank, launcher):
    """The kind: any LOCAL_RANK and launcher pid in the environment. A process that is no rank (no
    LOCAL_RANK, or 0) or has no launcher pid records itself as the launcher; a rank whose launcher
    is its parent is guarded; one whose parent is not its launcher exits 143 at once."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", LAUNCHER_PID)}
    env["PYTHONPATH"] = str(ROOT)
    if local_rank is not None:
        env["LOCAL_RANK"] = local_rank
    pid = {"parent": str(os.getpid()), "other": str(os.getpid() + 100000), "x": "x", "": ""}.get(launcher)
    if pid is not None:
        env[LAUNCHER_PID] = pid
    out = subprocess.run([sys.executable, "-c", GUARD], env=env, capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    is_rank = local_rank not in (None, "", "0") and launcher in ("parent", "other")
    if not is_rank:
        assert out[0] == "False" and out[1].isdigit()  # its own pid, for the ranks it starts
    elif launcher == "parent":
        assert out == ["True", str(os.getpid())]
    else:
        assert out == ["exit", "143"]


def test_this_process_is_a_launcher(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv(LAUNCHER_PID, raising=False)
    assert guard_rank() is False and os.environ[LAUNCHER_PID] == str(os.getpid())


def test_rank_zero_stopped_in_the_rendezvous_is_one_line(tmp_path):
    """Rank 0 of a three-process DDP fit stopped by SIGTERM while the ranks meet: its one line and
    143; the other ranks end quietly (they printed DistNetworkError tracebacks and c10d warnings
    when rank 0 closed its store under them)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(LAUNCHER_PID, None)
    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", QUICKSTART, "--trainer.devices=3",
            "--trainer.max_steps=100000", "--trainer.enable_progress_bar=false"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ranks = []
    try:
        deadline = time.monotonic() + 300  # a bound on a hang
        while len(ranks) < 2 and proc.poll() is None and time.monotonic() < deadline:
            ranks = _children(proc.pid)
            time.sleep(0.05)  # the event: both other ranks started
        assert len(ranks) == 2, proc.communicate(timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=300)
        ended = time.monotonic() + 120
        while any(_alive(p) for p in ranks) and time.monotonic() < ended:
            time.sleep(0.05)
    finally:
        for pid in ranks + [proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    assert proc.returncode == 143, out
    assert out.rstrip().splitlines()[-1].startswith("swar-bench: terminated (SIGTERM)"), out
    assert "Traceback" not in out and "TCPStore" not in out, out
    assert not any(_alive(p) for p in ranks)
