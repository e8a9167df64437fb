"""``verdict``: does a challenger beat the baseline, per suite and range, by a paired test on the same probes.

Source: docs/REFEREE.md, "A verdict: does the challenger beat the baseline?": a challenger graduates when it "beats the baseline on the referee's evaluation suite at matched
FLOPs". Two results are judged only when ``comparison_table`` would put them side by side
(``check_comparable``: same training protocol, ranges, seed, vocab, budgets and sizes, and training
FLOPs within the tolerance), so both were probed on the same held-out instances (instance ``i`` of a
cell is drawn from the same seed in both runs). Each cell is then a paired comparison:

- one probe position per instance (needle, copy, multi-hop) or the loss-threshold proxy (a
  loss-only mechanism): exact McNemar test, a two-sided binomial test of the discordant pairs,
  ``scipy.stats.binomtest(c, b + c, 0.5)`` where ``b`` instances only the baseline got right and
  ``c`` only the challenger (McNemar 1947; the exact form of Fagerland, Lydersen & Laake 2013);
- many positions per instance (the Markov stream): a paired permutation test of the mean per-instance
  accuracy difference (``scipy.stats.permutation_test``, ``permutation_type="samples"``: each
  instance's two values swapped or not: every assignment when there are at most 2^n <= 9999 of
  them, else 9999 random ones seeded with the results' seed).

A cell's verdict is ``challenger`` (better, p < alpha), ``baseline`` (better, p < alpha) or ``tie``.
p-values are per cell and not adjusted for the number of cells.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from swar_bench.referee.suites import SUITE_NAMES
from swar_bench.referee.table import FLOPS_TOLERANCE, _grid, check_comparable, check_result

ALPHA = 0.05
"""Default significance level of a cell's verdict."""

ALPHA_EXPECTED = "a significance level in (0, 1)"
"""What ``alpha`` (``verdict --alpha``) must be."""

N_RESAMPLES = 9999
"""Random swaps of the paired permutation test (exact when the instances allow fewer)."""

VERDICT_SCHEMA = "swar_bench.referee.verdict/1"
"""Version tag of the dict ``verdict`` returns."""


def mcnemar_exact(base: np.ndarray, chal: np.ndarray) -> tuple[int, int, float]:
    """Exact McNemar test of two paired ``bool[n]`` outcomes: ``(b, c, p)``.

    ``b``: pairs only ``base`` got right; ``c``: pairs only ``chal`` got right; ``p``: two-sided
    ``binomtest(c, b + c, 0.5).pvalue`` (1.0 without discordant pairs).
    """
    base, chal = np.asarray(base, dtype=bool), np.asarray(chal, dtype=bool)
    b = int(np.sum(base & ~chal))
    c = int(np.sum(~base & chal))
    p = 1.0 if b + c == 0 else float(stats.binomtest(c, b + c, 0.5).pvalue)
    return b, c, p


def paired_permutation(base: np.ndarray, chal: np.ndarray, seed: int) -> float:
    """Two-sided p-value of the mean paired difference ``chal - base`` (``float[n]`` each) under
    random swaps within pairs (``scipy.stats.permutation_test``, seeded); 1.0 when all pairs tie."""
    base, chal = np.asarray(base, dtype=np.float64), np.asarray(chal, dtype=np.float64)
    if np.all(base == chal):
        return 1.0
    res = stats.permutation_test(
        (chal, base),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=N_RESAMPLES,
        alternative="two-sided",
        random_state=seed,
    )
    return float(min(1.0, res.pvalue))


def _per_probe(cell: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    probes = cell.get("per_probe")
    if not isinstance(probes, Mapping) or not isinstance(probes.get("loss"), list):
        raise ValueError(  # noqa: TRY004 - a malformed result file is bad input, a ValueError
            f"{where}.per_probe is missing: expected a result of schema 2 with per-probe outcomes "
            "(rerun swar-bench referee)"
        )
    at = f"{where}.per_probe at range {cell.get('range')}"
    lengths = {}
    for key in ("loss", "count", "correct"):
        values = probes.get(key)
        if values is None and key == "correct":
            continue  # a loss-only mechanism: no exact outcomes
        if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            raise ValueError(f"{at}: {key} is not a list of numbers; expected one number per held-out probe")
        lengths[key] = len(values)
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{key} {n}" for key, n in lengths.items())
        raise ValueError(f"{at}: its lists differ in length ({shown}); expected one entry per held-out probe")
    counts, correct = probes["count"], probes.get("correct") or [0] * len(probes["count"])
    for i, (loss, n, right) in enumerate(zip(probes["loss"], counts, correct, strict=True)):
        if not (math.isfinite(loss) and loss >= 0) or n != int(n) or n < 0 or not 0 <= right <= n:
            raise ValueError(f"{at}: probe {i} has loss {loss}, count {n}, correct {right}; expected a finite "
                             "loss >= 0 and 0 <= correct <= count (integers)")
    return probes


def _cell(
    suite: str,
    cb: Mapping[str, Any],
    cc: Mapping[str, Any],
    threshold: float,
    alpha: float,
    seed: int,
) -> dict[str, Any]:
    pb = _per_probe(cb, f"baseline suites.{suite}")
    pc = _per_probe(cc, f"challenger suites.{suite}")
    if len(pb["loss"]) != len(pc["loss"]) or pb["count"] != pc["count"]:
        raise ValueError(
            f"suites.{suite} at range {cb['range']}: the two results were probed on different "
            f"instances ({len(pb['loss'])} vs {len(pc['loss'])}); expected the same held-out probes"
        )
    exact = pb.get("correct") is not None and pc.get("correct") is not None
    if exact:
        metric = "accuracy"
        count = np.asarray(pb["count"], dtype=np.float64)
        base = np.asarray(pb["correct"]) / np.maximum(count, 1)
        chal = np.asarray(pc["correct"]) / np.maximum(count, 1)
        binary = bool(np.all(count == 1))
    else:  # a loss-only side: the original protocol's proxy, one outcome per instance
        metric = "proxy_accuracy"
        base = np.asarray(pb["loss"]) < threshold
        chal = np.asarray(pc["loss"]) < threshold
        binary = True
    out: dict[str, Any] = {
        "suite": suite,
        "range": cb["range"],
        "metric": metric,
        "n_probes": len(base),
        "baseline": float(np.mean(base)),
        "challenger": float(np.mean(chal)),
    }
    out["difference"] = out["challenger"] - out["baseline"]
    if binary:
        b, c, p = mcnemar_exact(base, chal)
        out.update(test="exact McNemar", baseline_only=b, challenger_only=c, p_value=p)
    else:
        p = paired_permutation(base, chal, seed)
        out.update(test="paired permutation", baseline_only=None, challenger_only=None, p_value=p)
    if p < alpha and out["difference"] > 0:
        out["winner"] = "challenger"
    elif p < alpha and out["difference"] < 0:
        out["winner"] = "baseline"
    else:
        out["winner"] = "tie"
    return out


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float in (0, 1); else ``ValueError`` (one line: ``alpha=2.0: expected ...``)."""
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise ValueError(f"alpha={value!r}: expected {ALPHA_EXPECTED}")
    return value


def verdict(
    baseline: Mapping[str, Any],
    challenger: Mapping[str, Any],
    *,
    alpha: float = ALPHA,
    flops_tolerance: float | None = FLOPS_TOLERANCE,
    names: tuple[str, str] = ("baseline", "challenger"),
) -> dict[str, Any]:
    """Judge ``challenger`` against ``baseline`` (two ``evaluate`` results) cell by cell.

    Args:
        baseline, challenger: ``evaluate`` results of schema 2 (with ``per_probe`` outcomes).
        alpha: significance level in (0, 1) of each cell's verdict.
        flops_tolerance: passed to ``check_comparable`` (default 5%; None or inf: any FLOPs).
        names: how the two are named in errors and in the returned dict.

    Returns:
        A JSON-ready dict: ``schema``, ``baseline`` / ``challenger`` (name, mechanism class,
        n_params, training FLOPs), ``protocol`` (the shared one), ``alpha``, ``cells`` (per suite
        and range: metric, n_probes, both accuracies, difference, test, discordant counts
        ``baseline_only`` / ``challenger_only`` (McNemar), ``p_value``, ``winner``), ``summary``
        (per suite: cells won by each side and tied) and ``beats_baseline`` (True when the
        challenger wins at least one cell and loses none).

    Raises:
        ValueError: either result malformed (``check_result``) or without per-probe outcomes,
            different terms (``check_comparable``: protocol, ranges, seed, budgets, sizes, FLOPs),
            or a bad ``alpha`` (each one line).
    """
    alpha = check_alpha(alpha)
    base_name, chal_name = names
    check_result(baseline, base_name)
    check_result(challenger, chal_name)
    check_comparable({base_name: baseline, chal_name: challenger}, flops_tolerance)
    threshold = float(baseline["solved_threshold"])
    seed = int(baseline["protocol"]["seed"])
    cells = [
        _cell(suite, cb, cc, threshold, alpha, seed)
        for suite in SUITE_NAMES
        for cb, cc in zip(baseline["suites"][suite], challenger["suites"][suite])
    ]
    summary = {
        suite: {
            side: sum(c["winner"] == side for c in cells if c["suite"] == suite)
            for side in ("challenger", "baseline", "tie")
        }
        for suite in SUITE_NAMES
    }
    wins = sum(s["challenger"] for s in summary.values())
    losses = sum(s["baseline"] for s in summary.values())

    def side(name: str, r: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "class": r["mechanism"]["class"],
            "n_params": r["mechanism"]["n_params"],
            "train_flops": r["flops"].get("train"),
        }

    return {
        "schema": VERDICT_SCHEMA,
        "baseline": side(base_name, baseline),
        "challenger": side(chal_name, challenger),
        "protocol": dict(baseline["protocol"]),
        "alpha": alpha,
        "cells": cells,
        "summary": summary,
        "beats_baseline": bool(wins > 0 and losses == 0),
    }


def verdict_table(v: Mapping[str, Any]) -> str:
    """Plain-text table of a ``verdict`` dict: one row per suite and range."""
    b, c = v["baseline"]["name"], v["challenger"]["name"]
    p = v["protocol"]
    head = f"verdict: {c} (challenger) vs {b} (baseline) | training {p['train_protocol']}"
    spent = f"{b} {v['baseline']['train_flops']:.4g}, {c} {v['challenger']['train_flops']:.4g}"
    lines = [
        f"{head} | seed {p['seed']} | alpha {v['alpha']:g}",
        f"training FLOPs: {spent}",
        "",
    ]
    rows = [
        ["suite", "range", "metric", "probes", b, c, "diff", "test", "b/c", "p", "winner"]
    ]
    for cell in v["cells"]:
        disc = (
            f"{cell['baseline_only']}/{cell['challenger_only']}"
            if cell["baseline_only"] is not None
            else "-"
        )
        rows.append(
            [
                cell["suite"],
                str(cell["range"]),
                cell["metric"],
                str(cell["n_probes"]),
                f"{cell['baseline']:.3f}",
                f"{cell['challenger']:.3f}",
                f"{cell['difference']:+.3f}",
                cell["test"],
                disc,
                f"{cell['p_value']:.3g}",
                {"challenger": c, "baseline": b, "tie": "-"}[cell["winner"]],
            ]
        )
    lines += _grid(rows)
    wins = sum(s["challenger"] for s in v["summary"].values())
    losses = sum(s["baseline"] for s in v["summary"].values())
    ties = sum(s["tie"] for s in v["summary"].values())
    lines += [
        "",
        f"b/c: probes only {b} / only {c} got right (exact McNemar); p-values per cell, unadjusted",
        f"{c} wins {wins}, loses {losses}, ties {ties} of {len(v['cells'])} cells: "
        + ("beats the baseline" if v["beats_baseline"] else "does not beat the baseline"),
    ]
    return "\n".join(lines)
