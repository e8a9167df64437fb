"""Lightning's validation and test hooks in one place, for the callbacks that measure both passes
the same way (``AnswerTypeAccuracy``, ``Calibration``).

A subclass keeps one set of torchmetrics states per pass and implements three methods that take
the pass by name: ``stage`` is Lightning's ``"validation"`` or ``"test"`` (the name the contract-4
checks put in their error messages); :data:`PREFIX` gives the metric prefix (``val`` / ``test``).
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torchmetrics import Metric

PREFIX = {"validation": "val", "test": "test"}
"""Logged-metric prefix of each evaluation stage (``val/acc/...``, ``test/ece/...``)."""


def reset_metrics(pl_module: pl.LightningModule, *metrics: Metric) -> None:
    """Empty ``metrics`` and move them to ``pl_module``'s device (at the start of a pass)."""
    for metric in metrics:
        metric.reset()
        metric.to(pl_module.device)


class EvalHooks(Callback):
    """Routes ``on_{validation,test}_{epoch_start,batch_end,epoch_end}`` to
    :meth:`on_eval_epoch_start`, :meth:`on_eval_batch_end` and :meth:`on_eval_epoch_end` with the
    stage's name; each does nothing unless overridden."""

    def on_eval_epoch_start(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        """Start of a validation or test pass (reset that stage's states, :func:`reset_metrics`)."""

    def on_eval_batch_end(self, stage: str, outputs: Any) -> None:
        """After each evaluation step: ``outputs`` is the step's contract-4 dict."""

    def on_eval_epoch_end(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        """End of the pass: compute (states summed across ranks), log, keep the report."""

    def on_validation_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.on_eval_epoch_start("validation", trainer, pl_module)

    def on_validation_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        self.on_eval_batch_end("validation", outputs)

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.on_eval_epoch_end("validation", trainer, pl_module)

    def on_test_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.on_eval_epoch_start("test", trainer, pl_module)

    def on_test_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        self.on_eval_batch_end("test", outputs)

    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.on_eval_epoch_end("test", trainer, pl_module)
