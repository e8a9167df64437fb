"""Exact accuracy per ``n_writes`` x answer kind and per key age, reduced exactly across ranks.

The task (docs/TASK.md, "Answer rule") distinguishes what a model must keep (``ar_valid`` answers,
the passkey) from what it must forget (``ar_expired`` queries, answered NULL). Expired queries are
split into ``ar_expired_stale`` (written, then idle > 2w writes: the only ones that test
forgetting) and ``ar_expired_never`` (never written). The counts behind every accuracy are
integer ``torchmetrics`` states with ``dist_reduce_fx="sum"``, so a DDP run reports exactly what a
one-process run over the same examples reports.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.utilities import rank_zero_warn
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from torchmetrics import Metric

from swar_bench.callbacks.eval_hooks import PREFIX, EvalHooks, check_eval_outputs, reset_metrics
from swar_bench.callbacks.reporting import (
    format_number,
    log_epoch_value,
    markdown_table,
    metric_rows,
    save_figure_atomic,
    tensorboard_experiments,
)
from swar_bench.module import EvalOutputs
from swar_bench.tasks.oracle import ANSWER_KINDS
from swar_bench.tasks.passkey_swar import ALLOWED_N
from swar_bench.utils.files import atomic_write_text
from swar_bench.utils.intervals import FEW_NOTE, format_accuracy, wilson, wilson_arrays

KINDS = (
    "ar_valid",
    "ar_expired",
    "ar_expired_stale",
    "ar_expired_never",
    "passkey",
    "passkey_exact",
    "all",
)
"""Reported answer kinds. ``ar_expired`` = stale + never; ``passkey`` counts passkey tokens;
``passkey_exact`` counts examples whose passkey tokens are all exact; ``all`` counts every
supervised position."""

AGE_BIN_UPPER = tuple(range(1, 17)) + tuple(2**k for k in range(5, 15))
"""Inclusive upper edges of the key-age bins (writes): 1, 2, ..., 16 (one bin per age inside the
window w = 16), then (16, 32] (the gray zone of docs/TASK.md "Answer rule", never queried), (32, 64], ..., (8192, 16384];
one more bin holds ages > 16384."""

_VALID = ANSWER_KINDS.index("ar_valid")
_STALE = ANSWER_KINDS.index("ar_expired_stale")
_NEVER = ANSWER_KINDS.index("ar_expired_never")
_PASSKEY = ANSWER_KINDS.index("passkey")
_PASSKEY_EXACT = KINDS.index("passkey_exact")


def age_bin_bounds(age_bin_upper: Sequence[int] = AGE_BIN_UPPER) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive ``(lo, hi)`` ages (writes) of every bin, ``int64[len(age_bin_upper) + 1]`` each;
    the last bin is open (``hi = -1``)."""
    upper = np.asarray(age_bin_upper, dtype=np.int64)
    lo = np.concatenate([[1], upper + 1])
    hi = np.concatenate([upper, [-1]])
    return lo, hi


def age_bin_labels(age_bin_upper: Sequence[int] = AGE_BIN_UPPER) -> tuple[str, ...]:
    """``"1"``, ..., ``"16"``, ``"17-32"``, ..., ``">16384"``: one label per key-age bin."""
    lo, hi = age_bin_bounds(age_bin_upper)
    labels = [str(a) if a == b else f"{a}-{b}" for a, b in zip(lo[:-1], hi[:-1])]
    return tuple(labels + [f">{int(age_bin_upper[-1])}"])


def check_n_writes_values(
    n_writes_values: Sequence[int], name: str = "n_writes_values"
) -> tuple[int, ...]:
    """Sorted, de-duplicated positive ints; raises ``ValueError`` (one line) otherwise."""
    try:
        values = sorted({int(n) for n in n_writes_values})
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}={n_writes_values!r}: expected a sequence of positive integers"
        ) from None
    if not values or values[0] < 1 or any(int(n) != n for n in n_writes_values):
        raise ValueError(
            f"{name}={n_writes_values!r}: expected a non-empty sequence of positive integers"
        )
    return tuple(values)


class AnswerTypeCounts(Metric):
    """Correct / total counts per ``n_writes`` x answer kind and per ``n_writes`` x key-age bin.

    Args:
        n_writes_values: every N that may be evaluated (default: ``ALLOWED_N``, every N of the task); the
            states have one row per N, so ranks that saw different N still reduce exactly.
        age_bin_upper: inclusive upper edges of the key-age bins (default ``AGE_BIN_UPPER``).

    States (``int64``, summed across ranks): ``correct`` / ``count`` ``[n_N, len(KINDS)]``,
    ``age_correct`` / ``age_count`` ``[n_N, len(age_bin_upper) + 1]``. For ``passkey_exact`` the
    unit is an example (all passkey positions of one ``row`` exact), for the others a token.

    ``compute()`` returns these four tensors in a dict (see ``AccuracyReport.from_counts``).

    Raises:
        ValueError: bad ``n_writes_values``; in ``update``, an N not in ``n_writes_values`` or
            inputs that are not 1-D tensors of one length.
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = True

    def __init__(
        self,
        n_writes_values: Sequence[int] = ALLOWED_N,
        age_bin_upper: Sequence[int] = AGE_BIN_UPPER,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.n_writes_values = check_n_writes_values(n_writes_values)
        upper = [int(a) for a in age_bin_upper]
        if not upper or upper[0] < 1 or any(b <= a for a, b in itertools.pairwise(upper)):
            raise ValueError(
                f"age_bin_upper={age_bin_upper!r}: expected strictly increasing ages >= 1"
            )
        self.age_bin_upper = tuple(upper)
        self._n_index = {n: i for i, n in enumerate(self.n_writes_values)}
        n_rows, n_age = len(self.n_writes_values), len(self.age_bin_upper) + 1
        for name, cols in (
            ("correct", len(KINDS)),
            ("count", len(KINDS)),
            ("age_correct", n_age),
            ("age_count", n_age),
        ):
            self.add_state(
                name, default=torch.zeros(n_rows, cols, dtype=torch.int64), dist_reduce_fx="sum"
            )

    def n_index(self, n_writes: int) -> int:
        """Row of ``n_writes`` in the states; ``ValueError`` when it is not one of ``n_writes_values``."""
        try:
            return self._n_index[int(n_writes)]
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"n_writes={n_writes!r}: expected one of {list(self.n_writes_values)}"
            ) from None

    def update(
        self,
        pred: torch.Tensor,
        target: torch.Tensor,
        answer_kind: torch.Tensor,
        key_age: torch.Tensor,
        row: torch.Tensor,
        n_writes: int,
    ) -> None:
        """Count one evaluation batch (the fields of ``EvalOutputs``): all tensors ``[M]`` (M supervised positions),
        ``pred`` / ``target`` int64 token ids, ``answer_kind`` int64 codes of ``ANSWER_KINDS``,
        ``key_age`` int64 writes (-1 n/a), ``row`` int64 row in the batch; ``n_writes`` the batch's N."""
        i = self.n_index(n_writes)
        tensors = (pred, target, answer_kind, key_age, row)
        if any(t.dim() != 1 or t.shape != pred.shape for t in tensors):
            shapes = [tuple(t.shape) for t in tensors]
            raise ValueError(
                f"pred/target/answer_kind/key_age/row shapes {shapes}: expected 1-D tensors of one length M"
            )
        correct = pred == target
        masks = torch.stack(
            [
                answer_kind == _VALID,
                (answer_kind == _STALE) | (answer_kind == _NEVER),
                answer_kind == _STALE,
                answer_kind == _NEVER,
                answer_kind == _PASSKEY,
                torch.zeros_like(correct),  # passkey_exact: counted per example below
                torch.ones_like(correct),
            ]
        )
        self.count[i] += masks.sum(dim=1)
        self.correct[i] += (masks & correct).sum(dim=1)

        is_passkey = answer_kind == _PASSKEY
        if bool(is_passkey.any()):
            rows, inverse = torch.unique(row[is_passkey], return_inverse=True)
            per_row = torch.zeros(rows.numel(), dtype=torch.int64, device=row.device)
            per_row_count = per_row.scatter_add(0, inverse, torch.ones_like(inverse))
            per_row_correct = per_row.scatter_add(0, inverse, correct[is_passkey].long())
            self.count[i, _PASSKEY_EXACT] += rows.numel()
            self.correct[i, _PASSKEY_EXACT] += (per_row_correct == per_row_count).sum()

        has_age = key_age >= 1
        if bool(has_age.any()):
            edges = torch.tensor(self.age_bin_upper, dtype=key_age.dtype, device=key_age.device)
            bins = torch.bucketize(key_age[has_age], edges, right=False)
            n_age = len(self.age_bin_upper) + 1
            self.age_count[i] += torch.bincount(bins, minlength=n_age)
            self.age_correct[i] += torch.bincount(bins[correct[has_age]], minlength=n_age)

    def update_from_outputs(self, outputs: EvalOutputs, stage: str = "validation") -> None:
        """``update`` from an evaluation step's :class:`~swar_bench.module.EvalOutputs`
        (``TypeError`` for anything else, :func:`~swar_bench.callbacks.eval_hooks.check_eval_outputs`)."""
        out = check_eval_outputs(outputs, stage)
        self.update(out.pred, out.target, out.answer_kind, out.key_age, out.row, n_writes=out.n_writes)

    def compute(self) -> dict[str, torch.Tensor]:
        return {
            "correct": self.correct.clone(),
            "count": self.count.clone(),
            "age_correct": self.age_correct.clone(),
            "age_count": self.age_count.clone(),
        }


@dataclass(frozen=True)
class AccuracyReport:
    """Accuracies of one evaluation pass, for the N that had at least one supervised position.

    Attributes:
        n_writes: the evaluated N, ascending.
        correct, count: ``int64[len(n_writes), len(KINDS)]`` (tokens; examples for ``passkey_exact``).
        age_correct, age_count: ``int64[len(n_writes), n_age_bins]`` query answers per key-age bin.
        age_bin_upper: inclusive upper edges of the age bins (the last bin is open).
    """

    n_writes: tuple[int, ...]
    correct: np.ndarray
    count: np.ndarray
    age_correct: np.ndarray
    age_count: np.ndarray
    age_bin_upper: tuple[int, ...] = AGE_BIN_UPPER

    @classmethod
    def from_counts(
        cls,
        n_writes_values: Sequence[int],
        counts: Mapping[str, torch.Tensor],
        age_bin_upper: Sequence[int] = AGE_BIN_UPPER,
    ) -> AccuracyReport:
        """Keep the rows of ``AnswerTypeCounts.compute()`` whose N had any supervised position
        (any shape torchmetrics gives back: a one-element state is squeezed to 0-d)."""
        names = ("correct", "count", "age_correct", "age_count")
        rows = metric_rows({k: counts[k] for k in names}, len(n_writes_values))
        arrays = {k: v.astype(np.int64) for k, v in rows.items()}
        keep = arrays["count"][:, KINDS.index("all")] > 0
        return cls(
            n_writes=tuple(int(n) for n, k in zip(n_writes_values, keep) if k),
            correct=arrays["correct"][keep],
            count=arrays["count"][keep],
            age_correct=arrays["age_correct"][keep],
            age_count=arrays["age_count"][keep],
            age_bin_upper=tuple(int(a) for a in age_bin_upper),
        )

    @staticmethod
    def _ratio(correct: np.ndarray, count: np.ndarray) -> np.ndarray:
        out = np.full(count.shape, np.nan, dtype=np.float64)
        np.divide(correct, count, out=out, where=count > 0)
        return out

    @property
    def accuracy(self) -> np.ndarray:
        """``float64[len(n_writes), len(KINDS)]``; NaN where the count is 0."""
        return self._ratio(self.correct, self.count)

    @property
    def age_accuracy(self) -> np.ndarray:
        """``float64[len(n_writes), n_age_bins]``; NaN where the count is 0."""
        return self._ratio(self.age_correct, self.age_count)

    def accuracy_of(self, kind: str, n_writes: int) -> float:
        """Accuracy of one answer kind at one N (NaN when not observed); ``ValueError`` for an
        unknown kind or an N that was not evaluated."""
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r}: expected one of {list(KINDS)}")
        if n_writes not in self.n_writes:
            raise ValueError(
                f"n_writes={n_writes!r}: expected one of the evaluated {list(self.n_writes)}"
            )
        return float(self.accuracy[self.n_writes.index(n_writes), KINDS.index(kind)])

    def count_of(self, kind: str, n_writes: int) -> int:
        """Number of observations behind ``accuracy_of(kind, n_writes)``."""
        self.accuracy_of(kind, n_writes)
        return int(self.count[self.n_writes.index(n_writes), KINDS.index(kind)])

    def interval_of(self, kind: str, n_writes: int) -> tuple[float, float]:
        """95% Wilson interval ``(low, high)`` of ``accuracy_of(kind, n_writes)`` (NaN when not
        observed), counted in the kind's unit (tokens; sequences for ``passkey_exact``)."""
        self.accuracy_of(kind, n_writes)
        i, k = self.n_writes.index(n_writes), KINDS.index(kind)
        p = wilson(int(self.correct[i, k]), int(self.count[i, k]))
        return p.low, p.high

    @property
    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """95% Wilson bounds ``(low, high)``, ``float64[len(n_writes), len(KINDS)]`` each (NaN where
        the count is 0)."""
        return wilson_arrays(self.correct, self.count)


def accuracy_table(report: AccuracyReport) -> str:
    """Markdown table, one row per N, one column per answer kind:
    ``accuracy [95% Wilson low, high] (count)`` (``swar_bench.utils.intervals.format_accuracy``), with
    ``*`` after a cell of fewer than 30 items and ``none (0)`` where an answer kind does not occur at
    that N (e.g. stale queries at n32); a legend line follows the table."""
    rows = [
        [f"n{n}"]
        + [
            format_accuracy(int(report.correct[i, k]), int(report.count[i, k]))
            for k in range(len(KINDS))
        ]
        for i, n in enumerate(report.n_writes)
    ]
    legend = FEW_NOTE + " Items are answer tokens; sequences for `passkey_exact`."
    return markdown_table(["n_writes"] + list(KINDS), rows) + "\n" + legend + "\n"


def accuracy_csv(report: AccuracyReport) -> str:
    """CSV ``n_writes,answer_type,correct,count,accuracy,ci_low,ci_high,few`` (one line per N x
    answer kind; accuracy and the 95% Wilson bounds are ``none`` when the count is 0; ``few`` is 1
    when fewer than 30 items were counted)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["n_writes", "answer_type", "correct", "count", "accuracy", "ci_low", "ci_high", "few"]
    )
    for i, n in enumerate(report.n_writes):
        for k, kind in enumerate(KINDS):
            p = wilson(int(report.correct[i, k]), int(report.count[i, k]))
            writer.writerow(
                [n, kind, p.correct, p.count]
                + [format_number(v) for v in (p.accuracy, p.low, p.high)]
                + [int(p.few)]
            )
    return buf.getvalue()


def age_accuracy_csv(report: AccuracyReport) -> str:
    """CSV ``n_writes,key_age_bin,age_lo,age_hi,correct,count,accuracy,ci_low,ci_high,few``
    (``age_hi`` -1 = open bin; 95% Wilson bounds over the bin's query tokens, ``none`` when empty;
    ``few`` is 1 below 30 tokens)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["n_writes", "key_age_bin", "age_lo", "age_hi", "correct", "count", "accuracy"]
        + ["ci_low", "ci_high", "few"]
    )
    lo, hi = age_bin_bounds(report.age_bin_upper)
    labels = age_bin_labels(report.age_bin_upper)
    for i, n in enumerate(report.n_writes):
        for b, label in enumerate(labels):
            p = wilson(int(report.age_correct[i, b]), int(report.age_count[i, b]))
            writer.writerow(
                [n, label, int(lo[b]), int(hi[b]), p.correct, p.count]
                + [format_number(v) for v in (p.accuracy, p.low, p.high)]
                + [int(p.few)]
            )
    return buf.getvalue()


def plot_accuracy_vs_n_writes(report: AccuracyReport) -> Figure:
    """Accuracy (y) against N (x, log2) with one line per answer kind; gaps where unobserved."""
    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    acc = report.accuracy
    for k, kind in enumerate(KINDS):
        ax.plot(report.n_writes, acc[:, k], marker="o", label=kind)
    ax.set_xscale("log", base=2)
    ax.set_xticks(report.n_writes, [str(n) for n in report.n_writes])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("n_writes (N)")
    ax.set_ylabel("accuracy")
    ax.set_title("passkey_swar accuracy by answer type")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def key_age_sides(report: AccuracyReport, window: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Which key-age bins lie on each side of the gray zone ``(w, 2w]`` (never queried; docs/TASK.md, "Answer rule"):
    ``(valid, expired)``, ``bool[n_age_bins]`` each: bins whose ages are all ``<= w`` (answered
    with the key's latest value) and bins whose ages are all ``> 2w`` (answered NULL). A bin
    reaching into ``(w, 2w]`` is on neither side. (docs/TASK.md, "Answer rule".)"""
    lo, hi = age_bin_bounds(report.age_bin_upper)
    valid = (hi >= 1) & (hi <= window)
    expired = lo > 2 * window
    return valid, expired


def plot_accuracy_vs_key_age(report: AccuracyReport, window: int = 16) -> Figure:
    """Query accuracy (y) against the queried key's age in writes (x, log2), one colour per N.

    The gray zone ``(w, 2w]`` (docs/TASK.md, "Answer rule") is never queried: it is shaded and every line is broken
    there (one segment for ages ``<= w``, one for ages ``> 2w``), so no line suggests a value in
    it. Above the plot each side says what a correct answer is there: the key's latest value up
    to ``w``, ``NULL`` beyond ``2w`` (docs/TASK.md, "Answer rule")."""
    fig = Figure(figsize=(7, 4.8))
    ax = fig.add_subplot()
    lo, hi = age_bin_bounds(report.age_bin_upper)
    x = np.where(hi < 0, lo, np.sqrt(lo * np.maximum(hi, lo)))
    acc = report.age_accuracy
    sides = key_age_sides(report, window)
    for i, n in enumerate(report.n_writes):
        seen = report.age_count[i] > 0
        color = None
        for side in sides:
            keep = seen & side
            if keep.any():
                (line,) = ax.plot(x[keep], acc[i, keep], marker="o", color=color, label=None if color else f"n{n}")
                color = line.get_color()
    ax.axvspan(window + 0.5, 2 * window + 0.5, color="0.85", label=f"gray zone ({window}, {2 * window}]: never queried")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("key age at query (writes since the key's latest write)")
    ax.set_ylabel("accuracy")
    transform = ax.get_xaxis_transform()  # x in data, y in axes coordinates
    ax.text(window, 1.01, f"age <= {window}: correct = the key's latest value ", transform=transform,
            ha="right", va="bottom", fontsize=8)
    ax.text(2 * window + 1, 1.01, f" age > {2 * window}: correct = NULL", transform=transform,
            ha="left", va="bottom", fontsize=8)
    ax.set_title("passkey_swar query accuracy by key age", pad=18)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


REPORT_FILES = (
    "answer_type_accuracy.md",
    "answer_type_accuracy.csv",
    "accuracy_by_key_age.csv",
    "accuracy_vs_n_writes.png",
    "accuracy_vs_key_age.png",
)
"""Files ``AnswerTypeAccuracy`` writes at test end, in its report folder."""


class AnswerTypeAccuracy(EvalHooks):
    """Accuracy per N x answer kind and per key age for validation and test.

    Consumes the evaluation steps' :class:`~swar_bench.module.EvalOutputs` (``pred``,
    ``target``, ``answer_kind``, ``key_age``, ``row``, ``n_writes``) and logs, at epoch end,
    ``val/acc/<kind>/n<N>`` and ``test/acc/<kind>/n<N>`` for every kind in ``KINDS`` observed at N
    (a kind with count 0 is not logged), with the bounds of its 95% Wilson interval as
    ``<stage>/acc_ci_low/<kind>/n<N>`` and ``<stage>/acc_ci_high/<kind>/n<N>``. The counts are torchmetrics states summed across ranks,
    so the numbers equal a one-process run.

    At test end (global rank 0) it writes ``REPORT_FILES`` atomically to ``out_dir`` (default: the
    logger's ``log_dir``) and, with a ``TensorBoardLogger``, adds the table as text and the two
    figures. ``table()`` returns the latest table as markdown text.

    Args:
        n_writes_values: every N that may be evaluated (default: ``ALLOWED_N``, every N of the task).
        out_dir: folder for the test reports; ``None`` = ``trainer.log_dir``.
        write_reports: set False to only log metrics.

    Raises:
        TypeError / ValueError: an evaluation step that does not return ``EvalOutputs``, or
            an N outside ``n_writes_values``.
    """

    def __init__(
        self,
        n_writes_values: Sequence[int] = ALLOWED_N,
        out_dir: str | None = None,
        write_reports: bool = True,
    ) -> None:
        super().__init__()
        self.n_writes_values = check_n_writes_values(n_writes_values)
        self.out_dir = out_dir
        self.write_reports = write_reports
        self.val_counts = AnswerTypeCounts(self.n_writes_values)
        self.test_counts = AnswerTypeCounts(self.n_writes_values)
        self.val_report: AccuracyReport | None = None
        self.test_report: AccuracyReport | None = None
        self.report_paths: list[str] = []

    def table(self) -> str:
        """The markdown table of the latest test pass (else the latest validation pass).

        Raises:
            RuntimeError: nothing has been evaluated yet.
        """
        report = self.test_report or self.val_report
        if report is None:
            raise RuntimeError("AnswerTypeAccuracy has no results yet: run validate or test first")
        return accuracy_table(report)

    def _finish(
        self, metric: AnswerTypeCounts, pl_module: pl.LightningModule, prefix: str
    ) -> AccuracyReport:
        report = AccuracyReport.from_counts(
            metric.n_writes_values, metric.compute(), metric.age_bin_upper
        )
        acc = report.accuracy
        low, high = report.interval
        for i, n in enumerate(report.n_writes):
            for k, kind in enumerate(KINDS):
                if report.count[i, k] > 0:
                    log_epoch_value(pl_module, f"{prefix}/acc/{kind}/n{n}", acc[i, k])
                    log_epoch_value(pl_module, f"{prefix}/acc_ci_low/{kind}/n{n}", low[i, k])
                    log_epoch_value(pl_module, f"{prefix}/acc_ci_high/{kind}/n{n}", high[i, k])
        return report

    def _counts(self, stage: str) -> AnswerTypeCounts:
        return self.test_counts if stage == "test" else self.val_counts

    def on_eval_epoch_start(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        reset_metrics(pl_module, self._counts(stage))

    def on_eval_batch_end(self, stage: str, outputs: Any) -> None:
        self._counts(stage).update_from_outputs(outputs, stage)

    def on_eval_epoch_end(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        self.keep_report(stage, trainer, self._finish(self._counts(stage), pl_module, PREFIX[stage]))

    def write_test_reports(self, trainer: pl.Trainer, out: Path) -> list[str]:
        report = self.test_report
        if not report.n_writes:
            rank_zero_warn(
                "AnswerTypeAccuracy: the test pass had no supervised positions; the report has no rows"
            )
        table = accuracy_table(report)
        paths = [
            atomic_write_text(out / REPORT_FILES[0], table),
            atomic_write_text(out / REPORT_FILES[1], accuracy_csv(report)),
            atomic_write_text(out / REPORT_FILES[2], age_accuracy_csv(report)),
        ]
        figures = {
            "accuracy_vs_n_writes": plot_accuracy_vs_n_writes(report),
            "accuracy_vs_key_age": plot_accuracy_vs_key_age(report),
        }
        for name, fig in figures.items():
            paths.append(save_figure_atomic(fig, out / f"{name}.png"))
        for experiment in tensorboard_experiments(trainer):
            experiment.add_text("test/answer_type_accuracy", table, global_step=trainer.global_step)
            for name, fig in figures.items():
                experiment.add_figure(
                    f"test/{name}", fig, global_step=trainer.global_step, close=False
                )
            experiment.flush()
        return [str(p) for p in paths]
