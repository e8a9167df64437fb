"""Writing files safely (torch-free), shared by the data CLI, the harness and the referee.

Every file the project writes goes through a temporary file ``.tmp-<random><name>`` in the
target's folder and a rename (:func:`atomic_path`, :func:`atomic_write`, :func:`atomic_write_text`):
a reader never sees a half-written file, a crash or a signal leaves the previous version in place
and removes the temporary file, the file gets the mode ``open()`` would give it (the umask's, not
``mkstemp``'s ``0o600``), and an ``OSError`` names the file the user asked for, never the temporary
name. Output paths are checked before any work by rehearsing that write (:func:`probe_write`) in
the nearest existing folder (:func:`nearest_existing`), within the file system's name limits
(:func:`name_limits`); each command words its own one-line error around the ``OSError``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from swar_bench.utils import interrupts

TEMP_PREFIX = ".tmp-"
"""Start of every temporary file's name (``.tmp-<random><name>``): what a cleanup of an
interrupted run looks for."""

PROBE_PREFIX = TEMP_PREFIX + "probe-"
"""Start of the names a folder check (:func:`probe_write` without a file name) creates."""


def new_file_mode() -> int:
    """Permission bits of a newly created regular file under the process umask
    (``0o666 & ~umask``, e.g. ``0o644`` for umask ``0o022``), as ``open()`` would give it.
    ``tempfile.mkstemp`` creates files ``0o600``; files written through a temporary name are
    set to this mode before the rename."""
    mask = os.umask(0o022)  # reading the umask means setting it; restored at once
    os.umask(mask)
    return 0o666 & ~mask


def path_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` (raised while writing ``path`` through a temporary file) as an ``OSError`` that
    names ``path``, the file the user asked for, instead of the internal temporary name:
    ``[Errno 2] No such file or directory: 'path'``. Raise it ``from exc``."""
    if exc.errno is None:
        return OSError(f"{os.fspath(path)}: {exc}")
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def _temp_file(folder: str, name: str, prefix: str = TEMP_PREFIX) -> tuple[int, str]:
    """A new temporary file (open descriptor, name) ``<prefix><random><name>`` in ``folder``."""
    return tempfile.mkstemp(dir=folder, prefix=prefix, suffix=name)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """The name of a new temporary file beside ``path`` (its folder is created) for a writer that
    wants a file name (``pyarrow``'s ``ParquetWriter``, ``torch.save``); when the block ends
    normally the file gets :func:`new_file_mode` and is renamed onto ``path``.

    Raises:
        OSError: the folder cannot be created or written, or the rename fails; the message names
            ``path`` (:func:`path_error`). On any exception (``KeyboardInterrupt`` included) the
            temporary file is removed and ``path`` is left as it was.
    """
    path = os.fspath(path)
    tmp = None
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with interrupts.deferred():  # a stop cannot fall between the file's creation and `tmp`
            fd, tmp = _temp_file(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
            os.close(fd)
        yield tmp
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise path_error(exc, path) from exc
        raise


def atomic_write(path: str | os.PathLike, write: Callable[[IO[Any]], Any], binary: bool = False) -> Path:
    """Write ``path`` through ``write(handle)`` (text, UTF-8, or ``binary``) into a temporary file
    beside it, flushed to disk, then renamed onto ``path`` (:func:`atomic_path`); returns ``path``.

    Raises:
        OSError: as :func:`atomic_path` (the message names ``path``).
    """
    mode, encoding = ("wb", None) if binary else ("w", "utf-8")
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding) as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`); returns ``path``.

    Raises:
        OSError: the folder cannot be created or written; the message names ``path`` (never
            the temporary file, which is removed).
    """
    return atomic_write(path, lambda handle: handle.write(text))


def probe_write(folder: str | os.PathLike, name: str = "", prefix: str = TEMP_PREFIX) -> None:
    """Check that the file ``name`` could be written into the existing ``folder`` the way
    :func:`atomic_write` writes it: create ``<prefix><random><name>`` (the length of the real
    write's temporary name with the default ``prefix``), write a byte, set the umask's mode,
    rename it over a second such file, and remove that. ``folder/name`` itself is neither created
    nor touched. This catches what permission bits cannot: a read-only mount, a pseudo-filesystem
    such as ``/proc``, a name too long, running as root.

    Raises:
        OSError: whichever step the file system refuses (nothing is left behind).
    """
    folder = os.fspath(folder)
    made: list[str] = []
    with interrupts.deferred():  # a stop cannot fall between a file's creation and its record in `made`
        try:
            fd, tmp = _temp_file(folder, name, prefix)
            made.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(b"\0")
            os.chmod(tmp, new_file_mode())
            fd2, target = _temp_file(folder, name, prefix)
            os.close(fd2)
            made.append(target)
            os.replace(tmp, target)
            made.remove(tmp)
        finally:
            for leftover in made:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)


def nearest_existing(path: str | os.PathLike) -> Path:
    """``path`` (made absolute) or its nearest ancestor that exists (a dangling symlink counts as
    existing; a name the OS cannot look up, e.g. too long, as missing): where a probe can run
    before the missing folders are created."""
    probe = Path(os.path.abspath(path))
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def name_limits(folder: str | os.PathLike) -> tuple[int, int]:
    """``(NAME_MAX, PATH_MAX)`` in bytes of the file system holding the existing ``folder``
    (``pathconf``); ``(255, 4096)``, the usual limits, where the OS does not say."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return 255, 4096
