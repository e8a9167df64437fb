"""AnswerTypeAccuracy: counts per N x answer type and key age, logging keys, report files."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from matplotlib.image import imread
from scipy.stats import binomtest

from swar_bench.callbacks import (
    AGE_BIN_UPPER,
    KINDS,
    AccuracyReport,
    AnswerTypeAccuracy,
    AnswerTypeCounts,
    accuracy_table,
)
from swar_bench.callbacks.answer_type_accuracy import REPORT_FILES, age_bin_labels
from swar_bench.tasks.oracle import ANSWER_KINDS

from .fakes import BATCH_N32, BATCH_N64, CODES, EvalOutputsModule, eval_loader, eval_outputs

EXPECTED = {
    # kind: {N: (correct, count)}, counted by hand from BATCH_N64 / BATCH_N32.
    "ar_valid": {64: (2, 3), 32: (1, 1)},
    "ar_expired": {64: (2, 4), 32: (0, 1)},
    "ar_expired_stale": {64: (1, 2), 32: (0, 0)},
    "ar_expired_never": {64: (1, 2), 32: (0, 1)},
    "passkey": {64: (7, 8), 32: (4, 4)},
    "passkey_exact": {64: (1, 2), 32: (1, 1)},
    "all": {64: (11, 15), 32: (5, 6)},
}


def _report(batches) -> AccuracyReport:
    metric = AnswerTypeCounts()
    for b in batches:
        metric.update_from_outputs(b)
    return AccuracyReport.from_counts(metric.n_writes_values, metric.compute())


def test_answer_kind_codes_match_the_task():
    assert tuple(ANSWER_KINDS.index(k) for k in CODES) == tuple(CODES.values())


def test_per_kind_counts_by_hand():
    report = _report([BATCH_N64, BATCH_N32])
    assert report.n_writes == (32, 64)
    for kind, by_n in EXPECTED.items():
        for n, (correct, count) in by_n.items():
            assert report.count_of(kind, n) == count, (kind, n)
            expected = correct / count if count else math.nan
            np.testing.assert_equal(report.accuracy_of(kind, n), expected)


def test_absent_kind_is_nan_with_count_zero_and_none_in_the_table():
    report = _report([BATCH_N32])
    assert report.n_writes == (32,)
    assert report.count_of("ar_expired_stale", 32) == 0
    assert math.isnan(report.accuracy_of("ar_expired_stale", 32))
    table = accuracy_table(report)
    row = next(line for line in table.splitlines() if line.startswith("| n32"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 95% Wilson intervals by hand: 1/1 -> [0.207, 1], 0/1 -> [0, 0.793], 4/4 -> [0.510, 1],
    # 5/6 -> [0.436, 0.970]; every cell has fewer than 30 items, so each is marked "*".
    assert cells == [
        "n32",
        "1.000 [0.207, 1.000] (1)*",
        "0.000 [0.000, 0.793] (1)*",
        "none (0)",
        "0.000 [0.000, 0.793] (1)*",
        "1.000 [0.510, 1.000] (4)*",
        "1.000 [0.207, 1.000] (1)*",
        "0.833 [0.436, 0.970] (6)*",
    ]
    assert "fewer than 30 items" in table


def test_passkey_exact_groups_by_row_not_by_position_order():
    # Row 0 has one wrong passkey token, row 1 none; positions alternate between rows.
    positions = [(r, "passkey", -1, not (r == 0 and j == 2)) for j in range(4) for r in (0, 1)]
    report = _report([eval_outputs(128, positions, batch_size=2)])
    assert (report.count_of("passkey_exact", 128), report.accuracy_of("passkey_exact", 128)) == (
        2,
        0.5,
    )
    assert report.accuracy_of("passkey", 128) == 7 / 8
    # The same row index in another batch is another example.
    report = _report([eval_outputs(128, positions, 2), eval_outputs(128, positions, 2)])
    assert report.count_of("passkey_exact", 128) == 4


def test_key_age_bins():
    labels = age_bin_labels()
    assert labels[:3] == ("1", "2", "3") and labels[15:18] == ("16", "17-32", "33-64")
    assert labels[-2:] == ("8193-16384", ">16384")
    assert len(labels) == len(AGE_BIN_UPPER) + 1 == 27
    report = _report([BATCH_N64])
    idx = {label: i for i, label in enumerate(labels)}
    expected_count = np.zeros(27, dtype=np.int64)
    expected_correct = np.zeros(27, dtype=np.int64)
    for label, correct in (("3", 1), ("1", 1), ("16", 0), ("33-64", 1), ("65-128", 0)):
        expected_count[idx[label]] = 1
        expected_correct[idx[label]] = correct
    np.testing.assert_array_equal(report.age_count[0], expected_count)
    np.testing.assert_array_equal(report.age_correct[0], expected_correct)
    # Edges: 16 is inside the window, 17 and 32 in the gray-zone bin, 16385 in the open bin.
    positions = [(0, "ar_valid", a, True) for a in (16, 17, 32, 33, 16384, 16385)]
    ages = _report([eval_outputs(16384, positions, 1)]).age_count[0]
    assert ages[idx["16"]] == 1 and ages[idx["17-32"]] == 2 and ages[idx["33-64"]] == 1
    assert ages[idx["8193-16384"]] == 1 and ages[idx[">16384"]] == 1


def test_bad_inputs_are_refused_with_one_line():
    metric = AnswerTypeCounts()
    with pytest.raises(ValueError, match=r"n_writes=48: expected one of \[32, 64"):
        metric.update_from_outputs(dataclasses.replace(BATCH_N32, n_writes=48))
    with pytest.raises(TypeError, match=r"validation_step returned dict: expected swar_bench.module.EvalOutputs"):
        metric.update_from_outputs(BATCH_N32.as_dict())
    with pytest.raises(TypeError, match="returned Tensor: expected swar_bench.module.EvalOutputs"):
        metric.update_from_outputs(torch.tensor(1.0))
    with pytest.raises(ValueError, match="n_writes_values"):
        AnswerTypeCounts(n_writes_values=[])


def _trainer(tmp_path, callbacks):
    return pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=TensorBoardLogger(tmp_path, name="run"),
        callbacks=callbacks,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def test_validate_logs_val_keys(tmp_path):
    callback = AnswerTypeAccuracy(write_reports=False)
    trainer = _trainer(tmp_path, [callback])
    trainer.validate(EvalOutputsModule(), eval_loader([BATCH_N64, BATCH_N32]), verbose=False)
    logged = trainer.logged_metrics
    expected = {
        f"val/acc/{kind}/n{n}": correct / count
        for kind, by_n in EXPECTED.items()
        for n, (correct, count) in by_n.items()
        if count
    }
    bounds = {}
    for kind, by_n in EXPECTED.items():
        for n, (correct, count) in by_n.items():
            if count:
                ci = binomtest(correct, count).proportion_ci(0.95, method="wilson")
                bounds[f"val/acc_ci_low/{kind}/n{n}"] = ci.low
                bounds[f"val/acc_ci_high/{kind}/n{n}"] = ci.high
    # absent kinds (stale at n32) are not logged
    assert set(logged) == set(expected) | set(bounds)
    for key, value in {**expected, **bounds}.items():
        assert float(logged[key]) == pytest.approx(value, abs=1e-6), key
    assert "none (0)" in callback.table()


def test_test_writes_tables_figures_and_tensorboard(tmp_path):
    callback = AnswerTypeAccuracy()
    trainer = _trainer(tmp_path, [callback])
    trainer.test(EvalOutputsModule(), eval_loader([BATCH_N32, BATCH_N64, BATCH_N64]), verbose=False)
    assert float(trainer.logged_metrics["test/acc/passkey_exact/n64"]) == 0.5
    assert float(trainer.logged_metrics["test/acc/all/n64"]) == pytest.approx(22 / 30)

    out = tmp_path / "run" / "version_0"
    names = {p.name for p in out.iterdir()}
    assert set(REPORT_FILES) <= names
    assert not [name for name in names if name.startswith(".tmp-")]  # no temporary file left
    assert (out / "answer_type_accuracy.md").read_text() == callback.table()

    rows = list(csv.DictReader(io.StringIO((out / "answer_type_accuracy.csv").read_text())))
    assert len(rows) == 2 * len(KINDS)
    by_key = {(int(r["n_writes"]), r["answer_type"]): r for r in rows}
    assert by_key[(64, "ar_valid")] == {
        "n_writes": "64",
        "answer_type": "ar_valid",
        "correct": "4",
        "count": "6",
        "accuracy": "0.666667",
        "ci_low": "0.299993",  # 95% Wilson interval of 4/6, by hand
        "ci_high": "0.903229",
        "few": "1",
    }
    assert (
        by_key[(32, "ar_expired_stale")]["count"] == "0"
        and by_key[(32, "ar_expired_stale")]["accuracy"] == "none"
    )

    ages = list(csv.DictReader(io.StringIO((out / "accuracy_by_key_age.csv").read_text())))
    row = next(r for r in ages if r["n_writes"] == "64" and r["key_age_bin"] == "33-64")
    assert (row["age_lo"], row["age_hi"], row["correct"], row["count"]) == ("33", "64", "2", "2")
    assert (row["ci_low"], row["ci_high"], row["few"]) == ("0.342380", "1.000000", "1")

    for name in ("accuracy_vs_n_writes.png", "accuracy_vs_key_age.png"):
        image = imread(out / name)
        assert image.ndim == 3 and image.shape[0] > 100 and image.std() > 0

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out), size_guidance={"images": 0, "tensors": 0}).Reload()
    assert {"test/accuracy_vs_n_writes", "test/accuracy_vs_key_age"} <= set(events.Tags()["images"])
    assert "test/answer_type_accuracy/text_summary" in events.Tags()["tensors"]


def test_out_dir_overrides_the_log_dir(tmp_path):
    callback = AnswerTypeAccuracy(out_dir=str(tmp_path / "reports"))
    trainer = _trainer(tmp_path / "logs", [callback])
    trainer.test(EvalOutputsModule(), eval_loader([BATCH_N32]), verbose=False)
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(REPORT_FILES)


def test_empty_filler_batch_counts_nothing():
    # Ranks with fewer examples evaluate filler batches with no supervised position (M = 0).
    empty = eval_outputs(256, [], batch_size=0)
    report = _report([empty, BATCH_N32])
    assert report.n_writes == (32,)
    np.testing.assert_array_equal(report.count, _report([BATCH_N32]).count)
