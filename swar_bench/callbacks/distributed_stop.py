"""``DistributedStop``: SIGTERM ends every rank of a distributed fit at the same batch.

Lightning's SIGTERM handler (2.6) runs a ``torch.distributed.broadcast`` inside the signal
handler, wherever the signal lands. In a DDP or FSDP fit the other ranks are then in the
backward pass's all-reduce (or another collective) and never join that broadcast: the ranks wait
for each other until the collective timeout (``--collective_timeout``, 600 s by default), so
``timeout 600 swar-bench fit ...``, ``kill PID`` or a scheduler's SIGTERM hung the run.

This callback (the ``swar-bench`` CLI always adds it; it does nothing in a one-process run)
replaces that handler while the Trainer runs with ``world_size > 1``: the signal only sets a flag,
forwarded once to the ranks this process launched (as Lightning's handler does). While the fit
trains, the ranks agree at the end of every training batch whether one of them received it (one
all-reduce of one boolean per batch, the same point on every rank); then every rank marks the
Trainer as terminated (``received_sigterm``) and Lightning stops each of them after that same batch
(``SIGTERMException``, exit 143, one line from rank 0 naming the checkpoint to resume from).
A signal that lands in a fit's sanity check or validation waits for the next training batch's end
too: marked at once, each rank would stop in its own validation batch (the ranks do not leave
validation together), and a rank already training would wait in its next collective for one that
had stopped. In ``validate``, ``test`` and ``predict``, where no training batch comes, the flag
marks the Trainer at once, as Lightning's handler did before 2.6.
Lightning puts the handler found before the run back when it ends.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import lightning.pytorch as pl


class DistributedStop(pl.Callback):
    """SIGTERM in a distributed run: a flag, agreed on by every rank at a training-batch boundary
    (see the module docstring). ``requested`` is this rank's flag; ``stopped_at`` the global step
    after which the ranks agreed to stop (None before)."""

    def __init__(self) -> None:
        self.requested = False
        self.stopped_at: int | None = None
        self._trainer: pl.Trainer | None = None
        self._forwarded = False

    def _install(self, trainer: pl.Trainer) -> None:
        if trainer.world_size <= 1 or threading.current_thread() is not threading.main_thread():
            return
        if self._trainer is None:
            self.requested, self.stopped_at, self._forwarded = False, None, False
        self._trainer = trainer
        # Lightning registered its handlers just before this hook (and recorded the ones it found,
        # which it puts back when the run ends, also after an exception)
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def on_sanity_check_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._install(trainer)

    on_train_start = on_validation_start = on_sanity_check_start

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._install(trainer)

    on_predict_start = on_test_start

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """Only flags (no collective, no I/O): safe wherever the signal lands."""
        trainer = self._trainer
        self.requested = True
        if trainer is None:
            return
        launcher = trainer.strategy.launcher
        if launcher is not None and not self._forwarded:  # the ranks this process started
            self._forwarded = True
            launcher.kill(signum)
        if not _fitting(trainer):  # validate / test / predict: no training-batch agreement to wait for
            trainer._signal_connector.received_sigterm = True

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self._trainer is None:
            return
        # every rank reaches this point once per batch: the one collective that decides the stop
        if trainer.strategy.reduce_boolean_decision(self.requested, all=False):
            self.stopped_at = trainer.global_step
            trainer._signal_connector.received_sigterm = True  # Lightning stops after this batch


def _fitting(trainer: Any) -> bool:
    """``trainer`` runs a fit (its sanity check, training or validation), where every rank reaches
    ``on_train_batch_end`` again unless the fit ends."""
    from lightning.pytorch.trainer.states import TrainerFn

    return getattr(getattr(trainer, "state", None), "fn", None) == TrainerFn.FITTING
