"""MQAR accuracy, overall and per query-gap band, reduced exactly across ranks.

Zoology's metric (``zoology/train.py::compute_metrics``, commit b603008) is the mean over
examples of each example's accuracy on its supervised positions; every MQAR example has exactly
``num_kv_pairs`` queries, so it equals the token accuracy counted here. Early stopping on it
(Zoology: stop once ``valid/accuracy > 0.99``) is Lightning's ``EarlyStopping`` with
``monitor: val/mqar/acc`` and ``stopping_threshold: 0.99`` (configs/mqar/).

The gap of a query is its distance in tokens back to its key in the key-value block
(``swar_bench.tasks.mqar.query_gaps``; the batch's ``key_age``).
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torchmetrics import Metric

from swar_bench.callbacks.eval_hooks import PREFIX, EvalHooks, check_eval_outputs, reset_metrics
from swar_bench.callbacks.reporting import format_number, log_epoch_value, markdown_table
from swar_bench.utils.files import atomic_write_text
from swar_bench.utils.intervals import FEW_NOTE, format_accuracy, wilson

GAP_BIN_UPPER = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
"""Inclusive upper edges of the query-gap bands in tokens: 1-4, 5-8, 9-16, ..., 1025-2048; one
more band holds gaps > 2048."""

REPORT_FILES = ("mqar_accuracy.md", "mqar_accuracy.csv")
"""Files ``MQARAccuracy`` writes at test end, in its report folder."""


def gap_band_labels(gap_bin_upper: Sequence[int] = GAP_BIN_UPPER) -> tuple[str, ...]:
    """``"1-4"``, ``"5-8"``, ..., ``">2048"``: one label per band."""
    lows = [1] + [u + 1 for u in gap_bin_upper[:-1]]
    return tuple([f"{lo}-{hi}" for lo, hi in zip(lows, gap_bin_upper)] + [f">{gap_bin_upper[-1]}"])


class MQARCounts(Metric):
    """Correct / total answer tokens, overall and per query-gap band (``int64``, summed across
    ranks). ``compute()`` returns ``{"correct": [1], "count": [1], "gap_correct": [n_bands],
    "gap_count": [n_bands]}`` with ``n_bands = len(gap_bin_upper) + 1``.

    Raises:
        ValueError: ``gap_bin_upper`` not strictly increasing from >= 1; in ``update``, inputs
            that are not 1-D tensors of one length.
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = True

    def __init__(self, gap_bin_upper: Sequence[int] = GAP_BIN_UPPER, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        upper = [int(u) for u in gap_bin_upper]
        if not upper or upper[0] < 1 or any(b <= a for a, b in itertools.pairwise(upper)):
            raise ValueError(f"gap_bin_upper={gap_bin_upper!r}: expected strictly increasing gaps >= 1")
        self.gap_bin_upper = tuple(upper)
        n = len(upper) + 1
        for name, size in (("correct", 1), ("count", 1), ("gap_correct", n), ("gap_count", n)):
            self.add_state(name, default=torch.zeros(size, dtype=torch.int64), dist_reduce_fx="sum")

    def update(self, pred: torch.Tensor, target: torch.Tensor, key_age: torch.Tensor) -> None:
        """``pred`` / ``target`` int64 token ids and ``key_age`` int64 gaps (tokens; < 1: none),
        all ``[M]`` over the batch's supervised positions."""
        if any(t.dim() != 1 or t.shape != pred.shape for t in (pred, target, key_age)):
            shapes = [tuple(t.shape) for t in (pred, target, key_age)]
            raise ValueError(f"pred/target/key_age shapes {shapes}: expected 1-D tensors of one length M")
        correct = pred == target
        self.count += correct.numel()
        self.correct += correct.sum()
        has_gap = key_age >= 1
        if bool(has_gap.any()):
            edges = torch.tensor(self.gap_bin_upper, dtype=key_age.dtype, device=key_age.device)
            bands = torch.bucketize(key_age[has_gap], edges, right=False)
            n = len(self.gap_bin_upper) + 1
            self.gap_count += torch.bincount(bands, minlength=n)
            self.gap_correct += torch.bincount(bands[correct[has_gap]], minlength=n)

    def compute(self) -> dict[str, torch.Tensor]:
        return {k: getattr(self, k).clone().reshape(-1) for k in ("correct", "count", "gap_correct", "gap_count")}


def mqar_table(counts: dict[str, np.ndarray], gap_bin_upper: Sequence[int] = GAP_BIN_UPPER) -> str:
    """Markdown: ``all`` then one row per non-empty gap band, ``accuracy [95% Wilson] (count)``."""
    rows = [["all", format_accuracy(int(counts["correct"][0]), int(counts["count"][0]))]]
    for label, c, n in zip(gap_band_labels(gap_bin_upper), counts["gap_correct"], counts["gap_count"]):
        if n:
            rows.append([f"gap {label}", format_accuracy(int(c), int(n))])
    return markdown_table(["queries", "accuracy"], rows) + "\n" + FEW_NOTE + " Items are answer tokens.\n"


def mqar_csv(counts: dict[str, np.ndarray], gap_bin_upper: Sequence[int] = GAP_BIN_UPPER) -> str:
    """CSV ``band,correct,count,accuracy,ci_low,ci_high,few``: ``all`` then every band."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["band", "correct", "count", "accuracy", "ci_low", "ci_high", "few"])
    entries = [("all", counts["correct"][0], counts["count"][0])] + list(
        zip(gap_band_labels(gap_bin_upper), counts["gap_correct"], counts["gap_count"])
    )
    for label, c, n in entries:
        p = wilson(int(c), int(n))
        writer.writerow([label, p.correct, p.count] + [format_number(v) for v in (p.accuracy, p.low, p.high)] + [int(p.few)])
    return buf.getvalue()


class MQARAccuracy(EvalHooks):
    """Accuracy on MQAR for validation and test (active when the DataModule's ``task`` is mqar).

    Logs at epoch end ``<stage>/mqar/acc`` with its 95% Wilson bounds ``<stage>/mqar/acc_ci_low``
    / ``acc_ci_high``, and ``<stage>/mqar/acc/gap<lo>-<hi>`` for every band with a query
    (``val`` or ``test``). At test end (global rank 0) writes ``REPORT_FILES`` atomically to
    ``out_dir`` (default: the logger's ``log_dir``).

    Args:
        out_dir: folder for the test reports; None = ``trainer.log_dir``.
        write_reports: False only logs.
        gap_bin_upper: inclusive upper edges of the gap bands (tokens).

    Raises:
        TypeError / ValueError: an evaluation step that does not return
            :class:`~swar_bench.module.EvalOutputs`; bad ``gap_bin_upper``.
    """

    task = "mqar"

    def __init__(
        self, out_dir: str | None = None, write_reports: bool = True,
        gap_bin_upper: Sequence[int] = GAP_BIN_UPPER,
    ) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.write_reports = write_reports
        self.val_counts = MQARCounts(gap_bin_upper)
        self.test_counts = MQARCounts(gap_bin_upper)
        self.gap_bin_upper = self.val_counts.gap_bin_upper
        self.val_report: dict[str, np.ndarray] | None = None
        self.test_report: dict[str, np.ndarray] | None = None
        self.report_paths: list[str] = []

    def _counts(self, stage: str) -> MQARCounts:
        return self.test_counts if stage == "test" else self.val_counts

    def on_eval_epoch_start(self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        reset_metrics(pl_module, self._counts(stage))

    def on_eval_batch_end(self, stage: str, outputs: Any) -> None:
        out = check_eval_outputs(outputs, stage)
        self._counts(stage).update(out.pred, out.target, out.key_age)

    def on_eval_epoch_end(self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # torchmetrics' compute() squeezes one-element states to 0-d: restore 1-D arrays
        counts = {
            k: v.detach().cpu().numpy().astype(np.int64).reshape(-1)
            for k, v in self._counts(stage).compute().items()
        }
        prefix = PREFIX[stage]
        p = wilson(int(counts["correct"][0]), int(counts["count"][0]))
        if p.count:
            log_epoch_value(pl_module, f"{prefix}/mqar/acc", p.accuracy)
            log_epoch_value(pl_module, f"{prefix}/mqar/acc_ci_low", p.low)
            log_epoch_value(pl_module, f"{prefix}/mqar/acc_ci_high", p.high)
        for label, c, n in zip(gap_band_labels(self.gap_bin_upper), counts["gap_correct"], counts["gap_count"]):
            if n:
                log_epoch_value(pl_module, f"{prefix}/mqar/acc/gap{label}", c / n)
        self.keep_report(stage, trainer, counts)

    def table(self) -> str:
        """The markdown table of the latest test pass (else validation).

        Raises:
            RuntimeError: nothing evaluated yet.
        """
        report = self.test_report if self.test_report is not None else self.val_report
        if report is None:
            raise RuntimeError("MQARAccuracy has no results yet: run validate or test first")
        return mqar_table(report, self.gap_bin_upper)

    def write_test_reports(self, trainer: pl.Trainer, out: Path) -> list[str]:
        paths = [
            atomic_write_text(out / REPORT_FILES[0], mqar_table(self.test_report, self.gap_bin_upper)),
            atomic_write_text(out / REPORT_FILES[1], mqar_csv(self.test_report, self.gap_bin_upper)),
        ]
        return [str(p) for p in paths]
