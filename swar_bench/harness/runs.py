"""Run folders: one per run, named after its config and mechanism, so that runs never clobber each other.

    <save_dir>/<name>/<Mechanism>/<version>/
        config.yaml            the fit command's full config (test_config.yaml etc. for the others)
        events.out.tfevents.*  TensorBoard
        hparams.yaml
        checkpoints/last.ckpt  (and the monitored ones)
        answer_type_accuracy.md / .csv / .png, calibration.md / .csv ...   (test reports)

``save_dir`` and ``name`` are the logger's (``configs/quickstart.yaml``: ``runs`` and
``quickstart``; the first ``--config`` file's stem when a config sets none), ``Mechanism`` the
class name of ``--model.mechanism`` (a ``name`` that already contains it is kept as is), and
``version`` is ``version_N`` (the next free N) unless forced with
``--trainer.logger.init_args.version=NAME`` (e.g. ``slurm_$SLURM_JOB_ID``: a requeued job then
logs into the same folder). ``--ckpt_path last`` picks the newest ``checkpoints/last*.ckpt`` of
the runs of this config and mechanism (of the forced version, when one is given) and continues
that run's folder; ``test --ckpt_path <run>/checkpoints/last.ckpt`` writes its reports into
``<run>`` wherever it lies (:func:`run_folder_of_checkpoint`). A version that is not one folder
name, or a name with ``..``, is refused (:func:`check_path_component`): the run stays inside
``save_dir``.

A run stopped (Ctrl-C, SIGTERM, an exception) before it produced anything leaves no folder
behind (:func:`discard_empty_run`): what set-up alone writes (:func:`holds_results`) is removed
with the folders the run created for it; a run that saved a checkpoint, logged a metric or wrote
a report keeps its folder. A run into a folder that existed (``test --ckpt_path last``, a resumed
fit) and stopped before it produced anything leaves that folder as it was
(:func:`snapshot`, :func:`discard_stopped_additions`): the set-up files it added are removed and
those it overwrote (``test_config.yaml`` of an earlier test) get their earlier content back.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from swar_bench.utils.files import TEMP_PREFIX, atomic_write

VERSION_RE = re.compile(r"version_(\d+)")

SETUP_FILE_RE = re.compile(r"(?:\w+_)?config\.yaml|hparams\.yaml")
"""Files a run writes while it sets up, before it has produced anything: LightningCLI's copy of
the config (``config.yaml``, ``test_config.yaml``, ...) and the logger's ``hparams.yaml``."""

SETUP_TAGS = ("hp_metric", "_hparams_/")
"""TensorBoard tags (and tag prefixes) a ``TensorBoardLogger`` writes at set-up from the
hyperparameters (``log_hyperparams``: the placeholder ``hp_metric`` and the HParams plugin's
summaries), not measurements."""


def mechanism_name(class_path: str) -> str:
    """``"swar_bench.mechanisms.GRU"`` -> ``"GRU"``."""
    return str(class_path).rsplit(".", 1)[-1]


def run_name(name: str, mechanism: str) -> str:
    """The logger name of a run: ``<name>/<mechanism>``, or ``name`` itself when one of its path
    parts already contains the mechanism's name (``quickstart/GRU``, ``GRU_lr0.003``)."""
    text = str(name).strip("/")
    if any(mechanism in part for part in Path(text).parts):
        return text
    return f"{text}/{mechanism}" if text else mechanism


def version_folder(version: int | str) -> str:
    """The folder of a logger version: ``version_N`` for an int N, the string itself otherwise."""
    return version if isinstance(version, str) else f"version_{int(version)}"


def parse_version(folder: str) -> int | str:
    """Inverse of :func:`version_folder`: ``"version_3"`` -> 3, any other name -> itself."""
    match = VERSION_RE.fullmatch(folder)
    return int(match.group(1)) if match else folder


def logger_version(value: int | str) -> int | str:
    """The version a logger gets for ``--trainer.logger.init_args.version=value``, as the folder
    it writes into names it: an int N, a string of digits (``"0"``: the command line's ``0``,
    which the parser reads as the int 0) and ``"version_N"`` are the int N (the folder
    ``version_N``, ``TensorBoardLogger.log_dir``); any other string is itself (the folder of that
    name). Reading (``--ckpt_path last``) and writing use this one value, so they name one folder."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if text.isascii() and text.isdigit():
        return int(text)
    return parse_version(text)


def existing_checkpoints(folder: str | Path) -> list[str]:
    """Names of the checkpoint files (``*.ckpt``) directly in ``folder``, sorted; ``[]`` when it
    does not exist."""
    try:
        return sorted(p.name for p in Path(folder).glob("*.ckpt") if p.is_file())
    except OSError:  # a name too long, no permission: nothing a run could write over
        return []


def last_checkpoint(root: str | Path, version: int | str | None = None, warn=None) -> tuple[Path, int | str] | None:
    """The checkpoint ``--ckpt_path last`` resumes and its version. Without ``version``: the
    ``last*.ckpt`` of the run folder ``<root>/*/`` whose ``checkpoints/*.ckpt`` is newest by
    modification time (the latest run), else that newest checkpoint; the caller
    (``swar_bench.harness.run_folders.readable_resume``) then takes the most progress of its folder. With
    ``version`` (a job that continues one run, e.g. ``slurm_<job id>``): the checkpoint of
    ``<root>/<version>/checkpoints/`` with the largest recorded global step, ``hpc_ckpt_<k>.ckpt``
    of a SLURM requeue among them (``swar_bench.runtime.slurm.newest_checkpoint``), so a resume never goes
    back to an older one; a file that cannot be read is skipped, with one line to ``warn``
    (default: stderr). None when there is none."""
    from swar_bench.runtime.slurm import newest_checkpoint, resume_candidates

    root = Path(root)
    if version is not None:
        newest = newest_checkpoint(resume_candidates(root / version_folder(version) / "checkpoints"), warn=warn)
        return None if newest is None else (Path(newest[0]), version)
    folders = [p for p in root.glob("*") if p.is_dir()]
    # any checkpoint, not only last*.ckpt: a run killed between its first step checkpoint and its
    # first last.ckpt has only the former (the caller picks the most progress in that folder)
    found = [(mtime, ckpt) for folder in folders for ckpt in (folder / "checkpoints").glob("*.ckpt")
             if (mtime := _mtime(ckpt)) is not None]
    if not found:
        return None
    ckpt = max(found)[1]
    # in the latest run's folder, its last*.ckpt when it has one: what the run meant to resume from
    lasts = [(mtime, path) for mtime, path in found if path.parent == ckpt.parent and path.name.startswith("last")]
    ckpt = max(lasts)[1] if lasts else ckpt
    return ckpt, parse_version(ckpt.parent.parent.name)


def _mtime(path: Path) -> float | None:
    """``path``'s modification time; None when it is not a file (any more: a running fit removes
    the checkpoint it replaces)."""
    try:
        return path.stat().st_mtime if path.is_file() else None
    except FileNotFoundError:
        return None


RUN_FILE_RE = re.compile(r"hparams\.yaml|metrics\.csv|events\.out\.tfevents\..*")
"""Files a logger writes into its run folder (``TensorBoardLogger``: ``hparams.yaml`` and the
event files; ``CSVLogger``: ``hparams.yaml`` and ``metrics.csv``): what marks a folder as a run
folder (:func:`run_folder_of_checkpoint`)."""


def run_folder_of_checkpoint(ckpt_path: str | Path) -> Path | None:
    """The run folder ``ckpt_path`` lies in, recognised by its layout wherever it is (any
    ``save_dir``, name, version or nesting): ``<run folder>/checkpoints/<file>.ckpt`` with a file a
    logger writes (:data:`RUN_FILE_RE`) beside ``checkpoints/``. The folder as ``ckpt_path`` spells
    it (relative stays relative); None for a checkpoint anywhere else (a ``--checkpoint.dirpath``
    of its own, a copied file)."""
    path = Path(ckpt_path)
    if path.parent.name != "checkpoints" or not path.is_file():
        return None
    run = path.parent.parent
    if not any(RUN_FILE_RE.fullmatch(p.name) and p.is_file() for p in (run.iterdir() if run.is_dir() else ())):
        return None
    return run


def logger_location(run: str | Path, name: str) -> tuple[str, str, int | str]:
    """The logger's ``(save_dir, name, version)`` whose ``log_dir`` (``<save_dir>/<name>/<version>``)
    is the run folder ``run``: ``name`` kept when ``run`` lies in a folder ``.../<name>/`` (the
    strings the fit that wrote it used, so its checkpoint's ``dirpath`` matches), else ``""`` with
    ``save_dir`` the folder holding ``run``."""
    run = Path(run)
    parts = Path(name).parts if name else ()
    holder = run.parent
    if parts and len(holder.parts) > len(parts) and holder.parts[-len(parts):] == parts:
        return str(Path(*holder.parts[: -len(parts)])), str(Path(*parts)), parse_version(run.name)
    return str(holder), "", parse_version(run.name)


def check_path_component(value: str | int | None, flag: str, nested: bool = False, name_max: int = 255) -> None:
    """Raise ValueError (one line naming ``flag``) unless ``value`` is one path component (a
    logger ``version``: no separator, not ``.`` or ``..``, not empty), or with ``nested`` a
    relative path of such components (a logger ``name`` such as ``quickstart/GRU``), so that
    the run folder ``<save_dir>/<name>/<version>`` stays inside ``save_dir``, each part a name the
    file system takes (at most ``name_max`` bytes: 255 on Linux, macOS and Windows; a longer one
    failed with `File name too long` once the model was built, leaving save_dir behind). None and
    ints pass."""
    if value is None or isinstance(value, int):
        return
    text = str(value)
    parts = text.replace("\\", "/").rstrip("/").split("/") if nested else [text]
    if nested and text == "":
        return
    long = next((p for p in parts if len(os.fsencode(p)) > name_max), None)
    if long is not None:
        raise ValueError(f"{flag}={text[:60]}... ({len(text)} characters): a folder name of {len(os.fsencode(long))} "
                         f"bytes; expected names of at most {name_max} bytes (the file system's limit)")
    bad = [p for p in parts if p in ("", ".", "..") or "/" in p or "\\" in p or "\0" in p]
    if bad or (nested and text.startswith(("/", "\\"))):
        kind = "a relative folder name whose parts are plain names (e.g. quickstart or quickstart/GRU)" if nested else (
            "one folder name (e.g. version_3 or slurm_1234), without '/', '.' or '..'")
        raise ValueError(f"{flag}={text}: not inside the logger's save_dir; expected {kind}")


def _events_hold_data(path: Path) -> bool:
    """True when a TensorBoard event file holds anything beyond set-up (:data:`SETUP_TAGS`): a
    logged scalar, image, histogram or text. A file TensorBoard cannot read counts as data."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    try:
        for event in EventFileLoader(str(path)).Load():
            if event.HasField("summary") and any(not value.tag.startswith(SETUP_TAGS) for value in event.summary.value):
                return True
            if event.WhichOneof("what") not in (None, "file_version", "summary"):
                return True  # a graph, a session log, tagged run metadata
    except Exception:  # noqa: BLE001 - unreadable: keep it rather than lose a log
        return True
    return False


@dataclass(frozen=True)
class FolderSnapshot:
    """What a folder held before a run wrote into it (:func:`snapshot`): every file (and link) by
    path relative to the folder with its ``(size, st_mtime_ns)``, every sub-folder, and the
    bytes of its set-up files (:data:`SETUP_FILE_RE`, a few kB of YAML) so that a stopped run can
    put back the ones it overwrote."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    folders: frozenset[str] = frozenset()
    setup: dict[str, bytes] = field(default_factory=dict)

    def unchanged(self, folder: Path, path: Path) -> bool:
        """True when ``path`` (inside ``folder``) is as the snapshot found it."""
        before = self.files.get(path.relative_to(folder).as_posix())
        return before is not None and before == _signature(path)


def _signature(path: Path) -> tuple[int, int]:
    stat = path.lstat()
    return stat.st_size, stat.st_mtime_ns


def _is_setup_file(folder: Path, path: Path) -> bool:
    return bool(SETUP_FILE_RE.fullmatch(path.name)) and path.parent == folder


def snapshot(folder: str | Path) -> FolderSnapshot | None:
    """The :class:`FolderSnapshot` of ``folder``, taken before a run writes into it; None when
    ``folder`` is not an existing folder (the run creates it: :func:`discard_empty_run`)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    files, folders, setup = {}, set(), {}
    for path in folder.rglob("*"):
        key = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink():
            folders.add(key)
            continue
        files[key] = _signature(path)
        if _is_setup_file(folder, path) and path.is_file():
            setup[key] = path.read_bytes()
    return FolderSnapshot(files, frozenset(folders), setup)


def holds_results(folder: str | Path, since: FolderSnapshot | None = None) -> bool:
    """True when the run folder ``folder`` holds something a run produced: a checkpoint, a report,
    a metric in a TensorBoard event file or in a logger's ``metrics.csv``, any file of another
    kind. False when it holds only what set-up writes (:data:`SETUP_FILE_RE`, TensorBoard event
    files without data beyond :data:`SETUP_TAGS`, temporary ``.tmp-*`` files of an interrupted
    write, empty folders), or does not exist. With ``since`` (the folder's :func:`snapshot`
    before a run) only files added or changed since then count: did this run produce anything."""
    folder = Path(folder)
    for path in folder.rglob("*") if folder.is_dir() else ():
        if path.is_dir() and not path.is_symlink():
            continue
        if since is not None and since.unchanged(folder, path):
            continue
        name = path.name
        if name.startswith(TEMP_PREFIX) or _is_setup_file(folder, path):
            continue
        if name.startswith("events.out.tfevents.") and path.is_file() and not _events_hold_data(path):
            continue
        return True
    return False


def first_missing(folder: str | Path) -> Path | None:
    """The outermost folder on the way to ``folder`` that does not exist yet (``folder`` itself
    when only it is missing), i.e. what a run writing into ``folder`` will create; None when
    ``folder`` exists."""
    folder = Path(os.path.abspath(folder))
    if folder.exists():
        return None
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    return missing


def discard_empty_run(folder: str | Path, created: str | Path | None, force: bool = False) -> bool:
    """Remove the run folder ``folder`` of a stopped run when the run created it (``created``: the
    outermost folder it created on the way, :func:`first_missing` taken before the run; None: the
    folder existed, e.g. a resumed run, and is kept) and it holds nothing the run produced
    (:func:`holds_results`); the empty folders the run created above it go too, up to
    ``created``. ``force``: remove it even when it holds logged values (a run refused mid-way
    whose values are of no use, a ``monitor`` naming no metric). Returns True when the run folder
    was removed.

    A folder another run wrote into meanwhile is not empty and stays.
    """
    if created is None:
        return False
    folder, created = Path(os.path.abspath(folder)), Path(os.path.abspath(created))
    if not folder.is_dir() or (holds_results(folder) and not force):
        return False
    if folder != created and created not in folder.parents:
        return False
    shutil.rmtree(folder, ignore_errors=True)
    parent = folder.parent
    while parent == created or created in parent.parents:
        try:
            parent.rmdir()  # only when empty: another run may have written beside this one
        except OSError:
            break
        parent = parent.parent
    return not folder.exists()


def discard_stopped_additions(folder: str | Path, before: FolderSnapshot | None) -> bool:
    """Put the existing run folder ``folder`` back as :func:`snapshot` found it (``before``) after
    a run into it stopped before it produced anything (:func:`holds_results` since ``before``),
    e.g. ``test --ckpt_path last`` interrupted before its reports: the files the run added are
    removed (its ``test_config.yaml``, its event file holding only the hyperparameters, a ``.tmp-*``
    file, the folders it created), the set-up files it overwrote get their earlier bytes back
    (atomically, ``swar_bench.utils.files.atomic_write``). Returns True when the folder was put back; False
    when ``before`` is None, the folder is gone, or the run produced something (all is kept)."""
    folder = Path(os.path.abspath(folder))
    if before is None or not folder.is_dir() or holds_results(folder, since=before):
        return False
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # deepest first
        key = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink():
            if key not in before.folders:
                with contextlib.suppress(OSError):
                    path.rmdir()  # only when empty
        elif key in before.setup and not before.unchanged(folder, path):
            atomic_write(path, lambda handle, data=before.setup[key]: handle.write(data), binary=True)
            mtime = before.files[key][1]
            os.utime(path, ns=(mtime, mtime))
        elif key not in before.files:
            path.unlink(missing_ok=True)
    return True
