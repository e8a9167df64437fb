"""Calibration: self-knowledge correlation and ECE against hand-computed values."""

from __future__ import annotations

import math

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torchmetrics.classification import BinaryCalibrationError

from swar_bench.callbacks import (
    AnswerTypeCounts,
    Calibration,
    CalibrationCounts,
    CalibrationReport,
    self_knowledge_correlation,
)
from swar_bench.callbacks.calibration import CALIBRATION_FILES

from .fakes import EvalOutputsModule, eval_loader, eval_outputs, random_outputs


def test_pearson_by_hand():
    # errors e = (0, .5, .75), losses l = (.1, 1, 2): sum(de*dl) = 17/24,
    # sum(de^2) = 7/24, sum(dl^2) = 271/150 -> r = (17/24) / sqrt(7/24 * 271/150).
    corr = self_knowledge_correlation([0.0, 0.5, 0.75], [0.1, 1.0, 2.0])
    assert corr.reason is None
    assert corr.value == pytest.approx(0.9757875, abs=1e-7)
    assert corr.value == pytest.approx(
        np.corrcoef([0.0, 0.5, 0.75], [0.1, 1.0, 2.0])[0, 1], abs=1e-12
    )
    assert self_knowledge_correlation([0.0, 1.0], [2.0, 1.0]).value == pytest.approx(-1.0)


@pytest.mark.parametrize(
    "err, loss, reason",
    [
        ([0.2], [1.0], "1 evaluated N"),
        ([], [], "0 evaluated N"),
        ([0.0, 0.0, 0.0], [0.1, 0.2, 0.3], "error rate is 0 at every N"),
        ([0.1, 0.2], [0.7, 0.7], "mean answer loss is 0.7 at every N"),
    ],
)
def test_pearson_undefined_is_nan_with_a_reason(err, loss, reason):
    corr = self_knowledge_correlation(err, loss)
    assert math.isnan(corr.value) and reason in corr.reason


def test_pearson_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one length"):
        self_knowledge_correlation([0.1, 0.2], [1.0])


def _ece_batch():
    # confidences 0.95 (bin 14), 0.95, 0.25 (bin 3), 1.0 (bin 14 too); correct 1, 0, 0, 1.
    # ECE = (|2 - 2.9| + |0 - 0.25|) / 4 = 0.2875.
    return eval_outputs(
        32,
        [
            (0, "ar_valid", 1, True, 0.95, 0.1),
            (0, "ar_valid", 1, False, 0.95, 3.0),
            (0, "passkey", -1, False, 0.25, 2.0),
            (0, "passkey", -1, True, 1.0, 0.0),
        ],
        batch_size=1,
    )


def test_ece_by_hand_and_per_n_report():
    metric = CalibrationCounts()
    metric.update_from_outputs(_ece_batch())
    # n64: all correct at confidence 0.5 -> ECE 0.5; accuracy 1; mean loss 0.5.
    metric.update_from_outputs(
        eval_outputs(64, [(0, "ar_valid", 1, True, 0.5, 0.5)] * 3, batch_size=1)
    )
    report = CalibrationReport.from_counts(metric.n_writes_values, metric.compute())
    assert report.n_writes == (32, 64)
    np.testing.assert_array_equal(report.count, [4, 3])
    np.testing.assert_allclose(report.ece, [0.2875, 0.5], atol=1e-7)
    np.testing.assert_allclose(report.accuracy, [0.5, 1.0])
    np.testing.assert_allclose(report.mean_loss, [5.1 / 4, 0.5], atol=1e-7)
    # errors (0.5, 0), losses (1.275, 0.5): two points on a rising line.
    assert report.correlation.value == pytest.approx(1.0)


def test_ece_equals_torchmetrics_binary_calibration_error():
    g = torch.Generator().manual_seed(7)
    metric = CalibrationCounts(n_bins=15)
    reference = BinaryCalibrationError(n_bins=15, norm="l1")
    for _ in range(5):
        out = random_outputs(g, 128, batch_size=3, per_row=10)
        metric.update_from_outputs(out)
        reference.update(out.confidence, (out.pred == out.target).long())
    report = CalibrationReport.from_counts(metric.n_writes_values, metric.compute())
    assert report.ece[0] == pytest.approx(float(reference.compute()), abs=1e-6)


def test_confidence_outside_unit_interval_is_refused():
    out = _ece_batch()
    out.confidence[0] = 1.5
    with pytest.raises(ValueError, match=r"confidence outside \[0, 1\]"):
        CalibrationCounts().update_from_outputs(out)


def test_lightning_logs_ece_and_correlation_and_writes_files(tmp_path):
    callback = Calibration(out_dir=str(tmp_path / "reports"))
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    n64 = eval_outputs(64, [(0, "ar_valid", 1, True, 0.5, 0.5)] * 3, batch_size=1)
    trainer.validate(EvalOutputsModule(), eval_loader([_ece_batch()]), verbose=False)
    logged = trainer.logged_metrics
    assert set(logged) == {
        "val/ece/n32",
        "val/self_knowledge_correlation",
        "val/self_knowledge_auroc/n32",
    }
    # AUROC by hand: correct at 0.95 and 1.0, wrong at 0.95 and 0.25: 3.5 of 4 pairs ranked right
    assert float(logged["val/self_knowledge_auroc/n32"]) == pytest.approx(0.875)
    assert float(logged["val/ece/n32"]) == pytest.approx(0.2875)
    assert math.isnan(float(logged["val/self_knowledge_correlation"]))  # one N only
    assert "1 evaluated N" in callback.val_report.correlation.reason

    trainer.test(EvalOutputsModule(), eval_loader([_ece_batch(), n64]), verbose=False)
    logged = trainer.logged_metrics
    assert set(logged) == {
        "test/ece/n32",
        "test/ece/n64",
        "test/self_knowledge_correlation",
        "test/self_knowledge_auroc/n32",
        "test/self_knowledge_auroc/n64",
        "test/self_knowledge_baseline",
        "test/self_knowledge_p_value",
    }
    assert float(logged["test/ece/n64"]) == pytest.approx(0.5)
    assert float(logged["test/self_knowledge_correlation"]) == pytest.approx(1.0)
    assert math.isnan(float(logged["test/self_knowledge_auroc/n64"]))  # every answer right
    # Baseline by hand: the ar_valid losses {0.1, 3.0, 0.5, 0.5, 0.5} are dealt 2 to n32 and 3 to
    # n64 (the passkey losses stay at n32); with two N the correlation is +1 exactly when n32's
    # mean loss is the higher, i.e. when n32 draws the 3.0: 4 of 10 deals. E[r] = 0.4 - 0.6 = -0.2,
    # P(r >= 1) = 0.4; 200 shuffles estimate both within about 0.07 (one standard error).
    assert float(logged["test/self_knowledge_baseline"]) == pytest.approx(-0.2, abs=0.25)
    assert float(logged["test/self_knowledge_p_value"]) == pytest.approx(0.4, abs=0.13)
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(CALIBRATION_FILES)
    csv_text = (tmp_path / "reports" / "calibration.csv").read_text()
    assert csv_text.splitlines() == [
        "n_writes,count,correct,accuracy,ci_low,ci_high,few,mean_loss,ece,auroc",
        # 95% Wilson intervals by hand: 2/4 -> [0.150039, 0.849961], 3/3 -> [0.438503, 1]
        "32,4,2,0.500000,0.150039,0.849961,1,1.275000,0.287500,0.875000",
        "64,3,3,1.000000,0.438503,1.000000,1,0.500000,0.500000,none",
    ]
    table = (tmp_path / "reports" / "calibration.md").read_text()
    assert "| n32 | 4 | 0.5000 [0.1500, 0.8500] (4)* | 1.2750 | 0.2875 | 0.8750 |" in table
    assert "permutation baseline (answer losses shuffled across tokens of the same answer kind" in table
    assert (
        "self-knowledge correlation: 1.0000"
        in (tmp_path / "reports" / "calibration.md").read_text()
    )


def test_empty_filler_batch_counts_nothing():
    metric = CalibrationCounts()
    metric.update_from_outputs(eval_outputs(256, [], batch_size=0))
    metric.update_from_outputs(_ece_batch())
    report = CalibrationReport.from_counts(metric.n_writes_values, metric.compute())
    assert report.n_writes == (32,)
    np.testing.assert_allclose(report.ece, [0.2875], atol=1e-7)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_counts_on_cuda_equal_cpu():
    g = torch.Generator().manual_seed(3)
    batches = [random_outputs(g, n, batch_size=4, per_row=9) for n in (32, 256, 4096)]
    results = []
    for device in ("cpu", "cuda"):
        accuracy, calibration = AnswerTypeCounts().to(device), CalibrationCounts().to(device)
        for batch in batches:
            moved = batch.to(device)
            accuracy.update_from_outputs(moved)
            calibration.update_from_outputs(moved)
        merged = {**accuracy.compute(), **{f"cal.{k}": v for k, v in calibration.compute().items()}}
        results.append({k: v.cpu() for k, v in merged.items()})
    for key, value in results[0].items():
        torch.testing.assert_close(results[1][key], value, rtol=1e-12, atol=1e-9, msg=key)
