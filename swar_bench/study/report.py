"""``swar-bench study report``: a study's tables and figures, computed from its records alone.

What the report shows (the study protocol of ``runner.py``):

- **Learning rates**: per mechanism, the grid walked, the mean selection score of each rate over
  the selection seeds, the chosen rate, and whether that pick still sits at the grid's edge after
  the extension values ran out (a reader should then distrust the pick).
- **Gate**: per mechanism, how many seeds passed the learned-the-task gate at the chosen rate, and
  the retry with more steps when none did. A mechanism with no passing seed is listed as "did not
  learn at this budget" (its own table, its best validation values, and a separate panel of the
  frontier figure): never as a point at x = 0.
- **The frontier at the read-out N** over the passing seeds: passkey_exact (keeping) against the
  forgetting score ``min(ar_valid, ar_expired_stale)`` (docs/TASK.md), with the stale accuracy per
  age band beside it (33-64, 65-128, >128 writes idle) so the y axis is not just ``ar_valid``.
- **Intervals, and which is which**: a quantity whose per-seed values are all-or-nothing (every
  seed <= 0.1 or >= 0.9) is reported as successes out of seeds (>= 0.9) with an exact
  Clopper-Pearson interval (``k/n``); otherwise as the mean over seeds with a Student-t interval
  (``t``); a single seed gets the Wilson interval of its test examples (``W``).
- **Curves**: the validation curves at the gate N of every fit at the chosen rate, so a reader can
  see whether a run had converged or was still improving.

Everything is a pure function of the records folder: the same records give the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swar_bench.study import protocol, provenance
from swar_bench.study.commands import grown_state_lines, readout_state, state_text
from swar_bench.study.config_files import config_change
from swar_bench.study.progress import progress_text, stale_reason
from swar_bench.study.records import _nan_safe, check_accuracy_rows, read_curve, read_fit, read_json
from swar_bench.study.runner import read_budget, run_name
from swar_bench.study.spec import MechanismSpec, StudyError, StudySpec
from swar_bench.utils.intervals import clopper_pearson, seed_spread, wilson
from swar_bench.utils.text import plural

AGE_BANDS = ((33, 64), (65, 128), (129, None))
"""Stale-key age bands in writes idle (docs/TASK.md: a key is stale after ``2w = 32`` idle writes)."""
KINDS = ("passkey_exact", "ar_valid", "ar_expired_stale", "ar_expired_never")
ALL_OR_NOTHING = (0.1, 0.9)
"""A per-seed value at or below 0.1 or at or above 0.9 counts as an all-or-nothing outcome."""


@dataclass
class SeedResult:
    """One seed at the chosen rate: its fit record, whether that passes the study's gate now
    (:func:`protocol.gate_passed`), and its test record when it passed."""

    seed: int
    retry: bool
    fit: dict[str, Any]
    test: dict[str, Any] | None = None
    passed: bool = False

    def accuracy(self, n: int, kind: str) -> tuple[int, int]:
        """``(correct, count)`` of ``kind`` at ``n`` in the test record (0, 0 when absent)."""
        for row_n, row_kind, count, correct in (self.test or {}).get("accuracy", []):
            if row_n == n and row_kind == kind:
                return int(correct), int(count)
        return 0, 0

    def value(self, n: int, kind: str) -> float:
        correct, count = self.accuracy(n, kind)
        return correct / count if count else math.nan

    def stale_band(self, n: int, low: int, high: int | None) -> tuple[int, int]:
        """``(correct, count)`` of the queries whose key was idle ``low .. high`` writes at ``n``
        (every query of a key older than 2w is a stale one: its answer is NULL)."""
        correct = count = 0
        for row_n, _label, lo, hi, cnt, cor in (self.test or {}).get("accuracy_by_key_age", []):
            if row_n != n or lo < low or (high is not None and (hi < 0 or hi > high)):
                continue
            correct, count = correct + int(cor), count + int(cnt)
        return correct, count


@dataclass
class MechanismResult:
    """What the records say about one mechanism of the study."""

    spec: MechanismSpec
    grid: list[float]
    scores: dict[float, float]
    chosen: float | None
    complete: bool
    at_edge: bool
    seeds: list[SeedResult] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    retry: SeedResult | None = None
    stale: list[str] = field(default_factory=list)  # why each record of it left out was (progress.stale_reason)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def judged(self) -> list[SeedResult]:
        """The seeds judged at length: those that passed the gate and were tested (or the retry)."""
        passed = [s for s in self.seeds if s.passed and s.test is not None]
        retry = [self.retry] if self.retry is not None and self.retry.passed and self.retry.test else []
        return passed or retry

    @property
    def learned(self) -> bool:
        return bool(self.judged)

    @property
    def finished(self) -> bool:
        return self.complete and not self.missing


def _compatible(record: dict[str, Any] | None, spec: StudySpec, stale: list[str] | None = None
                ) -> dict[str, Any] | None:
    """``record`` when it is the study's (compatible code, its config files as they were:
    ``study status`` calls it done), else None; ``stale`` receives why a record was left out."""
    if record is None:
        return None
    change = config_change(record)
    if provenance.compatible(record.get("code"), spec.compatible_code, spec.code_fingerprint) and change is None:
        return record
    if stale is not None:
        stale.append(stale_reason(record, change))
    return None


def collect(spec: StudySpec) -> list[MechanismResult]:
    """Walk every mechanism's records as the runner would and return what they hold, in the
    study's order (an arm with ``learning_rate_from`` at the rate its source chose)."""
    done: dict[str, MechanismResult] = {}
    for m in sorted(spec.mechanisms, key=lambda m: m.learning_rate_from is not None):
        if m.learning_rate_from is None:
            done[m.name] = _collect_one(spec, m, list(spec.grid_of(m)), spec.extra_below, spec.extra_above)
            continue
        source = done[m.learning_rate_from]
        grid = [source.chosen] if source.complete and source.chosen is not None else []
        done[m.name] = _collect_one(spec, m, grid, (), ())
    return [done[m.name] for m in spec.mechanisms]


def _collect_one(
    spec: StudySpec, m: MechanismSpec, grid: list[float], below: Sequence[float], above: Sequence[float]
) -> MechanismResult:
    records = Path(spec.records)
    seeds = spec.seeds_of(m)
    selection = seeds[: spec.selection_seeds]
    stale: dict[str, str] = {}  # run -> why its record was left out

    def fit_of(lr: float, seed: int, retry: bool = False) -> dict[str, Any] | None:
        name, why = run_name(m, lr, seed, retry), []
        fit = _compatible(read_fit(records / f"{name}.fit.json"), spec, why)
        stale.update({f"fit {name}": w for w in why})
        return fit

    def score_of(lr: float) -> float | None:
        fits = [fit_of(lr, s) for s in selection]
        if any(f is None for f in fits):
            return None
        return protocol.mean_score([math.nan if f["score"] is None else f["score"] for f in fits])

    if not grid:  # an arm whose source has not chosen its rate yet
        return MechanismResult(m, [], {}, None, False, False)
    chosen, used, complete = protocol.choose_rate(grid, below, above, score_of)
    scores = {lr: s for lr in used if (s := score_of(lr)) is not None}
    at_edge = complete and len(used) > 1 and chosen in (used[0], used[-1])
    result = MechanismResult(m, used, scores, chosen, complete, at_edge)
    if not complete:
        result.stale = list(stale.values())
        return result
    for s in seeds:
        fit = fit_of(chosen, s)
        if fit is None:
            result.missing.append(f"fit {run_name(m, chosen, s)}")
            continue
        test, passed = None, protocol.gate_passed(spec.gate, fit)
        if passed:
            why: list[str] = []
            test = _compatible(check_accuracy_rows(read_json(p := records / f"{run_name(m, chosen, s)}.test.json"), p),
                               spec, why)
            stale.update({f"test {run_name(m, chosen, s)}": w for w in why})
            if test is None:
                result.missing.append(f"test {run_name(m, chosen, s)}")
        result.seeds.append(SeedResult(s, False, fit, test, passed))
    # the retry counts exactly when the runner owes it: every seed at the chosen rate is recorded
    # and protocol.retry_due holds over every fit it ran (the walk's selection fits and the seeds);
    # a retry record beside a seed that passed is not the protocol's, and is not read
    ran = [fit_of(lr, s) for lr in used for s in selection] + [r.fit for r in result.seeds]
    if len(result.seeds) == len(seeds) and protocol.retry_due(spec.gate, ran):
        retry_name, retry_fit = run_name(m, chosen, 0, True), fit_of(chosen, 0, True)
        if retry_fit is None:
            result.missing.append(f"fit {retry_name}")
        else:
            retry_test = _compatible(check_accuracy_rows(read_json(p := records / f"{retry_name}.test.json"), p), spec)
            result.retry = SeedResult(0, True, retry_fit, retry_test, protocol.gate_passed(spec.gate, retry_fit))
            if result.retry.passed and retry_test is None:  # a learner whose test is still to run
                result.missing.append(f"test {retry_name}")
    result.stale = list(stale.values())
    return result

# ------------------------------------------------------------------------------ cells


def _fmt(v: float, digits: int = 2) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def across_seeds(seeds: Sequence[SeedResult], n: int, kind: str) -> tuple[float, float, float, str]:
    """``(value, low, high, how)`` of ``kind`` at ``n`` over seeds (see the module docstring):
    ``how`` is ``"k/n"`` (all-or-nothing: the fraction of seeds >= 0.9, Clopper-Pearson), ``"t"``
    (mean, Student-t) or ``"W"`` (one seed, Wilson over its test examples)."""
    values = [s.value(n, kind) for s in seeds]
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan, math.nan, ""
    if len(values) == 1:
        correct, count = seeds[0].accuracy(n, kind)
        p = wilson(correct, count)
        return p.accuracy, p.low, p.high, "W"
    lo, hi = ALL_OR_NOTHING
    if all(v <= lo or v >= hi for v in values):
        p = clopper_pearson(sum(v >= hi for v in values), len(values))
        return p.accuracy, p.low, p.high, "k/n"
    spread = seed_spread(values, bounds=(0.0, 1.0))
    return spread.mean, spread.low, spread.high, "t"


def _cell(seeds: Sequence[SeedResult], n: int, kind: str) -> str:
    return cell_text(seeds, n, kind)


def cell_text(seeds: Sequence[SeedResult], n: int, kind: str) -> str:
    """``kind`` at ``n`` over ``seeds`` as the tables print it (:func:`across_seeds`):
    ``"2/3 seeds (0.09–0.99)"`` (``k/n``), ``"0.70 (0.45–0.95 t)"`` or ``"0.70 (0.61–0.78 W)"``;
    ``"–"`` when no seed observed it."""
    value, low, high, how = across_seeds(seeds, n, kind)
    if how == "":
        return "–"
    if how == "k/n":
        hits = sum(s.value(n, kind) >= ALL_OR_NOTHING[1] for s in seeds)
        return f"{hits}/{plural(len(seeds), 'seed')} ({_fmt(low)}–{_fmt(high)})"
    return f"{_fmt(value)} ({_fmt(low)}–{_fmt(high)} {how})"


def forgetting(seed: SeedResult, n: int) -> float:
    """The forgetting score ``min(ar_valid, ar_expired_stale)`` of one seed at ``n``."""
    return min(seed.value(n, "ar_valid"), seed.value(n, "ar_expired_stale"))


def forgetting_across_seeds(seeds: Sequence[SeedResult], n: int) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the per-seed forgetting score (:func:`forgetting`) at ``n``: the
    Student-t 95% interval over the seeds, collapsed to the mean where it is undefined (one seed);
    NaN when no seed observed it."""
    return _mean_t([forgetting(s, n) for s in seeds])


def best_gate(r: MechanismResult) -> tuple[float, float, int]:
    """``(best gate ar_valid, best gate passkey_exact, fits)`` over the chosen rate's fits of ``r``
    and its retry: what a mechanism that did not learn at this budget came closest to."""
    fits = [s.fit for s in r.seeds] + ([r.retry.fit] if r.retry else [])
    return (
        max((_num(f["gate"]["ar_valid"]) for f in fits), default=math.nan),
        max((_num(f["gate"]["passkey_exact"]) for f in fits), default=math.nan),
        len(fits),
    )


def _mean_t(values: Sequence[float]) -> tuple[float, float, float]:
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan, math.nan
    spread = seed_spread(values, bounds=(0.0, 1.0))
    low = spread.low if math.isfinite(spread.low) else spread.mean
    high = spread.high if math.isfinite(spread.high) else spread.mean
    return spread.mean, low, high


# ------------------------------------------------------------------------------ tables


def markdown(spec: StudySpec, results: list[MechanismResult], test_n: Sequence[int]) -> str:
    n = spec.readout_n
    gate = spec.gate
    lines = [
        f"# Study `{spec.name}`",
        "",
        f"Generated by `swar-bench study report {spec.path}` from the records in `{spec.records}`.",
        "",
        (
            f"Protocol: learning rates {', '.join(f'{lr:g}' for lr in spec.learning_rates)} (extended by "
            f"{', '.join(f'{lr:g}' for lr in spec.extra_below) or 'none'} below and "
            f"{', '.join(f'{lr:g}' for lr in spec.extra_above) or 'none'} above when a pick is at an edge), "
            f"chosen on the mean selection score of {'seed 0' if spec.selection_seeds == 1 else f'seeds 0–{spec.selection_seeds - 1}'}; {plural(spec.seeds, 'seed')} per "
            f"point unless the row says otherwise, each on its own training examples; gate: validation at "
            f"the shortest training N, ar_valid ≥ {gate.ar_valid:g} or passkey_exact ≥ {gate.passkey_exact:g}; "
            f"read-out at n{n}."
        ),
        "",
        (
            "Intervals: `k/n seeds (low–high)` = all-or-nothing per seed, seeds reaching ≥ 0.9, exact "
            "Clopper-Pearson 95%; `t` = mean over seeds, Student-t 95%; `W` = one seed, Wilson 95% over its "
            "test examples."
        ),
        "",
    ]
    unfinished = [r for r in results if not r.finished]
    for title, rows in (("## Still running", [r for r in unfinished if not r.stale]),
                        ("## Left out as stale", [r for r in unfinished if r.stale])):  # nothing runs these
        if rows:
            lines += [title, "", *(f"- {r.name}: {progress_text(spec, r)}" for r in rows), ""]

    lines += [
        "## Learning rates",
        "",
        "| mechanism | mean selection score per rate | chosen | note |",
        "|---|---|---|---|",
    ]
    for r in results:
        cells = ", ".join(
            f"{lr:g}: {_fmt(r.scores[lr], 3)}" if lr in r.scores else f"{lr:g}: …" for lr in r.grid
        )
        note = "at the edge of the extended grid" if r.at_edge else ""
        lines.append(
            f"| {r.name} | {cells} | {'' if r.chosen is None else f'{r.chosen:g}'} | {note} |"
        )
    lines.append("")

    lines += [
        "## Gate: did the run learn the task?",
        "",
        "| mechanism | seeds passed | gate ar_valid per seed | gate passkey_exact per seed | retry |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        if not r.complete:
            continue
        passed = sum(1 for s in r.seeds if s.passed)
        ar = ", ".join(_fmt(s.fit["gate"]["ar_valid"]) for s in r.seeds)
        pk = ", ".join(_fmt(s.fit["gate"]["passkey_exact"]) for s in r.seeds)
        retry = ""
        if r.retry is not None:
            retry = f"{spec.retry_steps_factor}× steps: {'passed' if r.retry.fit['gate']['passed'] else 'not passed'}"
        lines.append(f"| {r.name} | {passed}/{len(r.seeds)} | {ar} | {pk} | {retry} |")
    lines.append("")

    learned = [r for r in results if r.learned]
    lines += [
        f"## The frontier at n{n}",
        "",
        "Over the seeds that passed the gate. Forgetting = min(ar_valid, ar_expired_stale) per seed.",
        "",
        *grown_state_lines([(r.spec, r.judged[0].fit["state_bytes"]) for r in learned], n),
        "| mechanism | seeds | state bytes | params | passkey_exact | ar_valid | ar_expired_stale | forgetting |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in learned:
        fit = r.judged[0].fit
        f_mean, f_low, f_high = forgetting_across_seeds(r.judged, n)
        lines.append(
            f"| {r.name} | {len(r.judged)}{' (retry)' if r.judged[0].retry else ''} | "
            f"{state_text(readout_state(r.spec, n, fit['state_bytes']))} | "
            f"{fit['n_params']:,} | {_cell(r.judged, n, 'passkey_exact')} | {_cell(r.judged, n, 'ar_valid')} | "
            f"{_cell(r.judged, n, 'ar_expired_stale')} | {_fmt(f_mean)} ({_fmt(f_low)}–{_fmt(f_high)}) |"
        )
    lines.append("")

    lines += [
        f"## Forgetting by age at n{n}",
        "",
        (
            "Stale-query accuracy (the answer is NULL) by how many writes the key has been idle; mean over "
            "the judged seeds, all of their stale queries pooled for the count."
        ),
        "",
        "| mechanism | " + " | ".join(_band(b) for b in AGE_BANDS) + " |",
        "|---|" + "---|" * len(AGE_BANDS),
    ]
    for r in learned:
        cells = []
        for low, high in AGE_BANDS:
            pairs = [s.stale_band(n, low, high) for s in r.judged]
            total = sum(c for _, c in pairs)
            vals = [k / c for k, c in pairs if c]
            cells.append("–" if not vals else f"{_fmt(sum(vals) / len(vals))} ({plural(total, 'query', 'queries')})")
        lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    lines.append("")

    lines += [
        "## passkey_exact per N",
        "",
        "| mechanism | " + " | ".join(f"n{t}" for t in test_n) + " |",
        "|---|" + "---|" * len(test_n),
    ]
    for r in learned:
        lines.append(
            f"| {r.name} | "
            + " | ".join(_cell(r.judged, t, "passkey_exact") for t in test_n)
            + " |"
        )
    lines.append("")

    non = [r for r in results if r.finished and not r.learned]
    lines += [
        "## Did not learn at this budget",
        "",
        (
            "No seed passed the gate at the chosen rate, nor the retry. This says the run did not learn "
            "the task at this budget and these settings, not that the mechanism cannot."
        ),
        "",
        "| mechanism | best gate ar_valid | best gate passkey_exact | fits |",
        "|---|---|---|---|",
    ]
    for r in non:
        best_ar, best_pk, fits = best_gate(r)
        lines.append(f"| {r.name} | {_fmt(best_ar)} | {_fmt(best_pk)} | {fits} |")
    if not non:
        lines.append("| (none) | | | |")
    lines += [
        "",
        f"![frontier](figures/{spec.name}_frontier.png)",
        "",
        f"![curves](figures/{spec.name}_curves.png)",
        "",
    ]
    return "\n".join(lines)


def _band(band: tuple[int, int | None]) -> str:
    low, high = band
    return f"{low}–{high} idle" if high is not None else f"> {low - 1} idle"


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)


# ------------------------------------------------------------------------------ figures


def plot_frontier(spec: StudySpec, results: list[MechanismResult]):
    """Keeping (x: passkey_exact) against forgetting (y) at the read-out N, one point per learned
    mechanism with t intervals over its judged seeds; the mechanisms that did not learn at this
    budget are listed in a panel of their own (never drawn at x = 0)."""
    from matplotlib.figure import Figure

    n = spec.readout_n
    fig = Figure(figsize=(10, 6))
    grid = fig.add_gridspec(1, 2, width_ratios=(4, 1.3))
    ax, side = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    for r in (r for r in results if r.learned):
        x, x_lo, x_hi = _mean_t([s.value(n, "passkey_exact") for s in r.judged])
        y, y_lo, y_hi = forgetting_across_seeds(r.judged, n)
        ax.errorbar(
            x, y, xerr=[[x - x_lo], [x_hi - x]], yerr=[[y - y_lo], [y_hi - y]], fmt="o", capsize=3
        )
        total = len(r.seeds) if r.judged[0].retry is False else 1
        ax.annotate(
            f"{r.name} ({len(r.judged)}/{total})",
            (x, y),
            fontsize=7,
            xytext=(4, 3),
            textcoords="offset points",
        )
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"keeps: passkey_exact at n{n}")
    ax.set_ylabel(f"forgets: min(ar_valid, ar_expired_stale) at n{n}")
    ax.set_title(f"{spec.name}: mean over seeds that learned (k/n), 95% t intervals", fontsize=9)
    ax.grid(alpha=0.3)
    side.set_axis_off()
    side.set_title("did not learn\nat this budget", fontsize=9)
    non = [r.name for r in results if r.finished and not r.learned]
    for i, name in enumerate(non or ["(none)"]):
        side.text(
            0.02,
            0.95 - 0.05 * i,
            ("✕ " if non else "") + name,
            fontsize=8,
            transform=side.transAxes,
            va="top",
        )
    fig.tight_layout()
    return fig


def draw_curves(ax, spec: StudySpec, r: MechanismResult, gate_n: int, label: bool = False) -> None:
    """Draw on ``ax`` the validation curves at ``gate_n`` (x: step; y: accuracy in [0, 1]) of
    every fit of ``r`` at the chosen rate and its retry (lighter): ``ar_valid`` solid,
    ``passkey_exact`` dashed, one colour per seed, the gate's ``ar_valid`` dotted. ``label``
    names each line (for a legend)."""
    for s in r.seeds + ([r.retry] if r.retry else []):
        curve = read_curve(Path(spec.records) / s.fit["curve"])
        for kind, style in (("ar_valid", "-"), ("passkey_exact", "--")):
            pts = sorted((step, acc) for step, nw, k, acc in curve if nw == gate_n and k == kind)
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    style,
                    lw=1,
                    color=f"C{s.seed}",
                    alpha=0.6 if s.retry else 1.0,
                    label=f"seed {s.seed}{' retry' if s.retry else ''} {kind}" if label else None,
                )
    ax.axhline(spec.gate.ar_valid, color="gray", lw=0.6, ls=":")
    ax.set_ylim(-0.03, 1.03)


def plot_curves(spec: StudySpec, results: list[MechanismResult], gate_n: int):
    """The validation curves at the gate N (ar_valid solid, passkey_exact dashed) of every fit at
    the chosen rate, one panel per mechanism: did the run converge, or was it still improving?"""
    from matplotlib.figure import Figure

    shown = [r for r in results if r.seeds]
    cols = 4
    rows = max(1, math.ceil(len(shown) / cols))
    fig = Figure(figsize=(3.2 * cols, 2.4 * rows))
    for i, r in enumerate(shown):
        ax = fig.add_subplot(rows, cols, i + 1)
        draw_curves(ax, spec, r, gate_n)
        ax.set_title(f"{r.name} (lr {r.chosen:g})", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle(
        f"{spec.name}: validation at n{gate_n} per seed (colour); ar_valid solid, passkey_exact dashed; "
        "dotted: the gate",
        fontsize=8,
    )
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------ entry point


def summary(spec: StudySpec, results: list[MechanismResult]) -> dict[str, Any]:
    """A machine-readable summary of the report (for pages and other tools)."""
    n = spec.readout_n
    rows = []
    for r in results:
        row: dict[str, Any] = {
            "mechanism": r.name,
            "chosen_lr": r.chosen,
            "grid": r.grid,
            "finished": r.finished,
            "learned": r.learned,
            "seeds_passed": sum(1 for s in r.seeds if s.passed),
            "seeds": len(r.seeds),
        }
        if r.learned:
            row["readout"] = {
                kind: dict(zip(("value", "low", "high", "how"), across_seeds(r.judged, n, kind)))
                for kind in KINDS
            }
            row["state_bytes"], tokens = readout_state(r.spec, n, r.judged[0].fit["state_bytes"])
            if tokens is not None:  # a state that grows with the tokens seen: taken at T tokens
                row["state_tokens"] = tokens
            row["n_params"] = r.judged[0].fit["n_params"]
        rows.append(row)
    return {"study": spec.name, "readout_n": n, "mechanisms": rows}


def write_report(spec: StudySpec, out: Path) -> list[Path]:
    """Write ``<out>/<study>.md``, ``<out>/<study>.json`` and the two figures under
    ``<out>/figures/``, all or none (``swar_bench.study.paths.write_whole``); returns the paths
    written.

    Raises:
        StudyError: the budget config is incomplete, or a destination cannot take its file (one
            line naming it and what was expected; nothing written).
        OSError: the file system refused a write the checks let through (nothing written)."""
    import io

    from swar_bench.study.paths import write_whole
    from swar_bench.study.records import record_problem

    budget = read_budget(spec)
    test_n, gate_n = budget.test_n, budget.gate_n
    results = collect(spec)
    contents: dict[str, bytes] = {
        f"{spec.name}.md": markdown(spec, results, test_n).encode(),
        f"{spec.name}.json": (json.dumps(_nan_safe(summary(spec, results)), indent=1, sort_keys=True) + "\n").encode(),
    }
    for fig, rel in (
        (plot_frontier(spec, results), f"figures/{spec.name}_frontier.png"),
        (plot_curves(spec, results, gate_n), f"figures/{spec.name}_curves.png"),
    ):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        contents[rel] = buffer.getvalue()
    for rel in contents:  # the default --out is the records folder: never over a record
        problem = record_problem(Path(out) / rel, "the report")
        if problem is not None:
            raise StudyError(problem)
    return write_whole(out, contents, "the report's tables and figures")
