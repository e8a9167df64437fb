"""Ctrl-C and SIGTERM that a run cannot miss: recorded when they arrive, raised again at the next
step when their first delivery was lost.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be when SIGINT arrives.
Raised inside a finalizer (``__del__``, a weakref callback, the garbage collector) it is printed as
"Exception ignored" and dropped; raised inside code that catches ``BaseException`` (or a bare
``except:``) in a library it can be swallowed; and a library may set SIGINT to ``SIG_IGN`` for a
while (Lightning does so around ``destroy_process_group``). Either way the run keeps training.

So the handlers here first record the stop, then raise; the long loops (the referee's training
and evaluation chunks, Lightning's batches via ``swar_bench.callbacks.stop_check.StopCheck``) call
:func:`raise_if_stopped` once per step, which raises the recorded stop again. A stop is recorded
until :func:`clear`: each CLI clears it when it installs its handlers (:func:`install`) and when
it puts the previous ones back (:func:`restore`), so a stop never outlives its command.

A command's work ends at :func:`complete` (its files written, its outcome decided): a stop
recorded before is raised there, so the run reports it; a Ctrl-C or SIGTERM arriving after it,
while the command prints its outcome and returns, is ignored, so a completed run never reports
"interrupted" or exits 130 / 143.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM (``timeout``, SLURM, ``kill``), so that cleanup
    (``finally``, ``except BaseException``) runs as for Ctrl-C."""


def stop_words(stop: BaseException | type[BaseException]) -> str:
    """How every command names a stop in its last line: ``"terminated (SIGTERM)"`` for
    :class:`Terminated`, else ``"interrupted"`` (Ctrl-C)."""
    return "terminated (SIGTERM)" if stop_status(stop) == 128 + signal.SIGTERM else "interrupted"


def stop_status(stop: BaseException | type[BaseException]) -> int:
    """The exit status of a command ended by ``stop``: 143 (128 + SIGTERM) for :class:`Terminated`,
    else 130 (128 + SIGINT), as a shell reports a process the signal ended."""
    kind = stop if isinstance(stop, type) else type(stop)
    return 128 + (signal.SIGTERM if issubclass(kind, Terminated) else signal.SIGINT)


def report_stop(prog: str, stop: BaseException | type[BaseException], detail: str = "") -> int:
    """Print the one line a command ends with when ``stop`` ended it (``PROG: interrupted`` or
    ``PROG: terminated (SIGTERM)``, then ``; detail`` when given: how to resume) on stderr; its
    exit status (:func:`stop_status`)."""
    print(f"{prog}: {stop_words(stop)}{f'; {detail}' if detail else ''}", file=sys.stderr)
    return stop_status(stop)


def command(prog: str, body: Callable[[], int]) -> int:
    """Run a command's ``body`` (its work; returns its exit status) under this module's handlers:
    :func:`install` (SIGINT and SIGTERM), then :func:`complete` once the work is done, and
    :func:`restore` whatever happens. A stop ends the command with its one line
    (:func:`report_stop`: ``PROG: interrupted``, exit 130; ``PROG: terminated (SIGTERM)``, 143);
    a stop that arrived during the work and was swallowed there is reported at :func:`complete`,
    one after it is ignored; an error raised after a stop was recorded is that stop. The one frame
    of ``swar-bench data``, ``referee``, ``study`` and ``check-mechanism``."""
    previous = install(sigterm=True)  # nothing from another thread: signals are the caller's
    try:
        status = body()
        complete()
        return status
    except (KeyboardInterrupt, Terminated) as stop:
        return report_stop(prog, stop)
    except Exception:
        # a KeyboardInterrupt inside a library's lock handling can come out as another error
        # (RuntimeError: release unlocked lock); the command ended because it was stopped
        if _stop is None:
            raise
        return report_stop(prog, _stop)
    finally:
        restore(previous)


_stop: type[BaseException] | None = None
_import_hold: type[BaseException] | None = None  # a stop that arrived inside an import, not raised yet
_redelivered = False  # the handler runs next for the re-delivery of an import's stop (_after_import)
_deferring = 0  # the depth of deferred() sections the main thread is in
_held: type[BaseException] | None = None  # a stop that arrived inside them, raised as they end
_complete = False


def stop(exc_type: type[BaseException]) -> None:
    """Record a stop (``KeyboardInterrupt`` or :class:`Terminated`) and raise it, unless inside a
    :func:`deferred` section, which raises it as it ends."""
    global _stop, _held, _import_hold
    _stop, _import_hold = exc_type, None
    if _deferring:
        _held = exc_type
        return
    raise exc_type


def stopped() -> type[BaseException] | None:
    """The stop recorded since the last :func:`clear`, or None."""
    return _stop


def clear() -> None:
    """Forget any recorded stop and any :func:`complete` (a new command starts)."""
    global _stop, _complete, _import_hold, _redelivered
    _stop, _complete, _import_hold, _redelivered = None, False, None, False


def complete() -> None:
    """The command's work is done: raise a stop recorded before now (its ``KeyboardInterrupt``
    may have been swallowed where it landed), then ignore Ctrl-C and SIGTERM until the next
    :func:`install` / :func:`clear`, so the outcome the command is about to report stands.

    Raises:
        KeyboardInterrupt: SIGINT arrived since the last :func:`clear`.
        Terminated: SIGTERM arrived since the last :func:`clear`.
    """
    global _complete
    raise_if_stopped()
    _complete = True


def completed() -> bool:
    """True after :func:`complete`, until the next :func:`clear`."""
    return _complete


def raise_if_stopped() -> None:
    """Raise the recorded stop again, if any: called once per training / evaluation step.

    Raises:
        KeyboardInterrupt: SIGINT (Ctrl-C) arrived since the last :func:`clear`.
        Terminated: SIGTERM arrived since the last :func:`clear` (only with
            :func:`on_sigterm` installed).
    """
    global _import_hold
    if _stop is not None:
        _import_hold = None  # raised now: a re-delivery of it (_after_import) must not raise it twice
        if _stop is Terminated and threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as on_sigterm: a second one must not cut the cleanup short
        raise _stop


IMPORT_RECHECK_S = 0.05
"""Seconds after which a stop that arrived inside an import is delivered again (:func:`in_import`)."""


def in_import(frame: Any) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) is inside an import:
    importlib's frames on its stack. A stop raised there leaves a module half made (numpy:
    "cannot load module more than once per process", a RecursionError, an AttributeError of
    ``numpy._core``) and the command's one line becomes a traceback."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _after_import(signum: int, handler: Any) -> None:
    """Deliver ``signum`` to the main thread again in :data:`IMPORT_RECHECK_S` seconds, if
    ``handler`` still handles it then (the command has not ended) and the stop is still held: a
    check (:func:`raise_if_stopped`) may have raised it meanwhile, and a second raise would cut
    short the cleanup that the first one started (a run's folders left behind)."""
    import _thread

    def again() -> None:
        global _redelivered
        if _import_hold is not None and signal.getsignal(signum) is handler:
            _redelivered = True
            _thread.interrupt_main(signum)

    timer = threading.Timer(IMPORT_RECHECK_S, again)
    timer.daemon = True
    timer.start()


def _already_raised() -> bool:
    """Whether the handler now running is the re-delivery of an import's stop that a check has
    raised since (nothing more to do); clears the re-delivery mark."""
    global _redelivered
    again, _redelivered = _redelivered, False
    return again and _import_hold is None


def on_sigint(signum: int, frame: Any) -> None:
    """SIGINT handler: record and raise ``KeyboardInterrupt`` (Python's own behaviour,
    remembered); after :func:`complete`, nothing. Inside an import (:func:`in_import`) it is
    recorded and delivered again once the import has ended, unless a check raised it first."""
    global _stop, _import_hold
    if _complete or _already_raised():
        return
    if in_import(frame):
        _stop = _import_hold = KeyboardInterrupt
        _after_import(signum, on_sigint)
        return
    stop(KeyboardInterrupt)


def on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM handler: record and raise :class:`Terminated`; a second SIGTERM while cleaning up
    is ignored (it must not cut the cleanup short). Inside an import (:func:`in_import`) it is
    recorded and delivered again once the import has ended.

    Once another handler has replaced this one and calls it in turn (Lightning's, installed when
    training starts, runs the previous handler after its own), it does nothing: that handler
    stops the run its own way (Lightning: ``SIGTERMException`` at the next batch; under SLURM,
    its requeue). After :func:`complete` it does nothing either."""
    global _stop, _import_hold
    if _complete or _already_raised() or signal.getsignal(signal.SIGTERM) is not on_sigterm:
        return
    if in_import(frame):  # recorded, and delivered again once the import has ended
        _stop = _import_hold = Terminated
        _after_import(signum, on_sigterm)
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stop(Terminated)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a stop back for a short section that it must not cut in two: a folder or temporary
    file made but not yet recorded for its cleanup. A SIGINT or SIGTERM arriving inside is
    recorded by :func:`on_sigint` / :func:`on_sigterm` without raising, and raised as the
    section ends normally (when it ends by an exception, that exception goes on and the stop is
    raised at the next check, :func:`raise_if_stopped` or :func:`complete`). A stop recorded
    before the section is left to those checks.

    Only the main thread is ever interrupted (Python runs signal handlers there), so elsewhere
    this does nothing. The handlers must be this module's (:func:`install`); under Python's own
    SIGINT handler a Ctrl-C still raises at once. Keep the section to a few system calls.
    """
    global _deferring, _held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        held = _held if not _deferring else None
        if not _deferring:
            _held = None
    if held is not None:
        raise held


def install(sigterm: bool = False) -> dict[int, Any]:
    """Clear any recorded stop and install :func:`on_sigint` (and, with ``sigterm``,
    :func:`on_sigterm`); returns the previous handlers for :func:`restore`. From a thread other
    than the main one (Python allows signal handlers only there) nothing is installed and ``{}``
    is returned: signals are the caller's."""
    clear()
    wanted = {signal.SIGINT: on_sigint}
    if sigterm:
        wanted[signal.SIGTERM] = on_sigterm
    previous = {}
    try:
        for signum, handler in wanted.items():
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        return {}
    return previous


def restore(previous: dict[int, Any]) -> None:
    """Put back the handlers :func:`install` replaced (``SIG_DFL`` for one not set from Python)
    and forget the recorded stop and :func:`complete`, as :func:`clear` does: the command that
    installed them has ended and reported its stop, which must not stop the next run in this
    process (an ``evaluate()`` called from Python after a command that was interrupted would
    otherwise raise at its first chunk)."""
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    clear()

