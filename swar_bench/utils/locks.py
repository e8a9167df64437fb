"""One writer per output folder: an advisory lock file that a second writer finds taken.

Two ``swar-bench data generate --out DIR`` at once (the second removes the first's temporary file
as stale) or two ``fit --ckpt_path last`` resuming into one folder (interleaved logs, one
checkpoint over the other) destroy each other's work. Each takes :func:`folder_lock` on its
output folder first: ``fcntl.flock`` (exclusive, non-blocking) on ``DIR/.swar-bench.lock``, which
holds a line naming the holder (process id, host, command, start time). A second writer is
refused in one line naming that holder (:class:`FolderLockedError`). The lock goes with the
process that holds it (closing the file, exit or ``SIGKILL``: the kernel releases it), so a
killed writer never leaves a folder locked, unless it passed the lock to children that still run
(:func:`held_lock_fds`: then the last of them to end releases it); the file itself stays (removing it would let a third
writer lock a new file while the second still holds the old one). ``flock`` locks are advisory
and, on NFS, as reliable as its lock manager.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from collections.abc import Iterator

LOCK_NAME = ".swar-bench.lock"
"""The lock file in a locked folder (a hidden name: no reader of a release or a run folder
takes it for data)."""


_HELD: dict[int, str] = {}
"""The lock files this process holds now: file descriptor -> path."""


def held_lock_fds() -> tuple[int, ...]:
    """The file descriptors of the locks this process holds now (:func:`folder_lock`), for a child
    that must keep them held while it runs (``subprocess.Popen(pass_fds=...)``: the lock is
    released when the last process holding it open ends)."""
    return tuple(sorted(_HELD))


class FolderLockedError(RuntimeError):
    """Another process writes into the folder (its lock is taken); one line naming the folder and
    the holder."""


def _holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read().strip()
    except OSError:
        text = ""
    return text or "a process that has not yet written its name"


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, command: str) -> Iterator[str]:
    """Hold the lock of ``folder`` (created if missing) for the block; yields the lock file's path.

    Args:
        folder: the output folder (``data generate --out``, a run's checkpoint folder).
        command: what the holder is doing, for the refusal of a second writer
            (``"swar-bench data generate"``).

    Raises:
        FolderLockedError: another process holds the lock: ``"DIR is in use by pid 123 on host,
            swar-bench data generate since 2026-01-01T10:00:00Z; expected one writer at a
            time: ..."`` (one line).
        OSError: the folder or its lock file cannot be created.
    """
    import fcntl

    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            shown = folder if folder.isprintable() else repr(folder)  # one line whatever the name
            raise FolderLockedError(
                f"{shown} is in use by {' '.join(_holder(path).split())}; expected one writer at a time: wait for it to end, "
                "or write into another folder"
            ) from None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, {command} since {stamp}\n".encode(), 0)
        _HELD[fd] = path
        try:
            yield path
        finally:
            _HELD.pop(fd, None)
            os.ftruncate(fd, 0)  # released: no name left for a later reader to blame
    finally:
        os.close(fd)  # releases the flock
