"""The self-knowledge correlation, the one definition the referee and the harness's
``Calibration`` callback share (docs/REFEREE.md, "Calibration: `self_knowledge_correlation`")."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from swar_bench.utils.text import plural


def self_knowledge_correlation(
    accuracies: Sequence[float | None],
    losses: Sequence[float | None],
    unit: str = "range",
    loss_name: str = "probe loss",
) -> tuple[float, str]:
    """Pearson correlation, one point per ``unit`` (a referee range; an N in the harness's
    ``Calibration`` callback), of "how much it got wrong" (``1 - accuracy``) and its own loss
    (nats). The one definition of the self-knowledge correlation, the referee's and the harness's.

    Source: docs/REFEREE.md, "Calibration: `self_knowledge_correlation`": near +1 when the mechanism is as surprised
    as it is wrong, near 0 when it is confidently wrong.

    Args:
        accuracies, losses: one value per ``unit``, in [0, 1] and nats; ``None`` or a non-finite
            value (a diverged run) makes the correlation undefined.
        unit: what one point is, as the reason names it (``"range"``, ``"N"``).
        loss_name: what the loss is, as the reason names it (``"probe loss"``, ``"mean answer loss"``).

    Returns:
        ``(r, reason)``: ``r`` in [-1, 1] and ``reason == ""``; or ``(nan, reason)`` stating why it is
        undefined (fewer than 2 points: ``"1 evaluated range: the correlation needs at least 2"``,
        a missing or non-finite value, or a constant series, whose variance is 0:
        ``"the error rate is 0 at every N (zero variance)"``).

    Raises:
        ValueError: the two sequences differ in length.
    """
    a = [None if v is None else float(v) for v in accuracies]
    lo = [None if v is None else float(v) for v in losses]
    if len(a) != len(lo):
        raise ValueError(
            f"{len(a)} accuracies and {len(lo)} losses: expected two sequences of one length, one of each per {unit}"
        )
    if len(a) < 2:
        evaluated = "evaluated " + unit
        return float("nan"), f"{plural(len(a), evaluated, evaluated if unit == 'N' else evaluated + 's')}: the correlation needs at least 2"
    if any(v is None or not math.isfinite(v) for v in a + lo):
        return float("nan"), "an accuracy or loss is missing or not finite"
    forgot = np.array([1.0 - v for v in a])
    loss = np.array(lo)
    if np.ptp(forgot) == 0:
        return float("nan"), f"the error rate is {forgot[0]:.6g} at every {unit} (zero variance)"
    if np.ptp(loss) == 0:
        return float("nan"), f"the {loss_name} is {loss[0]:.6g} at every {unit} (zero variance)"
    r = float(np.corrcoef(forgot, loss)[0, 1])
    return max(-1.0, min(1.0, r)), ""
