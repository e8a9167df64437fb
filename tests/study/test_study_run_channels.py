"""`swar-bench study run`'s two channels: progress ("study: fit X ...", "study: test X ...",
"study: skip X ...") on stdout; every line of a failed, refused or stopped run and the study's
last line when it stops or fails ("study: stopped ...", "study: interrupted ...", "N run(s)
failed") on stderr. Reported: the refusal of a fit and the "study: stopped ..." line came on
stdout. The fits here are stand-ins (``children.launch`` faked): no training."""

from __future__ import annotations

import contextlib
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import children
from swar_bench.study import runner as runner_module
from swar_bench.study.cli import main
from tests.study.test_study_cli import _study

RUN = "GRU_tiny_lr0.001_seed0"
ONE_RUN = "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\nselection_seeds: 1\nseeds: 1\n"
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ERROR_WORDS = ("failed", "refused its command", "study: stopped", "study: interrupted", "study: terminated",
               "without a record")
"""What a line of a failed, refused or stopped run, or of the study's stop, says."""


class _Ended:
    """A stand-in fit or test that has ended with ``rc`` (``children.launch``'s process)."""

    pid = os.getpid()

    def __init__(self, rc: int):
        self.rc = rc

    def wait(self) -> int:
        return self.rc

    def send_signal(self, signum: int) -> None:  # stopped with the study: it has ended already
        pass

    def kill(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _fake_runs(monkeypatch, statuses: list[int], said: str = "") -> list[tuple[str, int]]:
    """Fits and tests end with ``statuses`` in turn (then 0), writing ``said`` to their log; a fit
    that ends with 0 leaves a checkpoint and a final validation that passes the gate. The
    ``(kind, exit status)`` of every run started, in order."""
    started: list[tuple[str, int]] = []

    def launch(command, stdout=None, **popen):
        rc = statuses[len(started)] if len(started) < len(statuses) else 0
        args = command[len(runner_module.SWAR_BENCH):] if command[:1] == runner_module.SWAR_BENCH[:1] else command
        kind = next(a for a in args if a in ("fit", "test"))
        started.append((kind, rc))
        if stdout is not None and said:
            stdout.write(said + "\n")
            stdout.flush()
        folder = next((a.split("=", 1)[1] for a in args if a.startswith("--checkpoint.dirpath=")), None)
        if rc == 0 and folder is not None:
            os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, "last.ckpt"), "wb").close()
        return _Ended(rc)

    class Passes(dict):  # every accuracy of the final validation is 1.0: the gate passes
        def get(self, key, default=None):
            return 1.0

    monkeypatch.setattr(children, "launch", launch)
    monkeypatch.setattr(runner_module, "_tokens_seen", lambda ckpt: 0)
    monkeypatch.setattr(runner_module, "final_validation", lambda rows: (10, Passes()))
    monkeypatch.setattr(runner_module, "read_csv_rows", lambda path: [])
    return started


def _is_error(line: str) -> bool:
    return any(word in line for word in ERROR_WORDS)


def _run_failed(line: str) -> bool:
    """Whether ``line`` is the line of one fit or test that failed or refused its command."""
    return line.startswith(("study: fit ", "study: test ")) and (" failed (exit " in line or
                                                                  " refused its command (exit 2)" in line)


# ----------------------------------------------------------------- the reported case


def test_a_refused_fit_and_the_stop_are_on_stderr_and_nothing_on_stdout(tmp_path, monkeypatch, capsys):
    """The reported case: a fit that refused its command (exit 2). Its refusal and the study's
    "stopped" line were printed on stdout; now both are on stderr, and stdout is empty."""
    said = "swar-bench: error: --model.lr=fast is invalid; expected a number"
    _fake_runs(monkeypatch, [2], said)
    study = _study(tmp_path, ONE_RUN)
    assert main(["run", str(study), "--jobs", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        (f"study: fit {RUN} refused its command (exit 2): --model.lr=fast is invalid; expected a number; no other "
         "run starts: fix the study file or its config files and run again"),
        (f"study: stopped (exit 2: a run refused its command; fix what it names first); `swar-bench study run {study}` "
         "continues from the records"),
    ]


def test_a_failed_fit_is_on_stderr_its_finished_runs_on_stdout(tmp_path, monkeypatch, capsys):
    _fake_runs(monkeypatch, [1, 0])
    study = _study(tmp_path, ONE_RUN.replace("seeds: 1", "seeds: 2"))
    assert main(["run", str(study), "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    log = tmp_path / "runs" / f"{RUN}.fit.log"
    assert err.splitlines() == [f"study: fit {RUN} failed (exit 1); see {log}", f"study: 1 run(s) failed: fit {RUN}"]
    assert out.splitlines() == ["study: fit GRU_tiny_lr0.001_seed1: 0.0 min, score 1.000, gate passed",
                                "study: test GRU_tiny_lr0.001_seed1: 0.0 min"]


def test_an_mqar_refusal_is_on_stderr(tmp_path, monkeypatch, capsys):
    from tests.study.test_mqar_study import write_study

    _fake_runs(monkeypatch, [2], "swar-bench: error: --model.lr=fast is invalid; expected a number")
    study = write_study(tmp_path, learning_rates=[1.0e-2])
    assert main(["run", str(study), "--jobs", "1"]) == 2
    out, err = capsys.readouterr()
    name = "Att_d16_lr0.01"
    assert out.splitlines() == [f"study: fit {name}"]
    assert len(err.splitlines()) == 2 and err.startswith(f"study: fit {name} refused its command (exit 2): --model.lr")
    assert err.splitlines()[-1].startswith("study: stopped (exit 2: a run refused its command")


# ----------------------------------------------------------------- the kind: every outcome of every run


@SETTINGS
@given(statuses=st.lists(st.sampled_from([0, 0, 1, 2, 130, 143]), max_size=6), rates=st.integers(1, 2),
       seeds=st.integers(1, 2))
def test_every_failure_refusal_and_stop_is_on_stderr_every_progress_line_on_stdout(
        tmp_path_factory, monkeypatch, capsys, statuses, rates, seeds):
    """Whatever each fit and test of a study ends with (done, failed, refused, stopped by Ctrl-C
    or SIGTERM): one stdout line per run that finished, one stderr line per run that failed or
    refused, none of stdout says a failure or a stop, every line of stderr does, and the study's
    last word, when it did not finish, is the last line of stderr."""
    tmp = tmp_path_factory.mktemp("s")
    started = _fake_runs(monkeypatch, statuses)
    grid = ["1.0e-3", "3.0e-3"][:rates]
    study = _study(tmp, f"learning_rates: [{', '.join(grid)}]\nextra_learning_rates: {{below: [], above: []}}\n"
                        f"selection_seeds: 1\nseeds: {seeds}\n")
    status = main(["run", str(study), "--jobs", "1"])
    out, err = capsys.readouterr()
    out_lines, err_lines = out.splitlines(), err.splitlines()
    assert not [ln for ln in out_lines if _is_error(ln)], out
    assert all(_is_error(ln) for ln in err_lines), err
    assert len(out_lines) == sum(1 for _, rc in started if rc == 0)
    failed = [rc for _, rc in started if rc in (1, 2)]
    assert len([ln for ln in err_lines if _run_failed(ln)]) == len(failed)
    if status == 1:
        assert err_lines[-1].startswith(f"study: {len(failed)} run(s) failed: "), err
    elif status != 0:
        assert status in (2, 130, 143) and err_lines[-1].startswith(f"study: stopped (exit {status}"), err
    assert (status == 0) == (err == "")


@SETTINGS
@given(statuses=st.lists(st.sampled_from([0, 1, 2, 130, 143]), max_size=3), rates=st.integers(1, 3))
def test_every_mqar_failure_refusal_and_stop_is_on_stderr(tmp_path_factory, monkeypatch, capsys, statuses, rates):
    """The same for an MQAR study: "study: fit X" (started, done, skipped) on stdout, a failed or
    refused fit and the study's stop ("stopped ...", "interrupted", "terminated (SIGTERM)") on
    stderr."""
    from tests.study.test_mqar_study import write_study

    tmp = tmp_path_factory.mktemp("m")
    started = _fake_runs(monkeypatch, statuses)
    study = write_study(tmp, learning_rates=[1.0e-2, 3.0e-3, 1.0e-3][:rates])
    with contextlib.suppress(KeyboardInterrupt):
        status = main(["run", str(study), "--jobs", "1"])
    out, err = capsys.readouterr()
    out_lines, err_lines = out.splitlines(), err.splitlines()
    assert not [ln for ln in out_lines if _is_error(ln)], out
    assert all(_is_error(ln) for ln in err_lines), err
    assert len([ln for ln in out_lines if ln.startswith("study: fit ") and ": " not in ln[11:]]) == len(started)
    assert len([ln for ln in err_lines if _run_failed(ln)]) == sum(
        1 for _, rc in started if rc != 0)
    if status in (2, 130):
        assert err_lines[-1].startswith("study: stopped (exit 2" if status == 2 else "study: interrupted"), err
    assert (status == 0) == (err == "")


def test_the_slurm_planner_says_nothing_of_its_own_when_every_selection_fit_failed(tmp_path, capsys):
    """``--launcher slurm`` plans with the local protocol (its planner logs nothing): when every
    selection fit of a mechanism ended without a record, the launcher's own lines say so on its
    error channel, and nothing reaches the terminal besides them."""
    from swar_bench.study.spec import load_study
    from tests.study.test_launchers import FakeQueue, _launcher, _outcome

    spec = load_study(_study(tmp_path, "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                      "selection_seeds: 1\nseeds: 1\n"))
    launcher = _launcher(spec, FakeQueue(_outcome(0, 1.0), cancel={RUN, "GRU_tiny_lr0.003_seed0"}))
    assert launcher.run() == 1
    assert capsys.readouterr() == ("", "")
    assert launcher.errors[-1].startswith("study: 2 run(s) failed: ") and all(_is_error(ln) for ln in launcher.errors)
    assert not [ln for ln in launcher.lines if ln not in launcher.errors and _is_error(ln)]
