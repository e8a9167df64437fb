"""The fits and tests of ``swar-bench study run`` end with it, and hold its lock while they run.

Every child (``swar-bench fit`` / ``test``) is started through :data:`STUB`, a few lines of
Python run as ``python -I -S -c STUB <parent pid> <command...>``. The stub

1. asks the kernel to send it SIGTERM when the thread that started it ends (Linux
   ``prctl(PR_SET_PDEATHSIG, SIGTERM)``; kept across ``exec``). The runner's thread that starts a
   child waits for it to exit, so that thread ends only with the runner itself: a runner killed
   by SIGKILL takes its children with it. Elsewhere (no ``prctl``) this step is skipped;
2. exits 143 without running the command when its parent is no longer the runner (the runner
   died before step 1 took effect);
3. replaces itself with the command (``execvp``): the same pid, the command's argv exactly as
   given, the environment the runner passed.

A fit stopped this way ends as a fit stopped by SIGTERM does (exit 143; the next ``run``
resumes it from its newest checkpoint, ``swar_bench.study.attempts``).

The children also inherit the runner's lock files (``swar_bench.utils.locks.held_lock_fds``: the
study's ``out`` and ``records`` locks). A ``flock`` is released when the last process that holds
it open ends, so the folders of a killed ``run`` stay locked until its children have stopped: a
next ``run`` is refused meanwhile instead of writing into the folders of a fit that still runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

STUB = """import os, signal, sys
parent, command = int(sys.argv[1]), sys.argv[2:]
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # no prctl here (not Linux): the command runs without the guard
if os.getppid() != parent:
    sys.exit(143)  # the parent ended before the guard was set: nothing runs for it
try:
    os.execvp(command[0], command)
except OSError as err:
    print(f"cannot run {command[0]!r}: {err.strerror or err}", file=sys.stderr)
    sys.exit(127)
"""
"""The exec stub (module docstring): ``argv[1]`` the parent's pid, ``argv[2:]`` the command."""


def guarded(command: list[str], parent: int | None = None) -> list[str]:
    """The argv that runs ``command`` through :data:`STUB`: it ends when the thread of
    ``parent`` (default: this process) that starts it ends, and does not start when ``parent``
    is not its parent.

    Args:
        command: the program and its arguments (``command[0]`` a path, or a name found on PATH).
        parent: the pid the child must have as its parent.

    Raises:
        ValueError: ``command`` is empty (one line)."""
    if not command:
        raise ValueError("command=[] is empty; expected a program and its arguments")
    pid = os.getpid() if parent is None else int(parent)
    return [sys.executable, "-I", "-S", "-c", STUB, str(pid), *(os.fspath(a) for a in command)]


def launch(command: list[str], **popen: Any) -> subprocess.Popen:
    """``subprocess.Popen`` of ``command`` through :func:`guarded`, with this process's lock files
    open in the child (``pass_fds``, beside any given). The calling thread must wait for the
    child (``wait``): the child gets SIGTERM when that thread ends. ``popen``: Popen's other
    arguments (stdout, stderr, env, ...)."""
    from swar_bench.utils.locks import held_lock_fds

    fds = tuple(sorted({*held_lock_fds(), *popen.pop("pass_fds", ())}))
    return subprocess.Popen(guarded(command), pass_fds=fds, **popen)


def stop_all(procs: list[subprocess.Popen], status: int) -> None:
    """Send each of ``procs`` SIGTERM (``status`` 143) or SIGINT (130): a study stopped by that
    signal stops its running fits and tests with it (each ends as a fit does, its checkpoint
    resumable); one already gone is skipped."""
    import signal

    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM if status == 143 else signal.SIGINT)
        except ProcessLookupError:
            pass


def call(command: list[str], **popen: Any) -> int:
    """:func:`launch` ``command`` and wait for it: its exit status (negative: the signal that
    ended it)."""
    with launch(command, **popen) as proc:
        try:
            return proc.wait()
        except BaseException:  # as subprocess.call
            proc.kill()
            raise
