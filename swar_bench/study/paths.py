"""What ``swar-bench study`` reads and writes: one-line refusals of a study file or an ``--out``
folder that cannot serve, and files written whole or not at all.

- :func:`study_file_problem`: the study file is missing, a folder, unreadable, not UTF-8 or not
  YAML; the line names the file and what was expected.
- :func:`out_problem`: an ``--out`` folder that is empty text, a file, under a file, or cannot be
  written (a read-only mount, ``/proc``); the line names the path and what was expected.
- :func:`write_whole`: every file of a report or none: each destination is checked first, the
  files are written into a temporary folder inside ``out`` and then renamed into place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from swar_bench.study.spec import StudyError
from swar_bench.utils.yaml_keys import DuplicateKey, unique_key_loader

STUDY_FILE_EXPECTED = "expected a study file in YAML, such as configs/studies/frontier.yaml"


def shown(path: str | os.PathLike) -> str:
    """``path`` as text for a one-line message (``repr`` when it holds a newline or another
    unprintable character)."""
    text = os.fspath(path)
    return text if text.isprintable() else repr(text)


def study_file_problem(path: str | os.PathLike) -> str | None:
    """None when ``path`` is a readable UTF-8 YAML file; else one line naming it and what was
    expected (``study file 'x' is a folder; expected a study file in YAML, ...``). The contents
    (keys, values) are ``swar_bench.study.spec.load_study``'s to check."""
    import yaml

    name = repr(os.fspath(path))
    p = Path(path)
    if not os.path.lexists(p):
        return f"study file {name} does not exist; {STUDY_FILE_EXPECTED}"
    if p.is_dir():
        return f"study file {name} is a folder; {STUDY_FILE_EXPECTED}"
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return f"study file {name} is not UTF-8 text; {STUDY_FILE_EXPECTED}"
    except OSError as err:
        return f"study file {name} cannot be read ({err.strerror or err.__class__.__name__}); {STUDY_FILE_EXPECTED}"
    try:
        yaml.load(text, Loader=unique_key_loader())  # a SafeLoader that refuses duplicate keys
    except DuplicateKey as err:
        return f"study file {name}: {err}"
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(err, "problem", None) or "").split())
        return f"study file {name} is not valid YAML{where}{f' ({problem})' if problem else ''}; {STUDY_FILE_EXPECTED}"
    return None


def out_problem(out: str | os.PathLike, what: str) -> str | None:
    """None when ``out`` is a folder (or a path to create one) this process can write into; else
    one line naming it and what was expected, e.g. ``--out /tmp/f/sub: /tmp/f is a file; expected
    a folder (or a path to create one) for the site``. ``what`` names the contents
    (``"the site"``). Nothing is created: the nearest existing folder is probed
    (``swar_bench.utils.files.probe_write``)."""
    from swar_bench.utils.files import nearest_existing, probe_write

    text = os.fspath(out)
    if not text.strip():
        return f"--out={text!r}: expected a folder path for {what}"
    expected = f"expected a folder (or a path to create one) for {what}"
    target = Path(os.path.abspath(text))
    existing = nearest_existing(target)
    if not existing.is_dir():
        kind = "a file" if existing.is_file() else "not a folder"
        if existing == target:
            return f"--out {shown(text)} is {kind}; expected a folder for {what}"
        return f"--out {shown(text)}: {shown(existing)} is {kind}; {expected}"
    try:
        probe_write(existing)
    except OSError as err:
        return (f"--out {shown(text)}: {shown(existing)} cannot be written ({err.strerror or err}); "
                f"expected a writable folder for {what}")
    return None


def _first_missing(folder: Path) -> Path | None:
    missing = None
    for path in [folder, *folder.parents]:
        if os.path.lexists(path):
            return missing
        missing = path
    return missing


def write_whole(out: str | os.PathLike, contents: dict[str, bytes], what: str) -> list[Path]:
    """Write ``contents`` (relative path -> bytes) under ``out``, every file or none; returns the
    paths written, in the order given.

    Every destination is checked before anything is written (:func:`out_problem`, no folder at a
    file's name, no file at a folder's name); the files are then written into a temporary folder
    ``out/.tmp-<random>`` (the umask's mode) and renamed into place. On any failure, the
    temporary folder and the folders this call created go; the earlier files stay as they were.

    Raises:
        StudyError: a destination that cannot take its file (one line naming it and what was
            expected).
        OSError: the file system refused a write that the checks let through (disk full).
    """
    from swar_bench.utils import interrupts
    from swar_bench.utils.files import TEMP_PREFIX, new_file_mode

    problem = out_problem(out, what)
    if problem is not None:
        raise StudyError(problem)
    out = Path(out)
    for rel in contents:
        dest = out / rel
        for folder in reversed(dest.relative_to(out).parents[:-1]):
            if os.path.lexists(out / folder) and not (out / folder).is_dir():
                raise StudyError(f"--out {shown(out)}: {shown(out / folder)} is a file; expected a folder for {what}")
        if dest.is_dir():
            raise StudyError(f"--out {shown(out)}: {shown(dest)} is a folder; expected a file to replace, or "
                             f"nothing, at that name for {what}")
    created = _first_missing(Path(os.path.abspath(out)))
    staging = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=out, prefix=TEMP_PREFIX))
        for rel, data in contents.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            path.chmod(new_file_mode())
        with interrupts.deferred():
            for rel in contents:
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, out / rel)
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return [out / rel for rel in contents]


@contextlib.contextmanager
def holding_study(folders: list[str | os.PathLike], command: str) -> Iterator[None]:
    """Hold the lock of each of ``folders`` (a study's ``out`` and ``records``, each once) for the
    block (``swar_bench.utils.locks.folder_lock``, ``DIR/.swar-bench.lock``): a second
    ``study run`` of the study is refused before it reads or removes anything. Readers
    (``study status``, ``report``, ``site``) take no lock. The folders are created; when the
    block raises, each folder created here (parents included) that holds nothing but the lock
    is removed again.

    Raises:
        swar_bench.utils.locks.FolderLockedError: another process holds one of them (one line
            naming the folder and the holder's pid, host and command).
        OSError: a folder or its lock file cannot be created.
    """
    from swar_bench.utils.locks import LOCK_NAME, folder_lock

    unique = dict.fromkeys(os.path.realpath(os.path.abspath(f)) for f in folders)
    shown_as = {os.path.realpath(os.path.abspath(f)): os.fspath(f) for f in reversed(folders)}
    created: set[str] = set()  # each absent folder and the absent parents it will be created with
    for real in unique:
        path = real
        while not os.path.lexists(path) and os.path.dirname(path) != path:
            created.add(path)
            path = os.path.dirname(path)
    try:
        with contextlib.ExitStack() as stack:
            for real in unique:
                stack.enter_context(folder_lock(shown_as[real], command))
            yield
    except BaseException:  # a refused run leaves no folder it made that holds only its lock
        for path in sorted(created, key=lambda p: p.count(os.sep), reverse=True):  # children first
            try:
                if os.listdir(path) == [LOCK_NAME]:
                    os.remove(os.path.join(path, LOCK_NAME))
                os.rmdir(path)
            except OSError:
                pass  # it holds something else (or is gone): kept as it is
        raise
