"""Run-folder handling of ``fit`` / ``validate`` / ``test`` (beside ``swar_bench.harness.runs``,
which names and finds the folders): what ``--ckpt_path last`` resumes (``readable_resume``,
``completed_resume``), a fresh start that would write over a run (``check_fresh_start``), the
folder lock of a fit (``fit_lock_folders``, ``holding_fit_folder``) and a stopped run's empty
folder removed (``discarding_empty_run``)."""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swar_bench.config_errors import one_line as _one_line


def rank_zero() -> bool:
    """This process is global rank 0 (or the only one)."""
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    # the Trainer's global rank once it is set up, else RANK, LOCAL_RANK or SLURM_PROCID (srun)
    return int(getattr(rank_zero_only, "rank", 0) or 0) == 0


def fresh_start_notice(folder: str | os.PathLike) -> None:
    """One line on stderr (rank 0) when ``fit --ckpt_path last`` finds no checkpoint: the run
    starts from scratch, as Lightning's own ``ckpt_path="last"`` does ("not an error so it can be
    set and forget before the first fit run", ``_CheckpointConnector._parse_ckpt_path``): the
    first job of a SLURM array or a requeued sweep uses the same command as the ones that
    resume."""
    if rank_zero():
        print(f"swar-bench fit: no checkpoint to resume in {folder}; starting from scratch", file=sys.stderr, flush=True)


def readable_resume(path: str, subcommand: str | None) -> str:
    """The checkpoint ``--ckpt_path last`` resumes: the checkpoint of ``path``'s folder with the
    most recorded progress (``swar_bench.runtime.slurm.newest_checkpoint``: global step, then batches;
    read weights only), ``path`` itself on a tie. Two faults leave ``path`` (a ``last.ckpt``) behind
    another checkpoint of its folder, and each is said in one line on stderr (rank 0) naming both:
    ``path`` cannot be read (cut short by a kill or a full disk), or a step checkpoint records more
    progress than ``path`` (a run killed between its two saves: Lightning's ``ModelCheckpoint``
    writes ``epoch=E-step=S.ckpt``, then ``last.ckpt``). Resuming from the newer one loses no
    steps, and its ``ModelCheckpoint`` state names it, so the resumed run's next save replaces it:
    no stray file is left.

    Raises:
        ValueError: ``path`` cannot be read and no checkpoint beside it can (one line)."""
    from swar_bench.runtime.slurm import checkpoint_progress, newest_checkpoint, resume_candidates

    folder = os.path.dirname(path) or "."
    others = [p for p in resume_candidates(folder) if os.path.abspath(p) != os.path.abspath(path)]
    newest = newest_checkpoint(others, warn=lambda line: None)
    try:
        progress = checkpoint_progress(path)
    except Exception as err:  # noqa: BLE001 - truncated, not a checkpoint, refused: fall back below
        reason = f"{type(err).__name__}: {_one_line(str(err))[:120]}"
        if newest is None:
            raise ValueError(
                f"--ckpt_path=last: {path} cannot be read ({reason}) and no other checkpoint beside it can; expected a "
                f"checkpoint file to resume from (--ckpt_path FILE), or a new run into another folder"
            ) from None
        if rank_zero():
            print(f"swar-bench {subcommand}: {path} cannot be read ({reason}); resuming from {newest[0]} (global step "
                  f"{newest[1]}), the newest checkpoint beside it that can", file=sys.stderr, flush=True)
        return newest[0]
    if newest is None or checkpoint_progress(newest[0]) <= progress:
        return path
    if rank_zero():
        print(f"swar-bench {subcommand}: {newest[0]} (global step {newest[1]}) is newer than {path} (global step "
              f"{progress[0]}), left by a run stopped between its two saves; resuming from {newest[0]}",
              file=sys.stderr, flush=True)
    return newest[0]


def completed_resume(chosen: str, found: str, cfg: Any, subcommand: str | None) -> str:
    """The file a ``fit --ckpt_path last`` resumes from once its folder is locked
    (:func:`holding_fit_folder`): when :func:`readable_resume` chose a step checkpoint over
    ``found`` (the folder's ``last.ckpt``, unreadable or behind it; or no ``last.ckpt`` at all),
    the save the kill interrupted is completed: ``chosen`` is copied over ``last.ckpt`` (beside it,
    then renamed) and the run resumes from ``last.ckpt``. Lightning never removes the checkpoint a
    run resumed from (``ModelCheckpoint._should_remove_checkpoint``), so resuming from the step
    checkpoint itself would leave it behind for good; resumed from ``last.ckpt``, the step
    checkpoint is managed as any other (replaced by the next save, or kept while in the top k).
    ``chosen`` unchanged for other commands (they write no checkpoint), global ranks other than 0,
    a SLURM ``hpc_ckpt_*`` (Lightning's own resume file), or a run without ``save_last``."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    from swar_bench.utils.files import atomic_path

    name = os.path.basename(chosen)
    if subcommand != "fit" or name.startswith((ModelCheckpoint.CHECKPOINT_NAME_LAST, "hpc_ckpt_")) or not rank_zero():
        return chosen
    last = found if os.path.basename(found).startswith(ModelCheckpoint.CHECKPOINT_NAME_LAST) else None
    if last is None and (cfg.get("checkpoint") or {}).get("save_last"):
        last = os.path.join(os.path.dirname(chosen), ModelCheckpoint.CHECKPOINT_NAME_LAST + ModelCheckpoint.FILE_EXTENSION)
    if last is None:
        return chosen
    import shutil

    with atomic_path(last) as tmp:
        shutil.copyfile(chosen, tmp)
    return last


def fresh_checkpoint_folder(cfg: Any) -> tuple[str, str] | None:
    """``(option, folder)``: the checkpoint folder a ``fit`` of ``cfg`` writes into when it is
    fixed before the run starts, with the option that fixed it: ``--checkpoint.dirpath``, a
    forced logger version (``<save_dir>/<name>/<version>/checkpoints``, after
    ``_configure_run_folder``) or ``--trainer.logger=false`` (``<default_root_dir>/checkpoints``).
    None when the logger picks a new ``version_N`` (a new folder) or the folder is remote."""
    from swar_bench.harness import runs

    dirpath = (cfg.get("checkpoint") or {}).get("dirpath")
    if dirpath:
        folder, option = str(dirpath), f"--checkpoint.dirpath={dirpath}"
    else:
        logger = cfg.get("trainer.logger")
        init_args = getattr(logger, "init_args", None)
        if logger is None or logger is False:
            root = cfg.get("trainer.default_root_dir") or "."
            folder, option = os.path.join(str(root), "checkpoints"), "--trainer.logger=false"
        elif init_args is not None and init_args.get("version") is not None and str(
                getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger")):
            version = init_args.get("version")
            folder = os.path.join(str(init_args.get("save_dir") or "."), str(init_args.get("name") or ""),
                                  runs.version_folder(version), "checkpoints")
            option = f"--trainer.logger.init_args.version={version}"
        else:
            return None
    return None if "://" in folder else (option, folder)


def check_fresh_start(cfg: Any) -> None:
    """A ``fit`` without a checkpoint to resume never writes over the checkpoints of another run:
    ValueError (one line naming the folder, its checkpoints and ``--ckpt_path last``) when the
    checkpoint folder it would write into (:func:`fresh_checkpoint_folder`) already holds
    ``*.ckpt`` files. A resumed fit (``--ckpt_path``) continues the run whose checkpoints they are."""
    from swar_bench.harness import runs

    where = fresh_checkpoint_folder(cfg)
    if where is None:
        return
    option, folder = where
    found = runs.existing_checkpoints(folder)
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ValueError(
            f"{option}: {folder} already holds the checkpoints of a run ({shown}); a new run never writes over them: "
            "expected --ckpt_path last to resume that run, or another folder for a new one"
        )


def fit_lock_folders(cfg: Any) -> list[str]:
    """The local folders a ``fit`` of ``cfg`` writes into that another fit may write into too,
    each locked for the whole run (:func:`holding_fit_folder`): the run folder
    ``<save_dir>/<name>/<version>`` once its version is fixed (a resumed run, a forced version;
    :meth:`SwarBenchCLI._configure_run_folder`), ``--checkpoint.dirpath``, and
    ``<default_root_dir>/checkpoints`` without a logger. A new run's ``version_N`` (picked by the
    logger, a new folder) is not among them; nor are remote folders."""
    from swar_bench.harness import runs

    folders = []
    where = fresh_checkpoint_folder(cfg)
    logger = cfg.get("trainer.logger")
    init_args = getattr(logger, "init_args", None)
    if where is not None and where[0].startswith("--trainer.logger.init_args.version"):
        folders.append(os.path.dirname(where[1]))  # the run folder: its logs, reports and checkpoints
    elif where is not None:
        folders.append(where[1])
    if (init_args is not None and init_args.get("version") is not None and where is not None
            and where[0].startswith("--checkpoint.dirpath")
            and str(getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger"))):
        folders.append(os.path.join(str(init_args.get("save_dir") or "."), str(init_args.get("name") or ""),
                                    runs.version_folder(init_args.get("version"))))
    return [f for f in dict.fromkeys(os.path.normpath(f) for f in folders) if "://" not in f]


@contextlib.contextmanager
def holding_fit_folder(folder: str, checkpoint_folder: str | None) -> Iterator[None]:
    """Hold ``folder``'s lock (``swar_bench.utils.locks.folder_lock``, ``DIR/.swar-bench.lock``) for the
    block: a second ``fit`` into it (two ``--ckpt_path last`` resuming one run) is refused in one
    line naming the holder (``FolderLockedError``, exit 1), before it reads or writes anything. A
    killed holder's lock goes with it (the kernel releases a ``flock``). Holding it, the temporary
    files ``.tmp-*.ckpt`` a killed save left in ``checkpoint_folder`` are removed (one line each):
    no other writer can own them. A folder the lock created and the run left empty is removed,
    whether the block ends normally or with an error."""
    from swar_bench.utils.files import TEMP_PREFIX
    from swar_bench.utils.locks import LOCK_NAME, folder_lock

    created = runs_first_missing(folder)
    try:
        with folder_lock(folder, f"swar-bench fit into {folder}"):
            if checkpoint_folder is not None and os.path.isdir(checkpoint_folder):
                for path in sorted(glob.glob(os.path.join(glob.escape(checkpoint_folder), TEMP_PREFIX + "*.ckpt"))):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                        print(f"swar-bench fit: removed {path}, left by a run stopped while saving", file=sys.stderr, flush=True)
            yield
    finally:
        # after a normal end and after an error alike: a folder the run wrote nothing into goes
        if created is not None and os.path.isdir(folder) and os.listdir(folder) == [LOCK_NAME]:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, LOCK_NAME))
                absolute = Path(os.path.abspath(folder))
                for path in [absolute, *absolute.parents]:  # up to the outermost folder it created
                    path.rmdir()
                    if path == Path(created):
                        break


def runs_first_missing(folder: str) -> str | None:
    """The outermost missing folder of ``folder``'s path (``swar_bench.harness.runs.first_missing``), None when it exists."""
    from swar_bench.harness import runs

    missing = runs.first_missing(folder)
    return None if missing is None else str(missing)


@contextlib.contextmanager
def discarding_empty_run(trainer: Any) -> Iterator[None]:
    """Run the block (a ``trainer.fit`` / ``test``); when it ends with an exception (Ctrl-C,
    SIGTERM, Lightning's ``sys.exit`` after them, an error) remove the run folder if this run
    created it and it holds nothing the run produced (``swar_bench.harness.runs.discard_empty_run``): no
    checkpoint saved by any ``ModelCheckpoint`` of the trainer, no logged metric, no report. A
    folder that existed (``test --ckpt_path last``, a resumed fit) is put back as it was when the
    run produced nothing in it or in a ``--checkpoint.dirpath`` elsewhere
    (``swar_bench.harness.runs.discard_stopped_additions``). On global rank 0 only, and only for a
    logger's local folder; the exception is raised again."""
    from swar_bench.harness import runs

    folder = None
    if getattr(trainer, "logger", None) is not None and rank_zero():
        folder = run_folder(trainer)
        folder = None if "://" in folder else folder
    created = runs.first_missing(folder) if folder is not None else None
    before = runs.snapshot(folder) if folder is not None and created is None else None
    # checkpoints written outside the run folder (--checkpoint.dirpath) count as produced too
    elsewhere = {
        path: runs.snapshot(path)
        for path in (str(getattr(cb, "dirpath", None) or "") for cb in getattr(trainer, "checkpoint_callbacks", None) or [])
        if path and "://" not in path and (folder is None or not Path(path).absolute().is_relative_to(Path(folder).absolute()))
    }
    try:
        if folder is not None:
            make_writers(trainer)
        yield
    except BaseException as err:
        from lightning.pytorch.trainer.states import TrainerStatus

        from swar_bench.harness.monitors import monitor_refusal

        state = getattr(trainer, "state", None)
        if folder is not None and getattr(state, "status", None) is not TrainerStatus.INTERRUPTED:
            # stopped before Lightning's own handling ran (a stop held while the writers were made,
            # or landing before the run started): the loggers are closed as Lightning closes them
            for logger in getattr(trainer, "loggers", None) or []:
                logger.finalize("failed")

        if created is not None:
            saved = any(
                getattr(callback, "last_model_path", "") or getattr(callback, "best_model_path", "")
                for callback in getattr(trainer, "checkpoint_callbacks", None) or []
            )
            if not saved:  # a monitor naming no metric: the values logged before are of no use
                runs.discard_empty_run(folder, created, force=monitor_refusal(err) is not None)
        elif before is not None and not any(runs.holds_results(path, since=snap) for path, snap in elsewhere.items()):
            runs.discard_stopped_additions(folder, before)
        raise


def make_writers(trainer: Any) -> None:
    """Make the event-file writer of each TensorBoard logger of ``trainer`` now, with a Ctrl-C or
    SIGTERM held until it is made (``interrupts.deferred``), where Lightning would make it as its
    set-up starts. A stop that landed inside it (TensorBoard starts a writer thread) left the writer
    half made: ``RuntimeError: release unlocked lock`` from ``Thread.start``, or a thread still
    writing into the run folder after the stopped run's folder was removed (a
    ``FileNotFoundError`` traceback after the stop's line). The run folder is the same one."""
    from lightning.pytorch.loggers import TensorBoardLogger

    from swar_bench.utils import interrupts

    loggers = [logger for logger in getattr(trainer, "loggers", None) or [] if isinstance(logger, TensorBoardLogger)]
    if not loggers:
        return
    try:  # imported before the held section: it takes a second (tensorboardX alone: Lightning's other writer)
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        pass
    with interrupts.deferred():
        for logger in loggers:
            _ = logger.experiment


def run_folder(trainer: Any) -> str:
    """The folder a run writes into: its logger's ``log_dir`` (the Trainer's ``default_root_dir``
    without a logger). Read from the logger, not ``trainer.log_dir``, which is a collective."""
    logger = trainer.logger
    log_dir = getattr(logger, "log_dir", None) if logger is not None else None
    return str(log_dir if log_dir is not None else trainer.default_root_dir)
