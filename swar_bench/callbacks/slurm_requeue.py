"""SlurmRequeue: SLURM's requeue signal handled at a batch boundary.

``scripts/slurm/fit.sbatch`` asks SLURM for ``SIGUSR1`` before the time limit and for a requeue.
Lightning's own handler (``SLURMEnvironment(auto_requeue=True)``) saves ``hpc_ckpt_<k>.ckpt``
inside the signal handler, i.e. wherever the signal lands: in the middle of a batch, between two
of its TBPTT chunks (each chunk is one optimizer step). A run resumed from such a checkpoint
replays the batch, so its steps, validations and final weights no longer match an uninterrupted
run (validation on steps 99/149/199 instead of 100/150/200, ``max_steps`` missed by one).

This callback (the ``swar-bench`` CLI always adds it; it does nothing outside a SLURM job with
auto-requeue) replaces that handler: the signal only sets a flag; at the end of the
current training batch the ranks agree that one of them received it (one all-reduce per batch);
after the validation that is due on that batch, if any, every rank takes part in saving
``<run folder>/checkpoints/hpc_ckpt_<k>.ckpt`` and global rank 0 runs ``scontrol requeue <job>``. The
run then goes on until SLURM stops it (SIGTERM), as with Lightning's handler. A resume from that
checkpoint is a resume from a batch boundary, which equals the uninterrupted run (steps,
validations, weights).

What a requeued job resumes from: ``swar_bench.runtime.slurm.newest_checkpoint``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.utilities.rank_zero import rank_zero_info, rank_zero_warn

from swar_bench.runtime.slurm import set_resume_folders


def _job_id() -> str | None:
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID")
    if array_job and os.environ.get("SLURM_ARRAY_TASK_ID"):
        return f"{array_job}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    return os.environ.get("SLURM_JOB_ID")


class SlurmRequeue(pl.Callback):
    """On SLURM's requeue signal: save ``hpc_ckpt_<k>.ckpt`` at the next batch boundary, then
    ``scontrol requeue`` the job (see the module docstring).

    Active during ``fit`` when the Trainer's cluster environment is Lightning's
    ``SLURMEnvironment`` with ``auto_requeue`` (the default inside a SLURM job): when training
    starts it replaces Lightning's handler for the environment's ``requeue_signal`` (SIGUSR1);
    Lightning puts the handler found before the run back when the run ends. ``saved`` holds the
    path of the last checkpoint it wrote (None before).
    """

    def __init__(self) -> None:
        self.saved: str | None = None
        self._active = False
        self._signum: int | None = None
        self._requested = False
        self._save_after_validation = False

    # ------------------------------------------------------------------ set-up

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        from lightning.fabric.plugins.environments import SLURMEnvironment

        self._active = False
        if stage == "fit":
            set_resume_folders()
        if stage != "fit" or threading.current_thread() is not threading.main_thread():
            return
        environment = trainer._accelerator_connector.cluster_environment  # what Lightning's signal connector reads
        if not (isinstance(environment, SLURMEnvironment) and environment.auto_requeue):
            return
        self._signum = int(environment.requeue_signal or signal.SIGUSR1)
        self._active, self._requested, self._save_after_validation = True, False, False

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self._active or self._signum is None:
            return
        # Lightning installed its handlers just before (after recording the ones it found, which
        # it puts back when the run ends, also on an exception): replace its SIGUSR1 handler.
        signal.signal(self._signum, self._on_signal)
        set_resume_folders(self.folder(trainer))
        run_folder = getattr(trainer.logger, "log_dir", None) if trainer.logger is not None else None
        if trainer.is_global_zero and run_folder:
            _link_job_log(str(run_folder))

    @staticmethod
    def folder(trainer: pl.Trainer) -> str:
        """Where the requeue checkpoint goes: the checkpoint folder of the run (``<run
        folder>/checkpoints``), else the Trainer's ``default_root_dir``."""
        dirpath = getattr(trainer.checkpoint_callback, "dirpath", None)
        return str(dirpath if dirpath else trainer.default_root_dir)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._active:  # a run that ended normally needs no resume hint (a stopped one keeps it)
            set_resume_folders()
        self._active = False

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._requested = True  # only a flag: the checkpoint is saved at the next batch boundary

    # ------------------------------------------------------------------ the batch boundary

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        if not self._active or self._save_after_validation:
            return
        requested = self._requested
        if trainer.world_size > 1:  # every rank decides the same, at the same batch
            requested = bool(trainer.strategy.reduce_boolean_decision(requested, all=False))
        if not requested:
            return
        self._requested = False
        if _validation_due(trainer):
            # a checkpoint taken before this validation would skip it on resume
            self._save_after_validation = True
            return
        self._save_and_requeue(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._active and self._save_after_validation and not trainer.sanity_checking:
            self._save_after_validation = False
            self._save_and_requeue(trainer)

    def _save_and_requeue(self, trainer: pl.Trainer) -> None:
        path = trainer.strategy.broadcast(trainer._checkpoint_connector.hpc_save_path(self.folder(trainer)))
        for logger in trainer.loggers:
            logger.save()
        trainer.save_checkpoint(path)
        self.saved = path
        if not trainer.is_global_zero:
            return
        job = _job_id()
        rank_zero_info(f"requeue signal: saved {path} at global step {trainer.global_step}")
        if job is None:
            rank_zero_warn("requeue signal outside a SLURM job (no SLURM_JOB_ID): the job is not requeued")
            return
        from swar_bench.utils import slurm_commands

        try:  # its failure in one line (not found, or its exit status and last line), never its raw output
            slurm_commands.run(["scontrol", "requeue", job], timeout=120)
        except slurm_commands.SlurmCommandError as err:
            rank_zero_warn(f"scontrol requeue {job}: {err}; the job is not requeued (submitted without --requeue?)")
            return
        rank_zero_info(f"requeued SLURM job {job}")


def _link_job_log(run_folder: str) -> None:
    """``<run folder>/slurm.out``: a link to the job's output file (SLURM opens it in the submit
    directory before the job starts, when the run folder may not exist yet). Nothing when
    ``scontrol`` cannot say where it is."""
    job = _job_id()
    if job is None:
        return
    try:
        shown = subprocess.run(["scontrol", "show", "job", "-o", job], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return
    stdout = next((f.split("=", 1)[1] for f in shown.stdout.split() if f.startswith("StdOut=")), None)
    if shown.returncode != 0 or not stdout or not os.path.isabs(stdout):
        return
    link = os.path.join(run_folder, "slurm.out")
    tmp = f"{link}.tmp.{os.getpid()}"
    try:
        os.makedirs(run_folder, exist_ok=True)
        os.symlink(stdout, tmp)
        os.replace(tmp, link)
    except OSError as err:
        rank_zero_warn(f"could not link the job's log {stdout} into {run_folder} ({err.strerror or err})")


def _validation_due(trainer: pl.Trainer) -> bool:
    """Whether the fit loop validates right after the current training batch (Lightning's own test)."""
    fit_loop = trainer.fit_loop
    try:
        return bool(fit_loop.epoch_loop._should_check_val_fx(fit_loop._data_fetcher))
    except (AttributeError, TypeError, AssertionError):
        return False
