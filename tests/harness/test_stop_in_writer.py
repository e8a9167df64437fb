"""A Ctrl-C that lands while TensorBoard's event-file writer is being made (found by sending
SIGINT at each Python call after the writer's constructor is entered, the moment a run's event
file appears): inside its thread's start or its first flush, CPython's lock handling turned the
KeyboardInterrupt into `RuntimeError: release unlocked lock` (a traceback, exit 1); or the
writer's thread, left running, wrote into the run folder after the stopped run had removed it
(`Exception in thread ... FileNotFoundError` after the stop's line). The writers are now made with
the stop held (`run_folders.make_writers`), and any error after a recorded stop is that stop."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.summary.writer import event_file_writer

from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART


def _argv(tmp_path) -> list[str]:
    return ["fit", "--config", QUICKSTART, "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--data.eval_examples=2", "--trainer.max_steps=2", "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false", f"--trainer.logger.init_args.save_dir={tmp_path}",
            f"--checkpoint.dirpath={tmp_path / 'ckpt'}"]


def _writer_threads(tmp_path) -> list[threading.Thread]:
    """TensorBoard writer threads still running whose file is under ``tmp_path``."""
    found = []
    for thread in threading.enumerate():
        writer = getattr(getattr(thread, "_record_writer", None), "_writer", None)
        name = getattr(writer, "filename", b"")
        name = name.decode() if isinstance(name, bytes) else str(name)
        if thread.is_alive() and name.startswith(str(tmp_path)):
            found.append(thread)
    return found


def _check_stopped(capsys, tmp_path, code: int) -> None:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 130, captured.err[-3000:]
    assert lines[-1] == "swar-bench: interrupted", captured.err[-3000:]
    assert "Traceback" not in captured.err and "Exception in thread" not in captured.err, captured.err[-3000:]
    assert not (tmp_path / "quickstart").exists()  # the stopped run produced nothing: no run folder left
    assert _writer_threads(tmp_path) == []  # closed, not writing into a removed folder


def test_the_reported_stop_inside_the_writers_first_flush_is_the_stop_line(tmp_path, capsys, monkeypatch):
    """The reported moment: SIGINT while the new writer flushes its first event (queue.join)."""
    flush = event_file_writer.EventFileWriter.flush
    sent = []

    def flush_after_a_signal(self):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return flush(self)

    monkeypatch.setattr(event_file_writer.EventFileWriter, "flush", flush_after_a_signal)
    _check_stopped(capsys, tmp_path, main(_argv(tmp_path)))
    assert sent


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 160))
def test_a_stop_at_any_call_while_the_writer_is_made_is_the_stop_line(tmp_path_factory, capsys, monkeypatch, k):
    """The kind: SIGINT at the k-th Python call after the writer's constructor is entered (its
    thread's start, its locks, its first event and flush; k past its end: Lightning's set-up),
    one line, 130, nothing left behind."""
    tmp = tmp_path_factory.mktemp("w")
    init = event_file_writer.EventFileWriter.__init__
    calls = [0]

    def count(frame, event, arg):
        if event == "call":
            calls[0] += 1
            if calls[0] == k:
                sys.setprofile(None)
                os.kill(os.getpid(), signal.SIGINT)

    def init_with_a_signal(self, *args, **kwargs):
        if calls[0] == 0:
            sys.setprofile(count)
        return init(self, *args, **kwargs)

    monkeypatch.setattr(event_file_writer.EventFileWriter, "__init__", init_with_a_signal)
    try:
        code = main(_argv(tmp))
    finally:
        sys.setprofile(None)
    assert calls[0] == k  # sent: the run's set-up alone makes thousands of calls
    _check_stopped(capsys, tmp, code)


ERRORS = [RuntimeError("release unlocked lock"), ValueError("x"), OSError(5, "Input/output error"), TypeError("y"),
          KeyError("z")]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(error=st.sampled_from(ERRORS), signame=st.sampled_from(["SIGINT", "SIGTERM"]),
       where=st.sampled_from(["command", "fit"]))
def test_any_error_after_a_recorded_stop_is_that_stop(capsys, error, signame, where):
    """The kind behind `RuntimeError: release unlocked lock`: whatever error a stop turns into where
    it lands, a command that recorded the stop ends with the stop's line and 128 + the signal: the
    `interrupts.command` frame (data, referee, study, check-mechanism) and fit/demo's exit status."""
    from swar_bench.harness.errors import exit_status
    from swar_bench.utils import interrupts

    signum = getattr(signal, signame)

    def body() -> int:
        with interrupts.deferred():  # recorded, not raised: the section ends by the error below
            os.kill(os.getpid(), signum)
            raise error

    if where == "command":
        code = interrupts.command("swar-bench data show", body)
        prog = "swar-bench data show"
    else:
        from swar_bench.harness.stops import flag_sigint

        previous = flag_sigint()  # as fit's main: no trainer of an earlier run to name a checkpoint of
        try:
            try:
                body()
            except Exception as err:  # noqa: BLE001 - the error the run ended in
                code = exit_status(err, ["fit"], ["fit"])
        finally:
            interrupts.restore(previous)
        prog = "swar-bench"
    words = "interrupted" if signame == "SIGINT" else "terminated (SIGTERM)"
    assert code == 128 + signum
    assert capsys.readouterr().err.strip().splitlines() == [f"{prog}: {words}"]


def test_an_error_without_a_recorded_stop_is_still_raised():
    from swar_bench.utils import interrupts

    def body() -> int:
        raise RuntimeError("release unlocked lock")

    try:
        interrupts.command("swar-bench data show", body)
    except RuntimeError as err:
        assert str(err) == "release unlocked lock"
    else:
        raise AssertionError("the error was swallowed")


@pytest.mark.parametrize("command", ["demo", "fit"])
def test_sigterm_is_handled_from_the_first_step_of_the_command(monkeypatch, command):
    """Fault (new-user check): SIGTERM 4.3-4.9 s after `swar-bench demo` started killed it without a
    word (wait status -15): `swar-bench`'s dispatcher puts SIGTERM back to its default for the
    command, and the demo parsed its options (importing Lightning, half a second) before installing
    its handler. Now the first thing the command does, fit's and demo's alike, is install it."""
    from swar_bench import demo, lightning_cli
    from swar_bench.cli import main as swar_main
    from swar_bench.utils import interrupts

    seen = []

    def first_step(*args, **kwargs):
        seen.append(signal.getsignal(signal.SIGTERM))
        raise SystemExit(2)

    if command == "demo":
        monkeypatch.setattr(demo, "_parse", first_step)
    else:
        monkeypatch.setattr(lightning_cli, "check_no_dashes_value", first_step)
    try:
        swar_main([command, "--trainer.max_steps=1"])
    except SystemExit:  # the demo's parse error ends as argparse's
        pass
    assert seen == [interrupts.on_sigterm]
