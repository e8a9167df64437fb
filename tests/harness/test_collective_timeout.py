"""A distributed run whose other rank stopped (SIGSTOP) ends after --collective_timeout with one
line and exit 1, the stopped rank killed, instead of waiting for torch.distributed's 30 minutes."""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from swar_bench.lightning_cli import main
from tests.harness.processes import child

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_stopped_rank_ends_the_run_in_one_line(tmp_path, monkeypatch):
    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", str(CONFIGS / "quickstart.yaml"),
            "--config", str(CONFIGS / "ddp.yaml"), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--model.mechanism.init_args.n_layers=1", "--data.batch_size=2", "--data.val_configs=[32]",
            "--data.eval_examples=2", "--trainer.max_steps=100000", "--trainer.val_check_interval=100000",
            "--trainer.enable_progress_bar=false", "--collective_timeout=30",  # > a loaded start-up
            f"--trainer.logger.init_args.save_dir={tmp_path}"]
    for var in [v for v in os.environ if v.startswith(("SLURM_", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_"))]:
        monkeypatch.delenv(var)
    stopped: list[int] = []
    try:
        with child(argv) as proc:
            deadline = time.monotonic() + 240
            seen = ""
            while "swar-bench fit: GRU" not in seen:  # rank 0 set up: the ranks have met
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, seen
                ready, _, _ = select.select([proc.stdout], [], [], 1.0)
                if ready:
                    seen += proc.stdout.readline()
            ranks = []
            while not ranks:  # the second rank, launched by the first
                ranks = [p for p in _children(proc.pid) if "swar_bench" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
                assert time.monotonic() < deadline
                time.sleep(0.05)  # polling an event (the child listed), not a fixed wait
            for pid in ranks:
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            start = time.monotonic()
            _, err = proc.communicate(timeout=180)
            waited = time.monotonic() - start
        assert proc.returncode == 1, err[-3000:]
        lines = [ln for ln in err.splitlines() if ln.startswith("swar-bench")]
        assert len(lines) == 1 and lines[0].startswith("swar-bench: FAILED: a collective of the distributed run timed out"), err[-3000:]
        assert "Traceback" not in err
        assert waited < 150  # the 30 s timeout, not torch.distributed's 30 minutes
        assert not any(_alive(pid) for pid in stopped)  # the stopped rank went with the run
    finally:
        for pid in stopped:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf"])
def test_a_collective_timeout_that_is_not_a_positive_number_is_one_line(capsys, value):
    assert main(["fit", "--model.mechanism=GRU", f"--collective_timeout={value}"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert len(err) == 1 and "--collective_timeout=" in err[0] and "expected a positive number of seconds" in err[0], err
