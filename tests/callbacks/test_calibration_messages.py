"""Calibration explains a NaN self-knowledge correlation once per run, not at every validation, and
only at debug level when fewer than 2 N were evaluated (fault: every quickstart fit, which
validates on n32 alone by design, printed that the correlation needs 2 N)."""

from __future__ import annotations

import logging
import math

import lightning.pytorch as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.callbacks import Calibration

from .fakes import EvalOutputsModule, eval_loader, eval_outputs

NOTE = "self_knowledge_correlation is NaN"
RANK_ZERO = "lightning.pytorch.utilities.rank_zero"
"""The logger of Lightning's rank_zero_info / rank_zero_debug."""


def _trainer(callback: Calibration) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        logger=False,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def _notes(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if NOTE in r.getMessage() and r.levelno == level]


def test_nan_correlation_reason_is_logged_once_per_prefix(caplog):
    """A NaN across 2 N (zero variance: the same accuracy and loss at both) is a finding: info, once."""
    callback = Calibration(write_reports=False)
    trainer = _trainer(callback)
    rows = [(0, "ar_valid", 1, True, 0.5, 0.5)] * 2
    batches = [eval_outputs(32, rows, batch_size=1), eval_outputs(64, rows, batch_size=1)]
    with caplog.at_level(logging.DEBUG, logger=RANK_ZERO):
        for _ in range(3):
            trainer.validate(EvalOutputsModule(), eval_loader(batches), verbose=False)
            assert math.isnan(float(trainer.logged_metrics["val/self_knowledge_correlation"]))
        trainer.test(EvalOutputsModule(), eval_loader(batches), verbose=False)
    reason = "zero variance"
    lines = _notes(caplog, logging.INFO)
    assert [line.split(":")[0] for line in lines] == ["val/" + NOTE, "test/" + NOTE]
    assert all(reason in line for line in lines), lines
    assert _notes(caplog, logging.DEBUG) == []


def test_the_reported_single_n_note_is_debug_only(caplog):
    """The reported input: validation on n32 alone, as configs/quickstart.yaml does at every fit."""
    callback = Calibration(write_reports=False)
    trainer = _trainer(callback)
    n32 = eval_outputs(32, [(0, "ar_valid", 1, True, 0.5, 0.5)] * 2, batch_size=1)
    with caplog.at_level(logging.DEBUG, logger=RANK_ZERO):
        for _ in range(3):
            trainer.validate(EvalOutputsModule(), eval_loader([n32]), verbose=False)
        trainer.test(EvalOutputsModule(), eval_loader([n32]), verbose=False)
    assert _notes(caplog, logging.INFO) == []
    assert _notes(caplog, logging.DEBUG) == [
        "val/self_knowledge_correlation is NaN: 1 evaluated N: the correlation needs at least 2",
        "test/self_knowledge_correlation is NaN: 1 evaluated N: the correlation needs at least 2",
    ]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ns=st.lists(st.sampled_from([32, 64, 128, 256]), min_size=1, max_size=3, unique=True),
    correct=st.lists(st.booleans(), min_size=12, max_size=12),
    losses=st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=12, max_size=12),
)
def test_the_nan_note_is_info_only_when_several_n_were_evaluated(caplog, ns, correct, losses):
    """The kind: any evaluated set of N and any answers: the NaN note is said once per pass kind,
    at info level exactly when the correlation is NaN across 2 or more N, and at debug level
    (never info) when one N was evaluated."""
    callback = Calibration(write_reports=False)
    trainer = _trainer(callback)
    batches = [
        eval_outputs(
            n, [(0, "passkey", -1, correct[4 * i + j], 0.5, losses[4 * i + j]) for j in range(4)], 1
        )
        for i, n in enumerate(ns)
    ]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=RANK_ZERO):
        for _ in range(2):
            trainer.validate(EvalOutputsModule(), eval_loader(batches), verbose=False)
    nan = math.isnan(float(trainer.logged_metrics["val/self_knowledge_correlation"]))
    info, debug = _notes(caplog, logging.INFO), _notes(caplog, logging.DEBUG)
    assert len(info) + len(debug) == (1 if nan else 0)
    assert len(info) == (1 if nan and len(ns) >= 2 else 0)
    assert len(debug) == (1 if nan and len(ns) == 1 else 0)
