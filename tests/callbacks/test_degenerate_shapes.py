"""Reports with degenerate shapes: one N, one answer kind, a kind or an N with zero items, one
example, a pass with nothing at all; and the ECE's textbook binning (Guo et al. 2017)."""

from __future__ import annotations

import csv
import io
import warnings

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.callbacks import (
    AccuracyReport,
    AnswerTypeAccuracy,
    AnswerTypeCounts,
    Calibration,
    CalibrationCounts,
    CalibrationReport,
)
from swar_bench.callbacks.answer_type_accuracy import (
    KINDS,
    REPORT_FILES,
    accuracy_csv,
    accuracy_table,
    age_accuracy_csv,
    plot_accuracy_vs_key_age,
    plot_accuracy_vs_n_writes,
)
from swar_bench.callbacks.calibration import (
    CALIBRATION_FILES,
    calibration_csv,
    calibration_table,
)
from swar_bench.tasks.passkey_swar import ALLOWED_N

from .fakes import CODES, EvalOutputsModule, eval_loader, eval_outputs


def ece_float64(confidence: list[float], correct: list[bool], n_bins: int) -> float:
    """Guo et al. 2017, Section 2, written out: bin i holds (i/M, (i+1)/M]; 0 goes to bin 0."""
    total, ece = len(confidence), 0.0
    for i in range(n_bins):
        lo, hi = i / n_bins, (i + 1) / n_bins
        members = [
            j for j, c in enumerate(confidence) if lo < c <= hi or (i == 0 and c == 0.0)
        ]
        if members:
            acc = sum(correct[j] for j in members) / len(members)
            conf = sum(confidence[j] for j in members) / len(members)
            ece += len(members) / total * abs(acc - conf)
    return ece


def _report(metric: CalibrationCounts) -> CalibrationReport:
    return CalibrationReport.from_counts(metric.n_writes_values, metric.compute())


def test_issue_example_confidence_one_shares_the_last_bin():
    # (0.95, correct) and (1.0, wrong) both fall in (14/15, 1]: |1 - 1.95| / 2 = 0.475.
    metric = CalibrationCounts(n_writes_values=[32, 64], n_bins=15)
    metric.update_from_outputs(
        eval_outputs(32, [(0, "ar_valid", 1, True, 0.95, 0.1), (0, "passkey", -1, False, 1.0, 2.0)], 1)
    )
    report = _report(metric)
    assert report.n_writes == (32,)
    assert report.ece[0] == pytest.approx(0.475, abs=1e-7)
    assert ece_float64([0.95, 1.0], [True, False], 15) == pytest.approx(0.475, abs=1e-12)


def _edge_confidences(n_bins: int) -> st.SearchStrategy[float]:
    edges = st.sampled_from([i / n_bins for i in range(n_bins + 1)])
    # float32 values, as the model's softmax gives them; bin edges, 0 and 1 on purpose.
    return st.one_of(edges, st.floats(0, 1, width=32)).map(
        lambda c: float(np.float32(c))
    )


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n_bins=st.integers(1, 20))
def test_ece_equals_the_textbook_float64_ece(data, n_bins):
    tokens = data.draw(
        st.lists(st.tuples(_edge_confidences(n_bins), st.booleans()), min_size=1, max_size=30)
    )
    confidence = [c for c, _ in tokens]
    correct = [ok for _, ok in tokens]
    metric = CalibrationCounts(n_writes_values=[32], n_bins=n_bins)
    positions = [(0, "ar_valid", 1, ok, c, 1.0) for c, ok in tokens]
    half = len(positions) // 2  # two batches: the bins are sums
    metric.update_from_outputs(eval_outputs(32, positions[:half], 1))
    metric.update_from_outputs(eval_outputs(32, positions[half:], 1))
    report = _report(metric)
    assert report.ece[0] == pytest.approx(ece_float64(confidence, correct, n_bins), abs=1e-9)


def test_validate_with_one_n_reports_it(tmp_path, capsys):
    # The reported command: torchmetrics squeezed the one-N states to 0-d and from_counts crashed.
    from swar_bench.lightning_cli import main

    argv = [
        "validate", "--config", "configs/oracle.yaml", "--calibration.n_writes_values=[32]",
        "--data.val_configs=[32]", "--data.eval_examples=4", f"--trainer.logger.init_args.save_dir={tmp_path}",
        f"--checkpoint.dirpath={tmp_path / 'ckpt'}", "--trainer.enable_progress_bar=false",
        "--verbose=true",  # Lightning's metric dump, off by default, shows every logged metric
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "val/ece/n32" in out and "val/acc/ar_valid/n32" in out


# One evaluation batch: (n_writes, [(row, kind, key_age, correct, confidence, loss), ...]).
_kind = st.sampled_from(["ar_valid", "ar_expired_stale", "ar_expired_never", "passkey"])


@st.composite
def _passes(draw):
    n_writes_values = draw(st.lists(st.sampled_from(ALLOWED_N[:5]), min_size=1, max_size=3, unique=True))
    kinds = draw(st.lists(_kind, min_size=1, max_size=4, unique=True))
    batches = []
    for n in draw(st.lists(st.sampled_from(n_writes_values), min_size=0, max_size=4)):
        rows = draw(st.integers(0, 2))  # 0: a filler batch with no supervised position
        positions = [
            (
                r,
                kind,
                draw(st.integers(1, 4 * n)) if kind in ("ar_valid", "ar_expired_stale") else -1,
                draw(st.booleans()),
                draw(st.sampled_from([0.0, 0.5, 1.0])),
                1.0,
            )
            for r in range(rows)
            for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=3))
        ]
        batches.append(eval_outputs(n, positions, rows))
    return tuple(sorted(n_writes_values)), batches


def _hand_counts(batches, n, kind):
    """(correct, count) of one answer kind at N, counted from the positions."""
    correct = count = 0
    for b in batches:
        if b.n_writes != n:
            continue
        ok = b.pred == b.target
        code = b.answer_kind
        if kind == "all":
            mask = torch.ones_like(ok)
        elif kind == "ar_expired":
            mask = (code == CODES["ar_expired_stale"]) | (code == CODES["ar_expired_never"])
        elif kind == "passkey_exact":
            rows = b.row[code == CODES["passkey"]].unique().tolist()
            count += len(rows)
            correct += sum(bool(ok[(code == CODES["passkey"]) & (b.row == r)].all()) for r in rows)
            continue
        else:
            mask = code == CODES[kind]
        count += int(mask.sum())
        correct += int((ok & mask).sum())
    return correct, count


@settings(max_examples=30, deadline=None)
@given(_passes())
def test_every_report_of_a_degenerate_pass(case):
    n_writes_values, batches = case
    accuracy, calibration = AnswerTypeCounts(n_writes_values), CalibrationCounts(n_writes_values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics: compute() before any update
        for b in batches:
            accuracy.update_from_outputs(b)
            calibration.update_from_outputs(b)
        acc_report = AccuracyReport.from_counts(n_writes_values, accuracy.compute())
        cal_report = CalibrationReport.from_counts(n_writes_values, calibration.compute())
    seen = tuple(n for n in n_writes_values if _hand_counts(batches, n, "all")[1] > 0)
    assert acc_report.n_writes == seen and cal_report.n_writes == seen

    rows = list(csv.DictReader(io.StringIO(accuracy_csv(acc_report))))
    assert len(rows) == len(seen) * len(KINDS)
    for row in rows:
        correct, count = _hand_counts(batches, int(row["n_writes"]), row["answer_type"])
        assert (int(row["correct"]), int(row["count"])) == (correct, count)
        assert row["accuracy"] == ("none" if count == 0 else f"{correct / count:.6f}")
        assert (row["ci_low"] == "none") == (row["ci_high"] == "none") == (count == 0)
    table = accuracy_table(acc_report)
    assert [ln.split(" |")[0] for ln in table.splitlines() if ln.startswith("| n")] == [
        "| n_writes"
    ] + [f"| n{n}" for n in seen]
    for row in list(csv.DictReader(io.StringIO(age_accuracy_csv(acc_report)))):
        assert (row["accuracy"] == "none") == (row["count"] == "0")

    cal_rows = list(csv.DictReader(io.StringIO(calibration_csv(cal_report))))
    assert [int(r["n_writes"]) for r in cal_rows] == list(seen)
    for r in cal_rows:
        correct, count = _hand_counts(batches, int(r["n_writes"]), "all")
        assert (int(r["count"]), r["accuracy"]) == (count, f"{correct / count:.6f}")
    corr_line = calibration_table(cal_report).splitlines()[-1]
    assert corr_line.startswith("self-knowledge correlation: ")
    if len(seen) < 2:
        assert corr_line.startswith(f"self-knowledge correlation: none ({len(seen)} evaluated N")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "no positive values" / empty-legend warnings
        for fig in (plot_accuracy_vs_n_writes(acc_report), plot_accuracy_vs_key_age(acc_report)):
            fig.canvas.draw()


@pytest.mark.parametrize(
    "batches, n_rows",
    [
        ([eval_outputs(64, [], 0)], 0),  # a filler batch only (an eval set smaller than the world size)
        ([eval_outputs(64, [(0, "passkey", -1, True, 1.0, 0.0)], 1)], 1),  # one example, one kind
    ],
)
def test_test_pass_writes_every_file(tmp_path, batches, n_rows):
    accuracy = AnswerTypeAccuracy(n_writes_values=[64], out_dir=str(tmp_path))
    calibration = Calibration(n_writes_values=[64], out_dir=str(tmp_path))
    trainer = pl.Trainer(
        accelerator="cpu",
        logger=False,
        callbacks=[accuracy, calibration],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an empty loader / no supervised positions
        trainer.test(EvalOutputsModule(), eval_loader(batches), verbose=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(REPORT_FILES + CALIBRATION_FILES)
    cal = list(csv.DictReader((tmp_path / "calibration.csv").open()))
    acc = list(csv.DictReader((tmp_path / "answer_type_accuracy.csv").open()))
    assert len(cal) == n_rows and len(acc) == n_rows * len(KINDS)
    if n_rows:
        assert {k: cal[0][k] for k in ("n_writes", "count", "accuracy", "mean_loss", "ece")} == {
            "n_writes": "64", "count": "1", "accuracy": "1.000000", "mean_loss": "0.000000", "ece": "0.000000"
        }
        cells = {r["answer_type"]: r["accuracy"] for r in acc}
        assert cells == {
            "ar_valid": "none", "ar_expired": "none", "ar_expired_stale": "none", "ar_expired_never": "none",
            "passkey": "1.000000", "passkey_exact": "1.000000", "all": "1.000000",
        }
        assert "| n64 | none (0) | none (0) |" in (tmp_path / "answer_type_accuracy.md").read_text()
    md = (tmp_path / "calibration.md").read_text()
    assert f"self-knowledge correlation: none ({n_rows} evaluated N" in md
