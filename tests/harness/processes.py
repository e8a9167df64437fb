"""A child `swar-bench` process for the signal tests: started as a terminal starts it, stopped by a
signal once the test has seen the event it waits for, never left running. A child that does not
end within the bound fails the test with every thread's stack (``faulthandler``), not a bare
timeout."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator

HANG_S = 300
"""Seconds a stopped child may take to end: a bound on a hang, not a timing assumption."""


@contextlib.contextmanager
def child(argv: list[str]) -> Iterator[subprocess.Popen]:
    """``argv`` running with stdout and stderr piped (text); killed on the way out if it still runs.
    ``faulthandler`` is on in the child (``PYTHONFAULTHANDLER``): SIGABRT makes it print every
    thread's stack (:func:`stop` does so when the child hangs)."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        # a child of a non-interactive shell may start with SIGINT ignored: start it as a terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - pytest starts no threads
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def stop(proc: subprocess.Popen, signum: int) -> str:
    """Send ``signum`` to the running child and wait for it to end (at most :data:`HANG_S`
    seconds); returns what it wrote to stderr.

    Raises:
        AssertionError: the child still ran after :data:`HANG_S` seconds; the message holds the
            stacks of its threads where it hung (SIGABRT to its ``faulthandler``) and the end of
            its stdout and stderr.
    """
    proc.send_signal(signum)
    try:
        return proc.communicate(timeout=HANG_S)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack, then the child ends
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise AssertionError(f"{proc.args} still ran {HANG_S} s after signal {signum}; its stacks and output:\n"
                             f"--- stdout\n{(out or '')[-3000:]}\n--- stderr\n{(err or '')[-12000:]}") from None
