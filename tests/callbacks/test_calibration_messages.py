"""Calibration explains a NaN self-knowledge correlation once per run, not at every validation."""

from __future__ import annotations

import logging
import math

import lightning.pytorch as pl

from swar_bench.callbacks import Calibration

from .fakes import EvalOutputsModule, eval_loader, eval_outputs


def test_nan_correlation_reason_is_logged_once_per_prefix(caplog):
    callback = Calibration(write_reports=False)
    trainer = pl.Trainer(
        accelerator="cpu", logger=False, callbacks=[callback], enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )
    n32 = eval_outputs(32, [(0, "ar_valid", 1, True, 0.5, 0.5)] * 2, batch_size=1)
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            trainer.validate(EvalOutputsModule(), eval_loader([n32]), verbose=False)
            assert math.isnan(float(trainer.logged_metrics["val/self_knowledge_correlation"]))
        trainer.test(EvalOutputsModule(), eval_loader([n32]), verbose=False)
    lines = [r.getMessage() for r in caplog.records if "self_knowledge_correlation is NaN" in r.getMessage()]
    assert lines == [
        "val/self_knowledge_correlation is NaN: 1 evaluated N: the correlation needs at least 2",
        "test/self_knowledge_correlation is NaN: 1 evaluated N: the correlation needs at least 2",
    ]
