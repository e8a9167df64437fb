"""Lightning's validation and test hooks in one place, for the callbacks that measure both passes
the same way (``AnswerTypeAccuracy``, ``Calibration`` for passkey_swar, ``MQARAccuracy`` for
MQAR). Each callback names the DataModule ``task`` it measures; on another task's passes its
hooks do nothing (:meth:`EvalHooks.serves`).

A subclass keeps one set of torchmetrics states per pass and implements three methods that take
the pass by name: ``stage`` is Lightning's ``"validation"`` or ``"test"`` (the name
:func:`check_eval_outputs` puts in its error message); :data:`PREFIX` gives the metric prefix
(``val`` / ``test``). What a step hands them is :class:`swar_bench.module.EvalOutputs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torchmetrics import Metric

from swar_bench.callbacks.reporting import report_dir
from swar_bench.module import EvalOutputs

PREFIX = {"validation": "val", "test": "test"}
"""Logged-metric prefix of each evaluation stage (``val/acc/...``, ``test/ece/...``)."""


def check_eval_outputs(outputs: Any, stage: str = "validation") -> EvalOutputs:
    """``outputs`` when it is an :class:`~swar_bench.module.EvalOutputs`.

    Raises:
        TypeError: anything else, naming the step (``<stage>_step``) and what it returned.
    """
    if not isinstance(outputs, EvalOutputs):
        raise TypeError(
            f"{stage}_step returned {type(outputs).__name__}: expected swar_bench.module.EvalOutputs "
            "(what TBPTTModule's evaluation steps return)"
        )
    return outputs


def reset_metrics(pl_module: pl.LightningModule, *metrics: Metric) -> None:
    """Empty ``metrics`` and move them to ``pl_module``'s device (at the start of a pass)."""
    for metric in metrics:
        metric.reset()
        metric.to(pl_module.device)


class EvalHooks(Callback):
    """Routes ``on_{validation,test}_{epoch_start,batch_end,epoch_end}`` to
    :meth:`on_eval_epoch_start`, :meth:`on_eval_batch_end` and :meth:`on_eval_epoch_end` with the
    stage's name; each does nothing unless overridden.

    For a callback that keeps a report per pass, :meth:`keep_report` stores it as ``val_report`` /
    ``test_report`` and, after a test pass with ``write_reports``, calls the subclass's
    ``write_test_reports(trainer, out)`` on global rank 0 only, ``out`` being
    :func:`~swar_bench.callbacks.reporting.report_dir` (resolved on every rank: it is a collective);
    the paths it returns become ``report_paths``.
    """

    out_dir: str | None = None
    write_reports: bool = True
    task: str = "passkey_swar"
    """The DataModule task this callback measures; on another task's passes it does nothing."""

    def serves(self, trainer: pl.Trainer) -> bool:
        """True when the trainer's DataModule serves :attr:`task` (a DataModule without a
        ``task`` attribute, or none, serves passkey_swar)."""
        datamodule = getattr(trainer, "datamodule", None)
        return getattr(datamodule, "task", "passkey_swar") == self.task

    def keep_report(self, stage: str, trainer: pl.Trainer, report: Any) -> None:
        """Store ``report`` of ``stage``; after a test pass, write the reports (see the class)."""
        if stage != "test":
            self.val_report = report
            return
        self.test_report = report
        if not self.write_reports:
            return
        out = report_dir(trainer, self.out_dir)  # on every rank: trainer.log_dir is a collective
        if trainer.is_global_zero:
            self.report_paths = self.write_test_reports(trainer, out)

    def write_test_reports(self, trainer: pl.Trainer, out: Path) -> list[str]:
        """Write the test pass's report files into ``out`` (global rank 0); their paths."""
        raise NotImplementedError(f"{type(self).__name__} keeps reports but does not write them")

    def on_eval_epoch_start(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        """Start of a validation or test pass (reset that stage's states, :func:`reset_metrics`)."""

    def on_eval_batch_end(self, stage: str, outputs: Any) -> None:
        """After each evaluation step: ``outputs`` is what the step returned, an
        :class:`~swar_bench.module.EvalOutputs` (:func:`check_eval_outputs`)."""

    def on_eval_epoch_end(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        """End of the pass: compute (states summed across ranks), log, keep the report."""

    def on_validation_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.serves(trainer):
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
        if self.serves(trainer):
            self.on_eval_batch_end("validation", outputs)

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.serves(trainer):
            self.on_eval_epoch_end("validation", trainer, pl_module)

    def on_test_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.serves(trainer):
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
        if self.serves(trainer):
            self.on_eval_batch_end("test", outputs)

    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.serves(trainer):
            self.on_eval_epoch_end("test", trainer, pl_module)
