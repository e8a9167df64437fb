"""A `study run` stopped by SIGTERM stops its fits (exit 143) as Ctrl-C does (130)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.study.test_study_cli import _study
from tests.study.test_study_faults import ONE_RUN, ROOT, RUN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# the study's fits are a stand-in that writes its pid, then waits for a signal
HOLDER = """import sys
from swar_bench.study import runner
runner.SWAR_BENCH = [sys.executable, "-c",
    "import os, signal, sys; open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()", sys.argv[2]]
from swar_bench.study.cli import main
sys.exit(main(["run", sys.argv[1], "--jobs", "1"]))
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _start(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    study = _study(tmp_path, ONE_RUN)
    pid_file = tmp_path / "fit.pid"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(study), str(pid_file)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while not pid_file.is_file() or not pid_file.read_text():  # the fit's own event: its pid written
        try:
            proc.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"the study ended (exit {proc.returncode}): {proc.stdout.read()}")
    return proc, int(pid_file.read_text())


def _wait_ended(pid: int, limit_s: float = 120.0) -> bool:
    deadline = time.monotonic() + limit_s  # a bound on a hang, not a wait for an event
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.mark.parametrize(("signum", "status", "said"), [(signal.SIGTERM, 143, "study: terminated (SIGTERM)"),
                                                     (signal.SIGINT, 130, "study: interrupted")])
def test_a_signalled_study_stops_its_fits(tmp_path, signum, status, said):
    # reported: SIGTERM ended the study (143) while its fit trained on to the end
    proc, fit = _start(tmp_path)
    try:
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, out
    assert said in out
    assert _wait_ended(fit), "the fit trained on after its study was terminated"
    assert not (tmp_path / "runs" / f"{RUN}.running").exists()

