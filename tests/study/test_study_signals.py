"""A `study run` stopped by SIGTERM stops its fits (exit 143) as Ctrl-C does (130); one killed by
SIGKILL takes its fits with it, and its folders stay locked until they have ended. `study status`,
`report` and `site` stopped by either end with one line too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _await_file(proc: subprocess.Popen, path: Path) -> None:
    """Return once ``path`` holds text written by ``proc``'s work (the event), polled while
    ``proc`` lives; fails with its output when it ends first."""
    while not path.is_file() or not path.read_text():
        try:
            proc.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"ended first (exit {proc.returncode}): {proc.communicate()}")


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


# ----------------------------------------------------------------- status, report and site stopped

REPORTER = """import os, sys
from swar_bench.study import report
def working(spec, out):
    open(sys.argv[2], "w").write(str(os.getpid()))
    while True:  # the report being made, until a signal stops it
        pass
report.write_report = working
from swar_bench.cli import main
sys.exit(main(["study", "report", sys.argv[1], "--out", sys.argv[3]]))
"""


def test_the_reported_report_stopped_by_sigterm_says_so(tmp_path):
    """Reported: `study report` ended by SIGTERM exited 143 without a word. Now, stopped while it
    makes the report (its marker written), it ends with one line, 143, and writes nothing."""
    study = _study(tmp_path, ONE_RUN)
    marker, out = tmp_path / "working", tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", REPORTER, str(study), str(marker), str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _await_file(proc, marker)  # the event: the report is being made
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, stderr
    assert stderr == "swar-bench study report: terminated (SIGTERM)\n" and stdout == ""
    assert not out.exists()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["status", "report", "site", "run"]), mqar=st.booleans(),
       stop=st.sampled_from([None, "sigterm", "ctrl-c"]))
def test_every_study_command_is_stopped_with_one_line(tmp_path_factory, monkeypatch, capsys, command, mqar, stop):
    """The kind: `study status`, `report`, `site` and `run` (reported: `run` stopped in its first
    seconds exited 143 without a line), of a study of the task or of MQAR, hold SIGTERM's handler
    from their first step; stopped there (by SIGTERM or Ctrl-C) each ends with one line and 143
    or 130, and the handlers are the caller's again afterwards."""
    from swar_bench.study import cli
    from swar_bench.utils import interrupts

    study = ROOT / "configs" / "studies" / ("mqar_zoology.yaml" if mqar else "frontier.yaml")
    seen = []

    def working(path):  # the first step of every study command's work
        seen.append(signal.getsignal(signal.SIGTERM))
        if stop == "sigterm":
            raise interrupts.Terminated
        if stop == "ctrl-c":
            raise KeyboardInterrupt
        raise cli.StudyError("stopped here")

    monkeypatch.setattr(cli, "study_file_problem", working)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    extra = ["--out", str(tmp_path_factory.mktemp("o"))] if command == "site" else []
    status = cli.main([command, str(study), *extra])
    err = capsys.readouterr().err
    assert seen == [interrupts.on_sigterm]
    said = {None: (2, "error: stopped here"), "sigterm": (143, "terminated (SIGTERM)"), "ctrl-c": (130, "interrupted")}[stop]
    assert (status, err) == (said[0], f"swar-bench study {command}: {said[1]}\n")
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


MQAR_HOLDER = """import sys
from swar_bench.study import mqar
mqar.SWAR_BENCH = [sys.executable, "-c", sys.argv[3], sys.argv[2]]
from swar_bench.cli import main
sys.exit(main(["study", "run", sys.argv[1], "--jobs", "1"]))
"""


@pytest.mark.parametrize(("signum", "status", "said"), [(signal.SIGTERM, 143, "study: terminated (SIGTERM)"),
                                                        (signal.SIGINT, 130, "study: interrupted")])
def test_an_mqar_study_run_stops_its_fit_and_says_so(tmp_path, signum, status, said):
    """An MQAR `study run` stopped while a fit runs: the fit gets the same signal (and stops as a
    fit does), no other fit starts, no record is written, and the study ends with one line and
    its status (it ended silently with 143, its fits stopped only by its death)."""
    from tests.study.test_mqar_study import write_study

    study = write_study(tmp_path)
    pid_file = tmp_path / "fit.pid"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", MQAR_HOLDER, str(study), str(pid_file), STOPS], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        _await_file(proc, pid_file)  # the event: the fit wrote its pid
        fit = int(pid_file.read_text())
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, out + err
    # the stop line is the last of stderr; stdout holds only the progress ("study: fit X")
    assert err.splitlines()[-1].startswith(f"{said}; `swar-bench study run {study}` continues from the records"), err
    assert said not in out and out.startswith("study: fit "), out
    assert "Traceback" not in out + err and _wait_ended(fit)
    if signum == signal.SIGTERM:  # the stand-in notes SIGTERM; SIGINT ends it by KeyboardInterrupt
        assert (tmp_path / "fit.pid.signal").read_text() == "SIGTERM"
    assert len(list((tmp_path / "runs").glob("*.fit.log"))) == 1  # the second rate never started
    assert not list((tmp_path / "records").glob("*.json"))
