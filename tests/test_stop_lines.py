"""Every command stopped by Ctrl-C or SIGTERM ends with the same words: ``PROG: interrupted`` (exit
130) or ``PROG: terminated (SIGTERM)`` (exit 143), then ``; how to resume`` where there is a way.

The reported fault: `fit` stopped by SIGTERM said "stopped by SIGTERM" where `data`, `referee`,
`study` and `check-mechanism` said "terminated (SIGTERM)"; one command's stop, two names. Each
command's main is run here in-process with its work replaced by a stop, and the last line of
stderr compared."""

from __future__ import annotations

import signal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.utils import interrupts

STOPS = {"SIGINT": KeyboardInterrupt, "SIGTERM": interrupts.Terminated}
WORDS = {"SIGINT": "interrupted", "SIGTERM": "terminated (SIGTERM)"}


def _raiser(stop):
    def work(*args, **kwargs):
        raise stop()

    return work


def _data(monkeypatch, stop):
    from swar_bench.tasks import cli

    monkeypatch.setattr(cli, "cmd_vocab", _raiser(stop))
    return cli.main, ["vocab", "--out", "unused.json"], "swar-bench data vocab"


def _referee(monkeypatch, stop):
    from swar_bench.referee import cli

    monkeypatch.setattr(cli, "_run", _raiser(stop))
    return cli.main, ["--config", "configs/referee/quick.yaml"], "swar-bench referee"


def _study(monkeypatch, stop):
    from swar_bench.study import cli

    monkeypatch.setattr(cli, "_command", _raiser(stop))
    return cli.main, ["status", "configs/studies/frontier.yaml"], "swar-bench study status"


def _check(monkeypatch, stop):
    from swar_bench.mechanisms import check_cli

    monkeypatch.setattr(check_cli, "_main", _raiser(stop))
    return check_cli.main, ["GRU"], "swar-bench check-mechanism"


def _dispatch(monkeypatch, stop):
    from swar_bench import cli

    monkeypatch.setattr(cli, "_command", _raiser(stop))
    return cli.main, ["fit"], "swar-bench"


def _lightning(monkeypatch, stop):
    """A fit Lightning ended: its SIGTERMException (a SystemExit) or a Ctrl-C it recorded."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    from swar_bench.harness import stops

    def ended(*args, **kwargs):
        interrupts.clear()
        if stop is KeyboardInterrupt:
            interrupts._stop = KeyboardInterrupt  # what on_sigint records before raising
            return stops.stop_status(KeyboardInterrupt(), "swar-bench", "validate")
        return stops.stop_status(SIGTERMException(), "swar-bench", "validate")

    return ended, [], "swar-bench"


COMMANDS = {"data": _data, "referee": _referee, "study": _study, "check-mechanism": _check,
            "dispatch": _dispatch, "lightning": _lightning}


def test_the_reported_fit_stopped_by_sigterm_says_terminated(monkeypatch, capsys):
    main, argv, _ = _lightning(monkeypatch, interrupts.Terminated)
    assert main(argv) == 143
    assert capsys.readouterr().err.splitlines()[-1] == "swar-bench: terminated (SIGTERM)"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(sorted(COMMANDS)), signame=st.sampled_from(sorted(STOPS)))
def test_every_command_names_a_stop_the_same_way(command, signame, monkeypatch, capsys):
    with monkeypatch.context() as patch:
        main, argv, prog = COMMANDS[command](patch, STOPS[signame])
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            status = main(argv)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            interrupts.clear()
    err = capsys.readouterr().err
    assert status == 128 + getattr(signal, signame)
    assert err.splitlines()[-1] == f"{prog}: {WORDS[signame]}", err


@given(signame=st.sampled_from(sorted(STOPS)), prog=st.text("abc- ", min_size=1, max_size=12),
       detail=st.one_of(st.just(""), st.text("abc /.", min_size=1, max_size=20)))
def test_report_stop_is_one_line_with_the_status_of_its_signal(signame, prog, detail):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        status = interrupts.report_stop(prog, STOPS[signame], detail)
    assert status == 128 + getattr(signal, signame)
    assert buffer.getvalue() == f"{prog}: {WORDS[signame]}{f'; {detail}' if detail else ''}\n"


def _swallower(signame):
    """Work that gets the signal and swallows the exception its handler raised (as a library's
    ``except BaseException`` can), then returns 0 as if it had finished."""
    import os

    def work(*args, **kwargs):
        try:
            os.kill(os.getpid(), getattr(signal, signame))
            raise AssertionError("no handler ran")
        except (KeyboardInterrupt, interrupts.Terminated):
            pass
        return 0

    return work


SWALLOWED = {  # the work each command's main runs: module, function, then the command line and prog
    "data": ("swar_bench.tasks.cli", "cmd_vocab", ["vocab", "--out", "unused.json"], "swar-bench data vocab"),
    "referee": ("swar_bench.referee.cli", "_run", ["--config", "configs/referee/quick.yaml"], "swar-bench referee"),
    "study": ("swar_bench.study.cli", "_command", ["status", "configs/studies/frontier.yaml"], "swar-bench study status"),
    "check-mechanism": ("swar_bench.mechanisms.check_cli", "_main", ["GRU"], "swar-bench check-mechanism"),
}


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(sorted(SWALLOWED)), signame=st.sampled_from(sorted(STOPS)))
def test_a_stop_swallowed_during_the_work_is_reported_by_every_command(command, signame, monkeypatch, capsys):
    # study and check-mechanism returned 0 after a swallowed stop (data and referee reported it)
    import importlib

    module_name, work, argv, prog = SWALLOWED[command]
    module = importlib.import_module(module_name)
    with monkeypatch.context() as patch:
        patch.setattr(module, work, _swallower(signame))
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            status = module.main(argv)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            interrupts.clear()
    err = capsys.readouterr().err
    assert status == 128 + getattr(signal, signame), err
    assert err.splitlines()[-1] == f"{prog}: {WORDS[signame]}", err
