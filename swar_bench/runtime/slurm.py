"""SLURM: the newest checkpoint of a run, which a requeued job resumes from.

``scripts/slurm/fit.sbatch`` asks SLURM for ``SIGUSR1`` before the time limit and for a requeue;
``swar_bench.callbacks.slurm_requeue.SlurmRequeue`` then saves ``hpc_ckpt_<k>.ckpt`` at a batch
boundary and requeues the job.

``newest_checkpoint`` picks what a requeued job resumes from: the checkpoint with the largest
recorded ``global_step`` (file times are not used), so a requeue without the signal (``scontrol
requeue``, a node failure) never goes back to an older ``hpc_ckpt_*`` when ``last.ckpt`` is newer.
``swar-bench fit --ckpt_path last`` with a fixed logger version (what the sbatch script passes)
resumes from it (``swar_bench.harness.runs.last_checkpoint``).
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterable

_RESUME_DIRS: tuple[str, ...] = ()
"""Folders whose checkpoints a requeued job resumes from (set by an active ``SlurmRequeue``)."""


def set_resume_folders(*folders: str | os.PathLike) -> None:
    """Record the folders a requeued job of this process resumes from (none: not in such a job);
    ``resume_hint`` reads them."""
    global _RESUME_DIRS
    _RESUME_DIRS = tuple(dict.fromkeys(os.fspath(f) for f in folders))


def checkpoint_progress(path: str | os.PathLike) -> tuple[int, int]:
    """``(global_step, training batches completed)`` recorded in a Lightning checkpoint.

    ``global_step`` counts optimizer steps (one per TBPTT chunk); the batch count (0 when the
    checkpoint has no loop state) separates checkpoints of a parameter-free mechanism, whose
    ``global_step`` stays 0. Raises OSError / RuntimeError / KeyError / pickle errors when
    ``path`` is not a readable checkpoint.
    """
    # imported here: importing this module (swar_bench.harness.runs does) stays cheap
    from swar_bench.runtime.checkpoint_io import load_checkpoint

    checkpoint = load_checkpoint(path, mmap=True)
    step = int(checkpoint["global_step"])
    try:
        batches = int(checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]["total"]["completed"])
    except (KeyError, TypeError):
        batches = 0
    return step, batches


def resume_candidates(*folders: str | os.PathLike) -> list[str]:
    """Every ``*.ckpt`` file directly in ``folders`` (``hpc_ckpt_<k>.ckpt``, ``last.ckpt``, top-k
    checkpoints), sorted by name; folders that do not exist contribute nothing."""
    found: set[str] = set()
    for folder in folders:
        found.update(p for p in glob.glob(os.path.join(glob.escape(os.fspath(folder)), "*.ckpt")) if os.path.isfile(p))
    return sorted(found)


def newest_checkpoint(paths: Iterable[str | os.PathLike], warn=None) -> tuple[str, int] | None:
    """The checkpoint of ``paths`` with the largest recorded progress, as ``(path, global_step)``.

    Progress is ``checkpoint_progress`` (global step, then training batches completed); on a tie
    an ``hpc_ckpt_*`` wins (it was written last, on the requeue signal), then the later name.
    Files that cannot be read as checkpoints (e.g. cut short by a node failure) are skipped,
    each with one line passed to ``warn`` (default: stderr). None when no file is readable.
    """
    say = warn or (lambda line: print(line, file=sys.stderr))
    best: tuple[tuple[int, int, bool, str], str, int] | None = None
    for path in paths:
        path = os.fspath(path)
        try:
            step, batches = checkpoint_progress(path)
        except Exception as err:  # noqa: BLE001 - any failure means "not a checkpoint we can resume"
            say(f"skipping {path}: not a readable checkpoint ({type(err).__name__})")
            continue
        key = (step, batches, os.path.basename(path).startswith("hpc_ckpt_"), os.path.basename(path))
        if best is None or key > best[0]:
            best = (key, path, step)
    return None if best is None else (best[1], best[2])


def resume_hint() -> str | None:
    """What a requeued job of this process would resume from, as a phrase for a stop message
    (e.g. ``"the requeued job resumes from runs/x/hpc_ckpt_1.ckpt, global step 40"``); None
    outside a SLURM job with auto-requeue."""
    if not _RESUME_DIRS:
        return None
    newest = newest_checkpoint(resume_candidates(*_RESUME_DIRS), warn=lambda line: None)
    if newest is None:
        return "the requeued job starts afresh: no checkpoint was saved"
    return f"the requeued job resumes from {newest[0]}, global step {newest[1]}"
