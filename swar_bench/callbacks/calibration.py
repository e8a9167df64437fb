"""Does the model know what it forgot? Self-knowledge correlation and expected calibration error.

Self-knowledge correlation (docs/REFEREE.md, "Calibration: `self_knowledge_correlation`"): across the
evaluated lengths, the Pearson correlation between how much the model forgot (1 - accuracy over
all answer tokens at N) and how surprised it says it was (the mean answer-token cross-entropy at
N). Near +1: it knows when it is failing; near 0: confidently wrong.

Expected calibration error (Guo et al. 2017, "On Calibration of Modern Neural Networks"): the
answer tokens' top-1 confidences are binned into ``M = n_bins`` equal-width bins and
``ECE = sum_b |correct_b - confidence_sum_b| / total``. The bins are Guo et al.'s (Section 2):
bin ``i`` holds the confidences in ``(i/M, (i+1)/M]``, so a confidence of exactly 1.0 falls in
the last bin (a float32 softmax gives exactly 1.0 once the top logit leads by about 17) and a
confidence of 0 in the first. The states are per-bin sums instead of every confidence, so memory
does not grow with N and ranks reduce by summation.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from lightning.pytorch.utilities.rank_zero import rank_zero_debug
from torchmetrics import Metric

from swar_bench.callbacks.answer_type_accuracy import check_n_writes_values
from swar_bench.callbacks.eval_hooks import PREFIX, EvalHooks, check_eval_outputs, reset_metrics
from swar_bench.callbacks.reporting import (
    format_number,
    log_epoch_value,
    markdown_table,
    metric_rows,
    tensorboard_experiments,
)
from swar_bench.callbacks.self_knowledge import (
    N_PERMUTATIONS,
    PERMUTATION_SEED,
    PermutationBaseline,
    TokenConfidences,
    auroc_per_n,
    permutation_baseline,
)
from swar_bench.module import EvalOutputs
from swar_bench.tasks.passkey_swar import ALLOWED_N
from swar_bench.utils.files import atomic_write_text
from swar_bench.utils.intervals import FEW_NOTE, MISSING, format_accuracy, wilson

N_BINS = 15
"""Equal-width confidence bins for the ECE (Guo et al. 2017 use 15)."""


@dataclass(frozen=True)
class Correlation:
    """A Pearson correlation, or NaN with the reason it is undefined."""

    value: float
    reason: str | None = None


def self_knowledge_correlation(
    error_rate: Sequence[float], mean_loss: Sequence[float]
) -> Correlation:
    """Pearson correlation of ``error_rate`` (1 - accuracy, one per N) and ``mean_loss`` (nats per
    answer token, one per N): the referee's definition (docs/REFEREE.md, "Calibration:
    `self_knowledge_correlation`"; ``swar_bench.referee.correlation.self_knowledge_correlation``, the
    one implementation), read per N.

    Returns:
        ``Correlation(value)``, or ``Correlation(nan, reason)`` when fewer than 2 N were evaluated
        or either sequence has zero variance (the coefficient is then undefined).

    Raises:
        ValueError: the two sequences differ in length or hold non-finite values (the harness's
            per-N means are always finite).
    """
    from swar_bench.referee.correlation import self_knowledge_correlation as pearson

    err = np.asarray(error_rate, dtype=np.float64)
    loss = np.asarray(mean_loss, dtype=np.float64)
    if err.shape != loss.shape or err.ndim != 1:
        raise ValueError(
            f"error_rate has shape {err.shape} and mean_loss {loss.shape}: expected two 1-D sequences of one length"
        )
    if not (np.isfinite(err).all() and np.isfinite(loss).all()):
        raise ValueError(
            f"error_rate={err.tolist()} / mean_loss={loss.tolist()}: expected finite numbers"
        )
    value, reason = pearson((1.0 - err).tolist(), loss.tolist(), unit="N", loss_name="mean answer loss")
    return Correlation(value, reason or None)


def expected_calibration_error(
    bin_count: np.ndarray, bin_confidence: np.ndarray, bin_correct: np.ndarray
) -> float:
    """L1 ECE from per-bin sums: ``sum_b |correct_b - confidence_b| / sum_b count_b``; NaN when
    the bins are empty. Inputs ``[n_bins]``: token counts, summed confidences, correct tokens."""
    total = float(np.sum(bin_count))
    if total == 0:
        return math.nan
    return float(
        np.abs(np.asarray(bin_correct, np.float64) - np.asarray(bin_confidence, np.float64)).sum()
        / total
    )


def confidence_bins(confidence: torch.Tensor, n_bins: int) -> torch.Tensor:
    """Bin index ``int64[M]`` of each confidence ``[M]`` in [0, 1]: bin ``i`` of ``n_bins``
    equal-width bins holds ``(i/n_bins, (i+1)/n_bins]``, 0 goes to bin 0 and 1.0 to the last bin
    (Guo et al. 2017, Section 2). The inner edges are ``i / n_bins`` computed in float64."""
    inner = torch.arange(1, n_bins, dtype=torch.float64, device=confidence.device) / n_bins
    return torch.bucketize(confidence.to(torch.float64), inner, right=False)


class CalibrationCounts(Metric):
    """Per-N sums of answer tokens, correct tokens, answer loss and confidence bins.

    Args:
        n_writes_values: every N that may be evaluated (default: ``ALLOWED_N``, every N of the task).
        n_bins: equal-width confidence bins of the ECE (default 15).

    States (summed across ranks): ``count`` / ``correct`` ``int64[n_N]``, ``loss_sum``
    ``float64[n_N]`` (nats), ``bin_count`` / ``bin_correct`` ``int64[n_N, n_bins]``,
    ``bin_confidence`` ``float64[n_N, n_bins]``; bin ``i`` holds confidences in
    ``(i/n_bins, (i+1)/n_bins]`` (0 in bin 0; see ``confidence_bins``). ``compute()`` returns them
    in a dict (torchmetrics squeezes one-element states: read it with ``CalibrationReport.from_counts``).

    Raises:
        ValueError: bad arguments; in ``update``, an N outside ``n_writes_values``, mismatched
            shapes, or confidences outside [0, 1].
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better = False

    def __init__(
        self, n_writes_values: Sequence[int] = ALLOWED_N, n_bins: int = N_BINS, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.n_writes_values = check_n_writes_values(n_writes_values)
        if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
            raise ValueError(f"n_bins={n_bins!r}: expected an integer >= 1")
        self.n_bins = int(n_bins)
        self._n_index = {n: i for i, n in enumerate(self.n_writes_values)}
        rows = len(self.n_writes_values)
        self.add_state("count", default=torch.zeros(rows, dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state(
            "correct", default=torch.zeros(rows, dtype=torch.int64), dist_reduce_fx="sum"
        )
        self.add_state(
            "loss_sum", default=torch.zeros(rows, dtype=torch.float64), dist_reduce_fx="sum"
        )
        for name, dtype in (
            ("bin_count", torch.int64),
            ("bin_correct", torch.int64),
            ("bin_confidence", torch.float64),
        ):
            self.add_state(
                name, default=torch.zeros(rows, self.n_bins, dtype=dtype), dist_reduce_fx="sum"
            )

    def update(
        self,
        pred: torch.Tensor,
        target: torch.Tensor,
        loss: torch.Tensor,
        confidence: torch.Tensor,
        n_writes: int,
    ) -> None:
        """Add one evaluation batch (the fields of ``EvalOutputs``): ``pred`` / ``target`` int64 ``[M]``, ``loss``
        float ``[M]`` per-token cross-entropy (nats), ``confidence`` float ``[M]`` softmax
        probability of ``pred``; ``n_writes`` the batch's N."""
        if int(n_writes) not in self._n_index:
            raise ValueError(f"n_writes={n_writes!r}: expected one of {list(self.n_writes_values)}")
        i = self._n_index[int(n_writes)]
        tensors = (pred, target, loss, confidence)
        if any(t.dim() != 1 or t.shape != pred.shape for t in tensors):
            raise ValueError(
                f"pred/target/loss/confidence shapes {[tuple(t.shape) for t in tensors]}: expected 1-D tensors of one length M"
            )
        if confidence.numel() and bool(((confidence < 0) | (confidence > 1)).any()):
            raise ValueError(
                "confidence outside [0, 1]: expected the softmax probability of the predicted token"
            )
        correct = pred == target
        conf = confidence.detach().to(torch.float64)
        self.count[i] += pred.numel()
        self.correct[i] += correct.sum()
        self.loss_sum[i] += loss.detach().to(torch.float64).sum()
        bins = confidence_bins(conf, self.n_bins)
        self.bin_count[i] += torch.bincount(bins, minlength=self.n_bins)
        self.bin_correct[i] += torch.bincount(bins[correct], minlength=self.n_bins)
        self.bin_confidence[i] += torch.bincount(bins, weights=conf, minlength=self.n_bins)

    def update_from_outputs(self, outputs: EvalOutputs, stage: str = "validation") -> None:
        """``update`` from an evaluation step's :class:`~swar_bench.module.EvalOutputs`
        (``TypeError`` for anything else)."""
        out = check_eval_outputs(outputs, stage)
        self.update(out.pred, out.target, out.loss, out.confidence, out.n_writes)

    def compute(self) -> dict[str, torch.Tensor]:
        names = ("count", "correct", "loss_sum", "bin_count", "bin_correct", "bin_confidence")
        return {name: getattr(self, name).clone() for name in names}


@dataclass(frozen=True)
class CalibrationReport:
    """Per-N accuracy, mean answer loss and ECE, and the self-knowledge correlation across N.

    Attributes:
        n_writes: the evaluated N (ascending; only N with answer tokens).
        count, correct: answer tokens and correct answer tokens per N (``int64``).
        accuracy, mean_loss (nats), ece: ``float64`` per N.
        correlation: ``self_knowledge_correlation(1 - accuracy, mean_loss)``.
        auroc: ``float64`` per N, AUROC of the max probability for correct vs wrong answer tokens
            (``self_knowledge.auroc_per_n``); None when not measured.
        baseline: the correlation's permutation baseline (``self_knowledge.permutation_baseline``);
            None when not measured (validation passes).
    """

    n_writes: tuple[int, ...]
    count: np.ndarray
    correct: np.ndarray
    accuracy: np.ndarray
    mean_loss: np.ndarray
    ece: np.ndarray
    correlation: Correlation
    auroc: np.ndarray | None = None
    baseline: PermutationBaseline | None = None

    @classmethod
    def from_counts(
        cls, n_writes_values: Sequence[int], counts: Mapping[str, torch.Tensor]
    ) -> CalibrationReport:
        """Build the report from ``CalibrationCounts.compute()`` (any shape torchmetrics gives
        back: a one-N state is squeezed to 0-d by ``compute()``; the rows are restored here)."""
        a = metric_rows(counts, len(n_writes_values))
        for name in ("count", "correct", "loss_sum"):
            a[name] = a[name][:, 0]
        keep = a["count"] > 0
        count = a["count"][keep].astype(np.int64)
        accuracy = a["correct"][keep] / count
        mean_loss = a["loss_sum"][keep] / count
        ece = np.array(
            [
                expected_calibration_error(c, f, k)
                for c, f, k in zip(
                    a["bin_count"][keep], a["bin_confidence"][keep], a["bin_correct"][keep]
                )
            ],
            dtype=np.float64,
        )
        return cls(
            n_writes=tuple(int(n) for n, k in zip(n_writes_values, keep) if k),
            count=count,
            correct=a["correct"][keep].astype(np.int64),
            accuracy=accuracy.astype(np.float64),
            mean_loss=mean_loss.astype(np.float64),
            ece=ece,
            correlation=self_knowledge_correlation(1.0 - accuracy, mean_loss),
        )


def calibration_table(report: CalibrationReport) -> str:
    """Markdown table (N, answer tokens, accuracy with its 95% Wilson interval over the answer
    tokens, mean answer loss, ECE, and the AUROC when measured), its legend, the correlation line
    and, when measured, its permutation baseline."""
    auroc = report.auroc if report.auroc is not None else None
    rows = [
        [f"n{n}", str(int(c)), format_accuracy(int(k), int(c), 4)]
        + [format_number(x, 4) for x in (l, e)]
        + ([] if auroc is None else [format_number(auroc[i], 4)])
        for i, (n, c, k, l, e) in enumerate(
            zip(report.n_writes, report.count, report.correct, report.mean_loss, report.ece)
        )
    ]
    header = ["n_writes", "answer tokens", "accuracy [95% CI] (tokens)", "mean answer loss (nats)", "ECE"]
    if auroc is not None:
        header.append("AUROC (max prob, correct vs wrong)")
    table = markdown_table(header, rows)
    table += "\n" + FEW_NOTE + "\n"
    corr = report.correlation
    value = f"{corr.value:.4f}" if math.isfinite(corr.value) else f"{MISSING} ({corr.reason})"
    table += f"\nself-knowledge correlation: {value}\n"
    b = report.baseline
    if b is not None:
        if math.isfinite(b.mean):
            table += (
                f"permutation baseline (answer losses shuffled across tokens of the same answer kind, "
                f"{b.n_permutations} shuffles, seed {b.seed}): mean {b.mean:.4f}, 95% of shuffles in "
                f"[{b.low:.4f}, {b.high:.4f}], p = {format_number(b.p_value, 4)}\n"
            )
        else:
            table += f"permutation baseline: {MISSING} (the shuffled correlations are undefined)\n"
    return table


def calibration_csv(report: CalibrationReport) -> str:
    """CSV ``n_writes,count,correct,accuracy,ci_low,ci_high,few,mean_loss,ece,auroc`` (one line per
    N; 95% Wilson bounds over the answer tokens; ``few`` is 1 below 30 tokens; ``auroc`` as in
    ``CalibrationReport``, ``none`` when undefined or not measured)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["n_writes", "count", "correct", "accuracy", "ci_low", "ci_high", "few", "mean_loss", "ece"]
        + ["auroc"]
    )
    auroc = report.auroc if report.auroc is not None else np.full(len(report.n_writes), np.nan)
    for n, c, k, l, e, a in zip(
        report.n_writes, report.count, report.correct, report.mean_loss, report.ece, auroc
    ):
        p = wilson(int(k), int(c))
        writer.writerow(
            [n, p.count, p.correct]
            + [format_number(v) for v in (p.accuracy, p.low, p.high)]
            + [int(p.few), format_number(l), format_number(e), format_number(a)]
        )
    return buf.getvalue()


CALIBRATION_FILES = ("calibration.md", "calibration.csv")
"""Files ``Calibration`` writes at test end, in its report folder."""


class Calibration(EvalHooks):
    """Self-knowledge correlation and per-N expected calibration error of the answer tokens.

    Consumes the evaluation steps' :class:`~swar_bench.module.EvalOutputs` (``pred``,
    ``target``, ``loss``, ``confidence``, ``answer_kind``, ``n_writes``); logs ``val/ece/n<N>`` / ``test/ece/n<N>`` per evaluated N and
    ``val/self_knowledge_correlation`` / ``test/self_knowledge_correlation`` (NaN when fewer than
    2 N were evaluated or a side has zero variance; the reason is logged the first time only, per
    ``val`` / ``test``, not at every validation, and at debug level when fewer than 2 N were
    evaluated: a config that evaluates one N by design shows the undefined value in its test table). At test end (global rank 0) writes ``CALIBRATION_FILES`` atomically to ``out_dir`` (default: the logger's
    ``log_dir``) and adds the table to TensorBoard as text.

    Args:
        n_writes_values: every N that may be evaluated (default: ``ALLOWED_N``, every N of the task).
        n_bins: confidence bins of the ECE (default 15).
        out_dir: folder for the test reports; ``None`` = ``trainer.log_dir``.
        write_reports: set False to only log metrics.
        self_knowledge: keep every answer token's confidence, loss, type and correctness to report
            the per-N AUROC (``<stage>/self_knowledge_auroc/n<N>``) and, at test, the correlation's
            permutation baseline (``test/self_knowledge_baseline``, ``test/self_knowledge_p_value``);
            see ``callbacks.self_knowledge``. Memory grows by about 17 bytes per answer token.
        n_permutations: shuffles of the permutation baseline (an integer >= 1).
        permutation_seed: seed of the permutation baseline's shuffles (numpy's, an integer >= 0).
    """

    def __init__(
        self,
        n_writes_values: Sequence[int] = ALLOWED_N,
        n_bins: int = N_BINS,
        out_dir: str | None = None,
        write_reports: bool = True,
        self_knowledge: bool = True,
        n_permutations: int = N_PERMUTATIONS,
        permutation_seed: int = PERMUTATION_SEED,
    ) -> None:
        super().__init__()
        if isinstance(n_permutations, bool) or int(n_permutations) != n_permutations or n_permutations < 1:
            raise ValueError(f"n_permutations={n_permutations!r}: expected an integer >= 1")
        self.val_counts = CalibrationCounts(n_writes_values, n_bins)
        self.test_counts = CalibrationCounts(n_writes_values, n_bins)
        self.self_knowledge = bool(self_knowledge)
        self.n_permutations = int(n_permutations)
        self.permutation_seed = int(permutation_seed)
        self.val_tokens = TokenConfidences()
        self.test_tokens = TokenConfidences()
        self.out_dir = out_dir
        self.write_reports = write_reports
        self.val_report: CalibrationReport | None = None
        self.test_report: CalibrationReport | None = None
        self.report_paths: list[str] = []
        self._nan_reported: set[str] = set()  # prefixes whose NaN correlation was explained

    def _finish(
        self, metric: CalibrationCounts, pl_module: pl.LightningModule, prefix: str
    ) -> CalibrationReport:
        report = CalibrationReport.from_counts(metric.n_writes_values, metric.compute())
        if self.self_knowledge:
            tokens = (self.test_tokens if prefix == "test" else self.val_tokens).compute()
            auroc = auroc_per_n(report.n_writes, tokens)
            baseline = None
            if prefix == "test" and report.n_writes:
                baseline = permutation_baseline(
                    report.n_writes,
                    tokens,
                    report.correlation.value,
                    self.n_permutations,
                    self.permutation_seed,
                )
            report = dataclasses.replace(report, auroc=auroc, baseline=baseline)
            for n, a in zip(report.n_writes, auroc):
                log_epoch_value(pl_module, f"{prefix}/self_knowledge_auroc/n{n}", a)
            if baseline is not None:
                log_epoch_value(pl_module, "test/self_knowledge_baseline", baseline.mean)
                log_epoch_value(pl_module, "test/self_knowledge_p_value", baseline.p_value)
        for n, ece in zip(report.n_writes, report.ece):
            log_epoch_value(pl_module, f"{prefix}/ece/n{n}", ece)
        if report.n_writes:
            log_epoch_value(
                pl_module, f"{prefix}/self_knowledge_correlation", report.correlation.value
            )
            if report.correlation.reason is not None and prefix not in self._nan_reported:
                self._nan_reported.add(prefix)  # once per run: not at every validation
                # fewer than 2 N is the config's choice (quickstart trains and validates on n32
                # alone), said at every such fit: debug level; a NaN across N is a finding: info
                note = rank_zero_debug if len(report.n_writes) < 2 else rank_zero_info
                note(f"{prefix}/self_knowledge_correlation is NaN: {report.correlation.reason}")
        return report

    def _states(self, stage: str) -> tuple[CalibrationCounts, TokenConfidences]:
        if stage == "test":
            return self.test_counts, self.test_tokens
        return self.val_counts, self.val_tokens

    def on_eval_epoch_start(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        reset_metrics(pl_module, *self._states(stage))

    def on_eval_batch_end(self, stage: str, outputs: Any) -> None:
        counts, tokens = self._states(stage)
        counts.update_from_outputs(outputs, stage)
        if self.self_knowledge:
            tokens.update_from_outputs(outputs, stage)

    def on_eval_epoch_end(
        self, stage: str, trainer: pl.Trainer, pl_module: pl.LightningModule
    ) -> None:
        self.keep_report(stage, trainer, self._finish(self._states(stage)[0], pl_module, PREFIX[stage]))

    def write_test_reports(self, trainer: pl.Trainer, out: Path) -> list[str]:
        if not self.test_report.n_writes:
            rank_zero_warn("Calibration: the test pass had no answer tokens; the report has no rows")
        table = calibration_table(self.test_report)
        paths = [
            str(atomic_write_text(out / CALIBRATION_FILES[0], table)),
            str(atomic_write_text(out / CALIBRATION_FILES[1], calibration_csv(self.test_report))),
        ]
        for experiment in tensorboard_experiments(trainer):
            experiment.add_text("test/calibration", table, global_step=trainer.global_step)
            experiment.flush()
        return paths
