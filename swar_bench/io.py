"""Writing files safely (torch-free): a temporary file in the target's folder, then a rename.

A reader never sees a half-written file, and an error names the file the user asked for, never
the temporary name.
"""

from __future__ import annotations

import os
import tempfile


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


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file ``.tmp-*{basename}`` in the same
    folder and a rename; the file gets the umask's mode (:func:`new_file_mode`), not
    ``mkstemp``'s ``0o600``.

    Raises:
        OSError: the folder cannot be created or written; the message names ``path`` (never
            the temporary file, which is removed).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise path_error(exc, path) from exc
        raise
