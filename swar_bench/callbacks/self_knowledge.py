"""Self-knowledge that means something: per-token AUROC and the correlation's permutation baseline.

The referee's self-knowledge correlation (docs/REFEREE.md, "Calibration: `self_knowledge_correlation`"; see
``calibration.self_knowledge_correlation``) correlates per-N error with per-N mean answer loss.
Both follow the answer mix (which answer kinds are asked at N, and how hard each is), and both
come from the same logits, so a model at chance can score 0.9995. Two measures sit beside it:

- **AUROC per N** of the answer token's max softmax probability for correct vs wrong answers
  (``torchmetrics.functional.classification.binary_auroc``): does the model's confidence rank its
  right answers above its wrong ones? 0.5 = confidence says nothing about correctness, 1 = it
  separates them perfectly. Undefined (NaN) at an N where every answer is right or every one wrong.
- **The correlation's permutation baseline**: the per-token answer losses are shuffled across
  tokens of the same answer kind (over all N, seeded), the per-N mean losses recomputed and the
  correlation with the (unchanged) per-N error taken again, ``n_permutations`` times. The shuffle
  keeps the answer mix of every N and the loss distribution of every answer kind, and breaks only
  the link between a token's loss and whether that token was answered right; a correlation inside
  the baseline's range is explained by the answer mix alone. Reported: the baseline's mean, its
  2.5-97.5 percentile range and the one-sided permutation p-value
  ``(1 + #{r_perm >= r}) / (1 + n_permutations)`` (Phipson & Smyth 2010).

The per-token values are torchmetrics list states (``dist_reduce_fx="cat"``), gathered across
ranks; they are put in a canonical order (by N, answer kind, loss, confidence, correctness) before
shuffling, so a DDP run gives the same baseline as one process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.functional.classification import binary_auroc
from torchmetrics.utilities import dim_zero_cat

from swar_bench.callbacks.eval_hooks import check_eval_outputs
from swar_bench.module import EvalOutputs

N_PERMUTATIONS = 200
"""Default shuffles of the permutation baseline."""

PERMUTATION_SEED = 0
"""Default seed of the permutation baseline's shuffles."""


class TokenConfidences(Metric):
    """Every answer token's N, answer kind, correctness, loss and confidence, kept for the AUROC
    and the permutation baseline (memory grows with the answer tokens evaluated: about 17 bytes
    each).

    States (lists of 1-D tensors, concatenated across ranks): ``n_writes`` int64, ``answer_kind``
    int64 (codes of ``ANSWER_KINDS``), ``correct`` bool, ``loss`` float64 (nats), ``confidence``
    float64 (softmax probability of the predicted token).
    """

    full_state_update = False
    is_differentiable = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in ("n_writes", "answer_kind", "correct", "loss", "confidence"):
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(
        self,
        pred: torch.Tensor,
        target: torch.Tensor,
        loss: torch.Tensor,
        confidence: torch.Tensor,
        answer_kind: torch.Tensor,
        n_writes: int,
    ) -> None:
        """Keep one evaluation batch: all tensors ``[M]`` (the fields of ``EvalOutputs``), ``n_writes`` the batch's N.

        Raises:
            ValueError: the tensors are not 1-D of one length.
        """
        tensors = (pred, target, loss, confidence, answer_kind)
        if any(t.dim() != 1 or t.shape != pred.shape for t in tensors):
            raise ValueError(
                f"pred/target/loss/confidence/answer_kind shapes {[tuple(t.shape) for t in tensors]}: "
                "expected 1-D tensors of one length M"
            )
        self.n_writes.append(torch.full_like(pred, int(n_writes), dtype=torch.int64))
        self.answer_kind.append(answer_kind.detach().to(torch.int64))
        self.correct.append(pred == target)
        self.loss.append(loss.detach().to(torch.float64))
        self.confidence.append(confidence.detach().to(torch.float64))

    def update_from_outputs(self, outputs: EvalOutputs, stage: str = "validation") -> None:
        """``update`` from an evaluation step's :class:`~swar_bench.module.EvalOutputs`
        (``TypeError`` for anything else)."""
        out = check_eval_outputs(outputs, stage)
        self.update(out.pred, out.target, out.loss, out.confidence, out.answer_kind, n_writes=out.n_writes)

    def compute(self) -> dict[str, np.ndarray]:
        """The kept values as numpy arrays ``[M_total]``, in a canonical order (see module doc)."""
        out = {}
        for name in ("n_writes", "answer_kind", "correct", "loss", "confidence"):
            value = getattr(self, name)
            if isinstance(value, list):
                value = dim_zero_cat(value) if value else torch.zeros(0)
            out[name] = value.detach().cpu().numpy().reshape(-1)
        out["correct"] = out["correct"].astype(bool)
        order = np.lexsort(
            (out["correct"], out["confidence"], out["loss"], out["answer_kind"], out["n_writes"])
        )
        return {k: v[order] for k, v in out.items()}


def auroc_per_n(
    n_writes: Sequence[int], tokens: Mapping[str, np.ndarray]
) -> np.ndarray:
    """AUROC of ``confidence`` for ``correct`` vs wrong answer tokens at each N of ``n_writes``
    (torchmetrics' ``binary_auroc``, exact: no thresholds); ``float64[len(n_writes)]``, NaN at an N
    with no token, or only right or only wrong ones."""
    out = np.full(len(n_writes), np.nan)
    for i, n in enumerate(n_writes):
        at = tokens["n_writes"] == n
        correct = tokens["correct"][at]
        if correct.size and 0 < int(correct.sum()) < correct.size:
            out[i] = float(
                binary_auroc(
                    torch.from_numpy(tokens["confidence"][at]),
                    torch.from_numpy(correct.astype(np.int64)),
                )
            )
    return out


@dataclass(frozen=True)
class PermutationBaseline:
    """The self-knowledge correlation under shuffles of the answer losses within answer kind.

    ``mean``, ``low`` / ``high`` (2.5 / 97.5 percentiles) of the finite shuffled correlations,
    ``p_value`` = ``(1 + #{r_perm >= observed}) / (1 + n_valid)`` (NaN when the observed
    correlation or every shuffled one is undefined), ``n_permutations`` and ``seed``.
    """

    mean: float
    low: float
    high: float
    p_value: float
    n_permutations: int
    seed: int


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()
    den = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    return float(np.dot(dx, dy) / den) if den > 0 else math.nan


def permutation_baseline(
    n_writes: Sequence[int],
    tokens: Mapping[str, np.ndarray],
    observed: float,
    n_permutations: int = N_PERMUTATIONS,
    seed: int = PERMUTATION_SEED,
) -> PermutationBaseline:
    """Permutation baseline of the self-knowledge correlation (see the module docstring).

    Args:
        n_writes: the N of the correlation (each must have answer tokens in ``tokens``).
        tokens: ``TokenConfidences.compute()``.
        observed: the correlation being judged (NaN allowed: then ``p_value`` is NaN).
        n_permutations: shuffles (>= 1).
        seed: seed of ``numpy.random.default_rng``.

    Raises:
        ValueError: ``n_permutations`` < 1.
    """
    if isinstance(n_permutations, bool) or int(n_permutations) != n_permutations or n_permutations < 1:
        raise ValueError(f"n_permutations={n_permutations!r}: expected an integer >= 1")
    ns = np.asarray(list(n_writes), dtype=np.int64)
    index = {int(n): i for i, n in enumerate(ns)}
    keep = np.isin(tokens["n_writes"], ns)
    row = np.array([index[int(n)] for n in tokens["n_writes"][keep]], dtype=np.int64)
    kind = tokens["answer_kind"][keep]
    loss = tokens["loss"][keep].astype(np.float64)
    count = np.bincount(row, minlength=len(ns)).astype(np.float64)
    error = 1.0 - np.bincount(row, weights=tokens["correct"][keep], minlength=len(ns)) / np.maximum(count, 1)
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(kind == k) for k in np.unique(kind)]
    shuffled = loss.copy()
    values = []
    for _ in range(int(n_permutations)):
        for g in groups:
            shuffled[g] = loss[g][rng.permutation(g.size)]
        mean_loss = np.bincount(row, weights=shuffled, minlength=len(ns)) / np.maximum(count, 1)
        values.append(_pearson(error, mean_loss) if len(ns) >= 2 else math.nan)
    r = np.asarray(values)
    finite = r[np.isfinite(r)]
    if finite.size == 0:
        return PermutationBaseline(math.nan, math.nan, math.nan, math.nan, int(n_permutations), seed)
    p = (
        float((1 + np.sum(finite >= observed - 1e-12)) / (1 + finite.size))
        if math.isfinite(observed)
        else math.nan
    )
    low, high = np.percentile(finite, [2.5, 97.5])
    return PermutationBaseline(
        float(finite.mean()), float(low), float(high), p, int(n_permutations), seed
    )
