"""A Ctrl-C the run cannot miss: a KeyboardInterrupt swallowed where it landed (a finalizer, a
library's broad except) is raised again at the next step, by the referee and by fit."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from swar_bench.utils import interrupts

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _swallow_one_ctrl_c():
    """What a finalizer or a ``try: ... except BaseException: pass`` does to a Ctrl-C."""
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the next line
        raise AssertionError("the SIGINT handler did not run")
    except KeyboardInterrupt:
        pass


def test_the_referee_stops_at_the_next_chunk_after_a_swallowed_ctrl_c(tmp_path, capsys, monkeypatch):
    import importlib

    from swar_bench.referee.cli import main

    evaluate_module = importlib.import_module("swar_bench.referee.evaluate")  # the module, not the function

    real = evaluate_module.train_tbptt
    calls = []

    def swallowing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            _swallow_one_ctrl_c()
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "train_tbptt", swallowing)
    before = signal.getsignal(signal.SIGINT)
    out = tmp_path / "ref"
    argv = ["--config", str(CONFIGS / "referee" / "quick.yaml"), "--out", str(out), "--ranges", "[6, 12]",
            "--n_train_steps", "50", "--n_eval_trials", "8"]
    assert main(argv) == 130
    assert capsys.readouterr().err.endswith("swar-bench referee: interrupted\n")
    assert len(calls) == 2  # stopped inside the second step, not after all of them
    assert signal.getsignal(signal.SIGINT) is before and interrupts.stopped() is None  # ended with its command
    assert not out.exists()


def test_fit_stops_at_the_next_batch_after_a_swallowed_ctrl_c(tmp_path, capsys, monkeypatch):
    from swar_bench.lightning_cli import main
    from swar_bench.module import TBPTTModule

    real = TBPTTModule.training_step
    steps = []

    def swallowing(self, *args, **kwargs):
        steps.append(1)
        if len(steps) == 3:
            _swallow_one_ctrl_c()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TBPTTModule, "training_step", swallowing)
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU",
            "--model.mechanism.init_args.d_model=8", "--trainer.max_steps=40", "--trainer.val_check_interval=1000",
            f"--trainer.logger.init_args.save_dir={tmp_path}", f"--checkpoint.dirpath={tmp_path / 'ckpt'}",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "swar-bench: interrupted"  # no checkpoint was saved: no resume hint
    assert len(steps) == 3  # the swallowed Ctrl-C ended training at the next batch boundary


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["sigint", "sigterm", "swallow", "check", "clear"]), max_size=8))
@example(events=["sigterm", "check", "sigterm"])  # a raised SIGTERM ignores the next one (CI of stop 43)
def test_a_recorded_stop_is_raised_at_every_check_until_cleared(events):
    previous = interrupts.install(sigterm=True)
    expected = None
    try:
        for event in events:
            if event in ("sigint", "sigterm"):
                signum = signal.SIGINT if event == "sigint" else signal.SIGTERM
                kind = KeyboardInterrupt if event == "sigint" else interrupts.Terminated
                with pytest.raises(kind):
                    os.kill(os.getpid(), signum)
                    raise AssertionError("no handler ran")
                signal.signal(signal.SIGTERM, interrupts.on_sigterm)  # it ignores a second SIGTERM
                expected = kind
            elif event == "swallow":
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                except KeyboardInterrupt:
                    pass
                expected = KeyboardInterrupt
            elif event == "check":
                if expected is None:
                    interrupts.raise_if_stopped()
                else:
                    with pytest.raises(expected):
                        interrupts.raise_if_stopped()
                    if expected is interrupts.Terminated:  # raised: a second SIGTERM must not cut the cleanup short
                        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
                        signal.signal(signal.SIGTERM, interrupts.on_sigterm)
            else:
                interrupts.clear()
                expected = None
            assert interrupts.stopped() is expected
    finally:
        interrupts.restore(previous)


def test_a_handler_that_replaced_ours_and_calls_it_keeps_the_stop_to_itself():
    # Lightning's SIGTERM handler runs the one it replaced after its own: ours must not raise then.
    previous = interrupts.install(sigterm=True)
    try:
        ours = signal.getsignal(signal.SIGTERM)
        calls = []

        def theirs(signum, frame):
            calls.append(signum)
            ours(signum, frame)

        signal.signal(signal.SIGTERM, theirs)
        os.kill(os.getpid(), signal.SIGTERM)
        assert calls == [signal.SIGTERM] and interrupts.stopped() is None
    finally:
        interrupts.restore(previous)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_after_complete_a_signal_is_ignored_and_before_it_is_raised_there(signame):
    signum = getattr(signal, signame)
    raised = KeyboardInterrupt if signame == "SIGINT" else interrupts.Terminated
    previous = interrupts.install(sigterm=True)
    try:
        with pytest.raises(raised):  # a stop recorded before completion ...
            try:
                os.kill(os.getpid(), signum)
            except raised:
                pass  # ... swallowed where it landed ...
            interrupts.complete()  # ... is raised when the command says its work is done
        interrupts.install(sigterm=True)
        interrupts.complete()
        os.kill(os.getpid(), signum)  # after completion: nothing raised, nothing recorded
        assert interrupts.stopped() is None and interrupts.completed()
        interrupts.clear()
        assert not interrupts.completed()
    finally:
        interrupts.restore(previous)
        interrupts.clear()


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["SIGINT", "SIGTERM"]), st.integers(1, 3), st.booleans())
def test_a_stop_inside_deferred_sections_is_raised_as_the_outermost_ends(signame, depth, recorded_before):
    signum = getattr(signal, signame)
    expected = KeyboardInterrupt if signum == signal.SIGINT else interrupts.Terminated
    previous = interrupts.install(sigterm=True)
    try:
        if recorded_before:  # a stop recorded (and swallowed) before the section is left to the checks
            with pytest.raises(KeyboardInterrupt):
                interrupts.stop(KeyboardInterrupt)
            with interrupts.deferred():
                pass
        reached = []
        with pytest.raises(expected), contextlib.ExitStack() as sections:
            for _ in range(depth):
                sections.enter_context(interrupts.deferred())
            signal.raise_signal(signum)  # its handler runs before this returns: held, not raised
            reached.append("after the signal")
        assert reached == ["after the signal"]
        assert interrupts.stopped() is expected
    finally:
        interrupts.restore(previous)
        interrupts.clear()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["SIGINT", "SIGTERM", "complete", "clear"]), max_size=6),
       st.booleans())
def test_no_stop_or_completion_outlives_the_command_that_recorded_it(events, sigterm):
    # the kind of a reported fault: a referee command stopped by SIGTERM left it recorded, and the
    # next evaluate() in the same process raised Terminated at its first chunk
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    previous = interrupts.install(sigterm=sigterm)
    try:
        for event in events:
            try:
                if event == "complete":
                    interrupts.complete()
                elif event == "clear":
                    interrupts.clear()
                else:
                    signum = signal.SIGINT if "SIGINT" in event else signal.SIGTERM
                    if signum == signal.SIGTERM and not sigterm:
                        continue  # Python's own SIGTERM handler would end this process
                    signal.raise_signal(signum)
                    if signum == signal.SIGTERM and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
                        signal.signal(signal.SIGTERM, interrupts.on_sigterm)  # re-armed, as a new command
            except (KeyboardInterrupt, interrupts.Terminated):
                pass  # swallowed where it landed: still recorded until the command ends
    finally:
        interrupts.restore(previous)
    assert interrupts.stopped() is None and not interrupts.completed()
    interrupts.raise_if_stopped()  # the next run in this process starts unstopped
    assert {signum: signal.getsignal(signum) for signum in before} == before


# ----------------------------------------------------------------- a stop that arrives inside an import

IMPORTER = """import os, pathlib, sys
sys.path.insert(0, sys.argv[1])
from swar_bench.utils import interrupts
interrupts.install(sigterm=True)
try:
    import slowmod
    while True:  # the stop held back during the import is delivered here
        pass
except (KeyboardInterrupt, interrupts.Terminated) as stop:
    print(type(stop).__name__, slowmod.DONE)
"""
SLOWMOD = """import pathlib, sys
from swar_bench.utils import interrupts
here = pathlib.Path(__file__).parent
(here / "importing").write_text("1")
while interrupts.stopped() is None:  # the import runs until the signal has reached the handler
    pass
DONE = True  # the handler held the stop back: the import ends whole
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_stop_inside_an_import_is_raised_once_the_import_has_ended(tmp_path, signame):
    """Reported: `study status` / `check-mechanism` stopped while torch and numpy were being
    imported ended in a traceback (a module half made: RecursionError, "cannot load module more
    than once per process") or ran on. Now a signal that arrives inside an import is held back
    until the import has ended, and then stops the program as anywhere else."""
    import subprocess
    import sys
    import time

    (tmp_path / "slowmod.py").write_text(SLOWMOD)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", IMPORTER, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 120  # a bound on a hang
        while not (tmp_path / "importing").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the event: the import has started
        proc.send_signal(getattr(signal, signame))  # recorded by the handler inside the import, held
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stop = "Terminated" if signame == "SIGTERM" else "KeyboardInterrupt"
    assert out == f"{stop} True\n", err
    assert "Traceback" not in err


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(0, 6), inside=st.booleans())
def test_in_import_is_true_exactly_inside_an_import(tmp_path_factory, depth, inside):
    """The kind: a frame any number of calls deep, inside a module's import or outside any:
    ``in_import`` says which."""
    import importlib
    import sys
    import uuid

    def deep(n: int):
        return sys._getframe() if n == 0 else deep(n - 1)

    if not inside:
        assert interrupts.in_import(deep(depth)) is False
        return
    folder = tmp_path_factory.mktemp("m")
    name = f"m_{uuid.uuid4().hex}"
    (folder / f"{name}.py").write_text(
        "import sys\n"
        "def deep(n):\n"
        "    return sys._getframe() if n == 0 else deep(n - 1)\n"
        f"FRAME_INSIDE = deep({depth})\n"
    )
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
    assert interrupts.in_import(module.FRAME_INSIDE) is True


def _frame_inside_an_import(folder: Path):
    """A frame of a module's top level while it is being imported (``in_import`` is true of it)."""
    import importlib
    import sys
    import uuid

    name = f"m_{uuid.uuid4().hex}"
    (folder / f"{name}.py").write_text("import sys\nFRAME_INSIDE = sys._getframe()\n")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name).FRAME_INSIDE
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


def _join_redeliveries() -> None:
    """Wait until every pending re-delivery (``_after_import``'s timer) has run: any stop it
    delivers is then raised at the next bytecode of the main thread."""
    import threading

    for timer in [t for t in threading.enumerate() if isinstance(t, threading.Timer)]:
        timer.join(timeout=60)


@settings(max_examples=12, deadline=None)
@given(signame=st.sampled_from(["SIGINT", "SIGTERM"]), checked_first=st.booleans())
def test_a_stop_held_in_an_import_is_raised_exactly_once(tmp_path_factory, signame, checked_first):
    """Reported (make test under load: the referee stopped by Ctrl-C exited 130 with its one line,
    but left the folder it had created): a stop that arrived inside an import is held and
    delivered again 50 ms later; when a check (``raise_if_stopped``) raised it first, the
    re-delivery raised it a second time, in the middle of the cleanup the first had started. The
    kind: a held stop, raised first by a check or by its re-delivery, for either signal, is raised
    once; the cleanup after it runs to the end."""
    signum = getattr(signal, signame)
    stop_type = interrupts.Terminated if signame == "SIGTERM" else KeyboardInterrupt
    handler = interrupts.on_sigterm if signame == "SIGTERM" else interrupts.on_sigint
    frame = _frame_inside_an_import(tmp_path_factory.mktemp("m"))
    previous = interrupts.install(sigterm=True)
    raised = []
    cleaned = False
    try:
        handler(signum, frame)  # the signal, as it arrives inside an import: held, not raised
        try:
            if checked_first:
                interrupts.raise_if_stopped()  # the run's next check raises it
            _join_redeliveries()  # or its re-delivery does
            _ = [n for n in range(100)]  # bytecodes for a delivered stop to be raised at
        except stop_type:
            raised.append("run")
        try:  # the cleanup the stop started
            _join_redeliveries()
            _ = [n for n in range(100)]
            cleaned = True
        except stop_type:
            raised.append("cleanup")
    finally:
        interrupts.restore(previous)
    assert raised == ["run"] and cleaned
