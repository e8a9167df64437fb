"""A `study run` stopped by SIGTERM stops its fits (exit 143) as Ctrl-C does (130); one killed by
SIGKILL takes its fits with it, and its folders stay locked until they have ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swar_bench.study.attempts import read_attempts
from swar_bench.study.paths import holding_study
from swar_bench.study.spec import load_study
from swar_bench.study.status import run_states
from swar_bench.utils.locks import FolderLockedError
from tests.study.test_study_cli import _study
from tests.study.test_study_faults import ONE_RUN, ROOT, RUN

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# the study's fits are a stand-in (argv[3]) that writes its pid, then waits for a signal
HOLDER = """import sys
from swar_bench.study import runner
runner.SWAR_BENCH = [sys.executable, "-c", sys.argv[3], sys.argv[2]]
from swar_bench.study.cli import main
sys.exit(main(["run", sys.argv[1], "--jobs", "1"]))
"""
WAITS = "import os, signal, sys; open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()"
# stops on SIGTERM as a fit does (exit 143), noting the signal beside its pid file
STOPS = """import os, signal, sys
def stop(signum, frame):
    open(sys.argv[1] + ".signal", "w").write(signal.Signals(signum).name)
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1], "w").write(str(os.getpid()))
while True:
    signal.pause()
"""
IGNORES_SIGTERM = ("import os, signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()")


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _start(tmp_path: Path, fit: str = WAITS) -> tuple[subprocess.Popen, int]:
    study = _study(tmp_path, ONE_RUN)
    pid_file = tmp_path / "fit.pid"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(study), str(pid_file), fit], cwd=ROOT, env=env,
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



def _end(pid: int) -> None:
    """SIGKILL a stand-in fit this test started, if it still runs."""
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        _wait_ended(pid)


def test_a_killed_study_stops_its_fits(tmp_path):
    # reported: SIGKILL of `study run` left its fit training, orphaned, and the study's folders unlocked
    proc, fit = _start(tmp_path, STOPS)
    try:
        proc.kill()
        assert proc.wait(timeout=300) == -signal.SIGKILL
        assert _wait_ended(fit, limit_s=60), "the fit trained on after its study was killed"
    finally:
        _end(fit)
    # stopped as by SIGTERM: the attempt is one that ended without notice (the next run resumes it
    # from its newest checkpoint, or starts afresh without one), and the folders are free again
    assert (tmp_path / "fit.pid.signal").read_text() == "SIGTERM"
    saved = read_attempts(tmp_path / "runs" / RUN)
    assert saved is not None and saved["attempts"][-1]["wall_s"] is None
    with holding_study([tmp_path / "runs", tmp_path / "records"], "probe"):
        pass


def test_the_fits_of_a_killed_study_hold_its_folders_until_they_end(tmp_path):
    # a fit that outlives its killed study (here: it ignores SIGTERM) keeps the study's folders
    # locked: a next `run` is refused instead of writing into its run folder; status says running
    proc, fit = _start(tmp_path, IGNORES_SIGTERM)
    try:
        proc.kill()
        proc.wait(timeout=300)
        assert _alive(fit)
        for folder in (tmp_path / "runs", tmp_path / "records"):
            with pytest.raises(FolderLockedError, match="is in use by pid"), holding_study([folder], "probe"):
                pass
        assert ("GRU_tiny", f"fit {RUN}", "running") in run_states(load_study(tmp_path / "study.yaml"))
        os.kill(fit, signal.SIGKILL)
        assert _wait_ended(fit)
    finally:
        _end(fit)
    with holding_study([tmp_path / "runs", tmp_path / "records"], "probe"):  # released with the last fit
        pass
