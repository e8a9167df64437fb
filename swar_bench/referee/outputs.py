"""The output paths of ``swar-bench referee``, checked before any work: ``--out`` (the folder of
``result.json`` and the forgetting-curve PNG) and ``compare --plot`` (a figure file). Each check
really creates the missing folders and rehearses every file's atomic write, so a bad path fails at
once, in one line, and a run refused or stopped afterwards takes its new folders back."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from swar_bench.referee.report import plot_format
from swar_bench.utils import interrupts
from swar_bench.utils.files import probe_write

RESULT_FILES = ("result.json", "forgetting_curve.png")
"""The files ``swar-bench referee`` writes into ``--out``."""


def prepare_output(
    option: str,
    value: str,
    folder: Path,
    files: tuple[str, ...],
    expected: str,
    created: list[Path] | None = None,
) -> list[Path]:
    """Create ``folder`` (and its missing parents) and check each of ``files`` can be written into it.

    Used for every output path of the CLI before any work, so a bad path fails at once rather than
    after the evaluation: the folder is really created and each file's atomic write is rehearsed
    (``swar_bench.utils.files.probe_write``), which catches what permission bits cannot (a pseudo-filesystem like
    ``/proc``, a read-only mount, a name too long, running as root). Existing files are not touched.

    Args:
        option, value: the command-line option and its value as given (named in the error).
        folder: the folder that receives the files.
        files: names of the files to be written into ``folder``.
        expected: what the option expects, for the error message.
        created: the caller's list that receives each folder as it is made, outermost first, so
            a stop (SIGINT, SIGTERM) at any point leaves the caller knowing every folder to take
            back with ``remove_created``; a new list when omitted.

    Returns:
        ``created``, holding the folders this call made (``remove_created`` takes them back).

    Raises:
        ValueError: one line naming ``option=value``, why it cannot be used and ``expected``;
            whatever this call created is removed again.
    """
    shown = f"{option}={value!r}"
    if value == "":  # Path("") is the current folder
        raise ValueError(f"{shown} is empty; expected {expected}")
    given = Path(value)
    created = [] if created is None else created
    try:
        missing: list[Path] = []
        p = folder
        while not os.path.isdir(p):
            if os.path.lexists(p):
                if p == given:
                    raise ValueError(f"{shown} exists and is not a folder; expected {expected}")
                raise ValueError(
                    f"{shown} cannot be created: {str(p)!r} is not a folder; expected {expected}"
                )
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
        for d in reversed(missing):
            try:
                with interrupts.deferred():  # a stop cannot fall between the mkdir and the record
                    os.mkdir(d)
                    created.append(d)
            except FileExistsError:
                if os.path.isdir(d):  # made meanwhile by someone else: not ours to remove
                    continue
                raise ValueError(
                    f"{shown} cannot be created: {str(d)!r} is not a folder; expected {expected}"
                ) from None
            except OSError as e:
                if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    why = f"{str(d.parent)!r} is not writable ({e.strerror})"
                elif d == given:
                    why = e.strerror or str(e)
                else:
                    why = f"could not create {str(d)!r} ({e.strerror or e})"
                raise ValueError(f"{shown} cannot be created: {why}; expected {expected}") from None
        for name in files:
            target = folder / name
            if os.path.isdir(target):
                raise ValueError(
                    f"{shown} holds a folder named {name!r} where that file goes; "
                    f"expected {expected}"
                )
            try:
                probe_write(folder, name)
            except OSError as e:
                what = "a file" if target == given else repr(name)
                raise ValueError(
                    f"{shown} cannot be written: creating {what} in {str(folder)!r} failed "
                    f"({e.strerror or e}); expected {expected}"
                ) from None
    except BaseException:
        remove_created(created)
        raise
    return created


def prepare_out_dir(out: str, created: list[Path] | None = None) -> list[Path]:
    """``prepare_output`` for ``--out``: the folder that receives ``result.json`` and the PNG.

    Returns the folders created, in ``created`` when given (for ``remove_created``); raises
    ``ValueError`` (one line).
    """
    return prepare_output(
        "--out", out, Path(out), RESULT_FILES, "a folder (new or existing) this user can write to", created
    )


def prepare_plot_path(plot: str, created: list[Path] | None = None) -> list[Path]:
    """``prepare_output`` for ``compare --plot``: a figure file path (new or existing file) whose
    suffix names its format (``report.PLOT_FORMATS``: .png, .pdf, .svg).

    Returns the folders created, in ``created`` when given (for ``remove_created``); raises
    ``ValueError`` (one line).
    """
    expected = "a .png, .pdf or .svg file path (new or existing file) in a folder this user can write to"
    path = Path(plot)
    if not plot or plot.endswith(os.sep) or os.path.isdir(path):
        what = "is empty" if not plot else "is a folder"
        raise ValueError(f"--plot={plot!r} {what}; expected {expected}")
    plot_format(path, shown=f"--plot={plot!r}")
    return prepare_output("--plot", plot, path.parent, (path.name,), expected, created)


def remove_created(folders: list[Path]) -> None:
    """Remove the folders ``prepare_output`` created, innermost first, as long as they are empty.

    So a run rejected after the check (a bad option, a mechanism that cannot be built) or stopped
    leaves no empty folder behind; a folder that received anything meanwhile is kept (and so are
    the folders around it). A listed folder that is already gone (taken back before, or a stop
    came before its mkdir) is skipped.
    """
    for d in reversed(folders):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            continue
        except OSError:
            return
