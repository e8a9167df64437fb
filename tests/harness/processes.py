"""A child `swar-bench` process for the signal tests: started as a terminal starts it, stopped by a
signal once the test has seen the event it waits for, never left running."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator


@contextlib.contextmanager
def child(argv: list[str]) -> Iterator[subprocess.Popen]:
    """``argv`` running with stdout and stderr piped (text); killed on the way out if it still runs."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
    """Send ``signum`` to the running child and wait for it to end (at most 300 s, a bound on a
    hang); returns what it wrote to stderr."""
    proc.send_signal(signum)
    return proc.communicate(timeout=300)[1]
