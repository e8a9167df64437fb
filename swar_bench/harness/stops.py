"""Stops of a run and their exit statuses: Ctrl-C and SIGTERM recorded (``flag_sigint``) and
turned into 130 / 143 with one line naming what a resumed fit starts from (``stop_status``), and
a collective of a distributed run that timed out (``collective_timed_out``, ``stop_other_ranks``).
The Trainer of the run in progress is kept here (``set_run_trainer``) for those lines."""

from __future__ import annotations

import glob
import os
import signal
from typing import Any

import lightning.pytorch as pl

from swar_bench.runtime.slurm import resume_hint
from swar_bench.utils import interrupts

_RUN_TRAINER: pl.Trainer | None = None
"""The Trainer of the run in progress (set when it is built), for the stop line's resume hint."""


def flag_sigint() -> dict[int, Any]:
    """Install the recording Ctrl-C and SIGTERM handlers (``swar_bench.utils.interrupts``: Ctrl-C is
    Python's own ``KeyboardInterrupt``, remembered, since Lightning turns it into ``sys.exit(1)``,
    the exit code a non-finite loss also has; SIGTERM before Lightning's own handler exists,
    during the seconds of set-up, raises ``interrupts.Terminated``); returns the previous
    handlers for ``interrupts.restore``."""
    global _RUN_TRAINER
    _RUN_TRAINER = None
    return interrupts.install(sigterm=True)


def resume_checkpoint(trainer: pl.Trainer | None) -> str | None:
    """The checkpoint ``fit --ckpt_path last`` would resume from: the newest ``last*.ckpt`` of
    the trainer's ``ModelCheckpoint`` callbacks (their ``last_model_path`` and ``dirpath``, the
    files Lightning looks for with ``ckpt_path="last"``); None when none was written."""
    found = set()
    for callback in getattr(trainer, "checkpoint_callbacks", None) or []:
        if getattr(callback, "last_model_path", ""):
            found.add(callback.last_model_path)
        dirpath = getattr(callback, "dirpath", None)
        if dirpath and "://" not in str(dirpath):
            name = f"{callback.CHECKPOINT_NAME_LAST or 'last'}*{callback.FILE_EXTENSION}"
            found.update(glob.glob(os.path.join(glob.escape(str(dirpath)), name)))
    found = {path for path in found if os.path.isfile(path)}
    return max(found, key=os.path.getmtime) if found else None


def stop_status(exc: BaseException, prog: str, subcommand: str | None) -> int | None:
    """The exit status of a run Lightning ended because of a signal, after one line on stderr
    (from rank 0 only; ``interrupts.report_stop``): 143 for SIGTERM (Lightning's ``SIGTERMException``, a ``SystemExit``
    with code None that would read as success; or ``interrupts.Terminated`` before Lightning's
    handler existed), 130 for Ctrl-C. None for any other exit. For fit and demo the line names
    the checkpoint ``fit --ckpt_path last`` would resume from, when one exists
    (``resume_checkpoint``); in a SLURM job with requeue, the one the requeued job resumes from
    (``swar_bench.runtime.slurm.resume_hint``)."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    if isinstance(exc, (SIGTERMException, interrupts.Terminated)):
        stop: type[BaseException] = interrupts.Terminated
    elif interrupts.stopped() is KeyboardInterrupt:
        stop = KeyboardInterrupt
    else:
        return None
    hint = None
    if subcommand in ("fit", "demo"):
        hint = resume_hint()  # in a SLURM job with requeue: what the requeued job resumes from
        checkpoint = None if hint else resume_checkpoint(_RUN_TRAINER)
        if checkpoint is not None:  # no hint when nothing was saved: a new fit would start from scratch
            hint = f"fit --ckpt_path last resumes from {checkpoint}"
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    # the Trainer's global rank once it is set up, else RANK, LOCAL_RANK or SLURM_PROCID (srun)
    if int(getattr(rank_zero_only, "rank", 0) or 0) == 0:
        return interrupts.report_stop(prog, stop, hint or "")
    return interrupts.stop_status(stop)


def recorded_stop_status(err: BaseException, prog: str, subcommand: str | None) -> int | None:
    """The exit status of a run that ended in ``err`` (an ``Exception``) after a Ctrl-C or SIGTERM
    was recorded (``interrupts.stopped()``), after the stop's one line (:func:`stop_status`); None
    when no stop was recorded. A ``KeyboardInterrupt`` that lands inside a library's lock handling
    can come out as another error: ``threading.Event.wait`` interrupted inside ``Thread.start``
    (TensorBoard's writer starting) raised ``RuntimeError: release unlocked lock``. The run ended
    because it was stopped: it says so, 130 / 143, not a traceback."""
    stopped = interrupts.stopped()
    if stopped is None or not isinstance(err, Exception):
        return None
    return stop_status(stopped(), prog, subcommand)


def collective_timed_out(err: BaseException) -> bool:
    """``err`` is a torch.distributed collective that waited past its timeout (gloo: "Timed out
    waiting ... for recv", NCCL's watchdog: "Watchdog caught collective operation timeout")."""
    import torch.distributed as dist

    text = str(err).lower()
    return (isinstance(err, getattr(dist, "DistError", ())) or dist.is_available() and dist.is_initialized()) and (
        "timed out" in text or "timeout" in text)


PEER_GONE = ("connection closed by peer", "connection reset by peer", "broken pipe")
"""How gloo's collectives fail when another rank's process has ended (``RuntimeError``:
``[.../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:46313``)."""


def peer_gone(err: BaseException) -> bool:
    """``err`` is a collective that failed because another rank's process ended (``PEER_GONE``)."""
    text = str(err).lower()
    return any(words in text for words in PEER_GONE)


def stop_other_ranks() -> None:
    """Kill the ranks this process launched (Lightning's subprocess launcher, rank 0) after a
    collective timed out: a stopped rank would otherwise outlive the run."""
    from lightning.pytorch.strategies.launchers.subprocess_script import _SubprocessScriptLauncher

    launcher = getattr(getattr(_RUN_TRAINER, "strategy", None), "launcher", None)
    if isinstance(launcher, _SubprocessScriptLauncher):
        launcher.kill(signal.SIGKILL)


def set_run_trainer(trainer: pl.Trainer | None) -> None:
    """Record ``trainer`` as the Trainer of the run in progress (``SwarBenchCLI.instantiate_trainer``)."""
    global _RUN_TRAINER
    _RUN_TRAINER = trainer


def run_trainer() -> pl.Trainer | None:
    """The Trainer of the run in progress, None before it is built (:func:`flag_sigint` clears it)."""
    return _RUN_TRAINER
