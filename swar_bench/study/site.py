"""``swar-bench study site STUDY.yaml --out site/``: a study's results as static HTML pages.

The site is a function of the study's records alone, like the report (``report.py``), and every
number on it comes from the report's functions (``collect``, ``across_seeds``, ``cell_text``,
``forgetting_across_seeds``, ``best_gate``, ``summary``); nothing is computed twice.

    site/index.html                   the frontier figure, a leaderboard that sorts by any column
                                      (a click on its header), the mechanisms that did not learn
                                      at this budget, the ones still running
    site/mechanisms/<name>.html       one per mechanism: class path and init args, the
                                      learning-rate walk, the gate per seed, per-N tables with
                                      intervals per answer kind, the validation curves and per-N
                                      figures, and each run's provenance (code commit and dirty
                                      flag, torch / lightning versions, device, wall time, the
                                      exact command line)
    site/figures/*.png                the figures (matplotlib)
    site/.swar-bench-site             marks the folder as a site this command may replace

The pages are plain HTML with one small inline script of our own (the table sort) and relative
links only: they open from ``file://`` with no server and no network. The same records give the
same bytes.

The site is written whole: built in a temporary folder beside ``--out``, then swapped in by two
renames with Ctrl-C and SIGTERM held back between them; an existing ``--out`` is replaced only when
it is empty or is a site this command wrote (it holds ``.swar-bench-site``).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from swar_bench.study.commands import readout_state, state_text
from swar_bench.study.report import (
    KINDS,
    MechanismResult,
    SeedResult,
    across_seeds,
    best_gate,
    cell_text,
    collect,
    draw_curves,
    forgetting_across_seeds,
    plot_frontier,
    progress_text,
    summary,
)
from swar_bench.study.runner import Budget, mechanism_class, read_budget, run_name
from swar_bench.study.spec import StudyError, StudySpec
from swar_bench.utils.text import plural

MARKER = ".swar-bench-site"
"""The file that marks a folder as a site written by ``swar-bench study site``."""
DPI = 110


def page_path(name: str) -> str:
    """The page of mechanism ``name`` relative to the site root: ``mechanisms/<name>.html``
    (study names are letters, digits, ``_ . -``: safe as file names and in URLs)."""
    return f"mechanisms/{name}.html"


# ------------------------------------------------------------------------------ values


def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _num_text(value: Any, digits: int = 2) -> str:
    v = _finite(value)
    return "–" if v is None else f"{v:.{digits}f}"


def _int_text(value: Any) -> str:
    v = _finite(value)
    return "–" if v is None else f"{int(v):,}"


def _flops_text(value: Any) -> str:
    v = _finite(value)
    return "–" if v is None else f"{v:,.0f}"


def _lr_text(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _facts(r: MechanismResult, n: int) -> dict[str, Any]:
    """State bytes, parameters and forward FLOPs per token from a fit record of ``r`` (the same
    for every fit of a mechanism), the state at the read-out ``n`` when it grows with the tokens
    seen (``readout_state``; ``state_text`` its text); empty while no fit at the chosen rate is
    recorded."""
    fits = [s.fit for s in r.judged + r.seeds] + ([r.retry.fit] if r.retry else [])
    if not fits:
        return {}
    fit = fits[0]
    facts = {k: fit.get(k) for k in ("state_bytes", "n_params", "flops_per_token")}
    if isinstance(facts["state_bytes"], int):
        state = readout_state(r.spec, n, facts["state_bytes"])
        facts["state_bytes"], facts["state_text"] = state[0], state_text(state)
    return facts


def _cell(text: str, sort: Any) -> dict[str, Any]:
    """A table cell: its text and the number the sort uses (``""``: no value, sorted last)."""
    v = _finite(sort)
    return {"text": text, "sort": "" if v is None else repr(v)}


def _status(r: MechanismResult) -> str:
    if not r.finished:
        return "running"
    return "learned" if r.learned else "did not learn"


def leaderboard(spec: StudySpec, results: list[MechanismResult]) -> list[dict[str, Any]]:
    """One row per mechanism of the study, in the study's order: its cells (text and sort key)
    for name, status, state bytes, parameters, FLOPs per token, passkey_exact and forgetting at the
    read-out N (with their intervals, over the judged seeds), gate (seeds passed / seeds) and the
    chosen learning rate."""
    n = spec.readout_n
    rows = []
    by_name = {row["mechanism"]: row for row in summary(spec, results)["mechanisms"]}
    for r in results:
        row = by_name[r.name]
        facts = _facts(r, n)
        if r.learned:
            pk_value = across_seeds(r.judged, n, "passkey_exact")[0]
            passkey = _cell(cell_text(r.judged, n, "passkey_exact"), pk_value)
            f_mean, f_low, f_high = forgetting_across_seeds(r.judged, n)
            forget = _cell(
                f"{_num_text(f_mean)} ({_num_text(f_low)}–{_num_text(f_high)})", f_mean
            )
        else:
            passkey = forget = _cell("–", None)
        gate = (
            _cell(f"{row['seeds_passed']}/{row['seeds']}", row["seeds_passed"] / row["seeds"])
            if row["seeds"]
            else _cell("–", None)
        )
        if r.retry is not None and not row["seeds_passed"]:
            gate["text"] += f" (retry: {'passed' if r.retry.fit['gate']['passed'] else 'not passed'})"
        rows.append(
            {
                "name": r.name,
                "href": page_path(r.name),
                "status": _status(r),
                "cells": [
                    _cell(facts.get("state_text") or _int_text(facts.get("state_bytes")), facts.get("state_bytes")),
                    _cell(_int_text(facts.get("n_params")), facts.get("n_params")),
                    _cell(_flops_text(facts.get("flops_per_token")), facts.get("flops_per_token")),
                    passkey,
                    forget,
                    gate,
                    _cell(_lr_text(row["chosen_lr"]), row["chosen_lr"]),
                ],
            }
        )
    return rows


def _runs(spec: StudySpec, r: MechanismResult) -> list[dict[str, Any]]:
    """Provenance of every record of ``r`` at the chosen rate: one row per fit and test."""
    out = []
    for s in r.seeds + ([r.retry] if r.retry else []):
        name = run_name(r.spec, r.chosen, s.seed, s.retry)
        for kind, record in (("fit", s.fit), ("test", s.test)):
            if record is None:
                continue
            code = record.get("code") or {}
            env = record.get("environment") or {}
            dirty = code.get("dirty")
            out.append(
                {
                    "run": name,
                    "kind": kind,
                    "commit": code.get("commit") or "–",
                    "dirty": "–" if dirty is None else ("dirty" if dirty else "clean"),
                    "fingerprint": code.get("fingerprint") or "–",
                    "python": env.get("python") or "–",
                    "torch": env.get("torch") or "–",
                    "lightning": env.get("lightning") or "–",
                    "device": env.get("device") or "–",
                    "wall": "–" if _finite(record.get("wall_s")) is None else f"{record['wall_s']:.1f} s",
                    "command": record.get("command") or "–",
                }
            )
    return out


def _seed_rows(r: MechanismResult) -> list[dict[str, Any]]:
    rows = []
    for s in r.seeds + ([r.retry] if r.retry else []):
        gate = s.fit["gate"]
        rows.append(
            {
                "seed": f"{s.seed}{' (retry)' if s.retry else ''}",
                "score": _num_text(s.fit.get("score"), 3),
                "ar_valid": _num_text(gate.get("ar_valid")),
                "passkey_exact": _num_text(gate.get("passkey_exact")),
                "passed": "passed" if s.passed else "not passed",
                "tested": "yes" if s.test is not None else ("missing" if s.passed else "–"),
                "judged": any(s is j for j in r.judged),
            }
        )
    return rows


def _per_n(spec: StudySpec, seeds: list[SeedResult], test_n: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in test_n:
        f_mean, f_low, f_high = forgetting_across_seeds(seeds, n)
        rows.append(
            {
                "n": n,
                "readout": n == spec.readout_n,
                "cells": [cell_text(seeds, n, kind) for kind in KINDS],
                "forgetting": f"{_num_text(f_mean)} ({_num_text(f_low)}–{_num_text(f_high)})",
            }
        )
    return rows


def mechanism_context(spec: StudySpec, r: MechanismResult, budget: Budget) -> dict[str, Any]:
    """What the page of one mechanism shows (see the module docstring); ``budget`` is the one of
    its own budget config (``read_budget(spec, r.spec)``)."""
    class_path, init_args = mechanism_class(r.spec)
    facts = _facts(r, spec.readout_n)
    best = best_gate(r) if r.finished and not r.learned else None
    return {
        "name": r.name,
        "status": _status(r),
        "config": r.spec.config,
        "base": spec.base_of(r.spec),
        "learning_rate_from": r.spec.learning_rate_from,
        "progress": None if r.finished else progress_text(spec, r),
        "class_path": class_path or "–",
        "init_args": sorted((k, repr(v)) for k, v in init_args.items()),
        "study_init_args": sorted((k, repr(v)) for k, v in r.spec.init_args.items()),
        "added": r.spec.added,
        "facts": {
            "state bytes": facts.get("state_text") or _int_text(facts.get("state_bytes")),
            "parameters": _int_text(facts.get("n_params")),
            "FLOPs per token": _flops_text(facts.get("flops_per_token")),
        },
        "walk": [
            {
                "lr": _lr_text(lr),
                "score": _num_text(r.scores.get(lr), 3) if lr in r.scores else "not yet run",
                "chosen": lr == r.chosen,
                "extension": r.spec.learning_rate_from is None and lr not in spec.grid_of(r.spec),
            }
            for lr in r.grid
        ],
        "complete": r.complete,
        "at_edge": r.at_edge,
        "chosen": _lr_text(r.chosen),
        "selection_seeds": spec.selection_seeds,
        "seeds": _seed_rows(r),
        "gate_n": budget.gate_n,
        "per_n": _per_n(spec, r.judged, budget.test_n) if r.learned else [],
        "judged": len(r.judged),
        "judged_retry": bool(r.judged) and r.judged[0].retry,
        "best": None
        if best is None
        else {"ar_valid": _num_text(best[0]), "passkey_exact": _num_text(best[1]), "fits": best[2]},
        "runs": _runs(spec, r) if r.chosen is not None else [],
        "curves": f"../figures/{r.name}_curves.png" if r.seeds else None,
        "per_n_figure": f"../figures/{r.name}_per_n.png" if r.learned else None,
    }


# ------------------------------------------------------------------------------ figures


def plot_mechanism_curves(spec: StudySpec, r: MechanismResult, gate_n: int):
    """The validation curves at ``gate_n`` of every fit of ``r`` at the chosen rate, one panel
    with a legend (``report.draw_curves``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot(1, 1, 1)
    draw_curves(ax, spec, r, gate_n, label=True)
    ax.set_xlabel("step")
    ax.set_ylabel(f"validation accuracy at n{gate_n}")
    ax.set_title(
        f"{r.name} (lr {r.chosen:g}): ar_valid solid, passkey_exact dashed; dotted: the gate",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_per_n(spec: StudySpec, r: MechanismResult, test_n: list[int]):
    """Accuracy per answer kind (and the forgetting score) against the test N over the judged
    seeds of ``r``, with the report's 95% intervals (``across_seeds``: k/n, t or W)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot(1, 1, 1)
    ns = sorted(test_n)
    series = [(kind, [across_seeds(r.judged, n, kind)[:3] for n in ns]) for kind in KINDS]
    series.append(("forgetting", [forgetting_across_seeds(r.judged, n) for n in ns]))
    for i, (kind, points) in enumerate(series):
        kept = [(n, v, lo, hi) for n, (v, lo, hi) in zip(ns, points) if math.isfinite(v)]
        if not kept:
            continue
        x = [p[0] for p in kept]
        y = [p[1] for p in kept]
        lo = [p[1] - p[2] if math.isfinite(p[2]) else 0.0 for p in kept]
        hi = [p[3] - p[1] if math.isfinite(p[3]) else 0.0 for p in kept]
        ax.errorbar(
            x, y, yerr=[lo, hi], fmt="o-" if kind != "forgetting" else "s--", capsize=3,
            lw=1, color=f"C{i}", label=kind,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.axvline(spec.readout_n, color="gray", lw=0.6, ls=":")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("N (writes); dotted: the read-out N")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{r.name}: per N over {plural(len(r.judged), 'judged seed')}, 95% intervals", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _save(fig, path: Path) -> None:
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})


# ------------------------------------------------------------------------------ rendering


def _environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("swar_bench.study", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["plural"] = plural  # {{ count|plural("seed") }}: "1 seed", "2 seeds"
    return env


def render(spec: StudySpec, folder: Path) -> list[Path]:
    """Write the site's files into ``folder`` (which exists and is empty); returns them.

    Raises:
        StudyError: the study's budget config lacks a step count or an N list (``read_budget``).
        ValueError: a record is not a JSON object (``records.read_json``).
    """
    budget = read_budget(spec)
    budgets = {m.name: read_budget(spec, m) for m in spec.mechanisms}
    results = collect(spec)
    env = _environment()
    (folder / "figures").mkdir()
    (folder / "mechanisms").mkdir()
    written = []

    frontier = folder / "figures" / "frontier.png"
    _save(plot_frontier(spec, results), frontier)
    written.append(frontier)
    for r in results:
        if r.seeds:
            path = folder / "figures" / f"{r.name}_curves.png"
            _save(plot_mechanism_curves(spec, r, budgets[r.name].gate_n), path)
            written.append(path)
        if r.learned:
            path = folder / "figures" / f"{r.name}_per_n.png"
            _save(plot_per_n(spec, r, budgets[r.name].test_n), path)
            written.append(path)

    study = {
        "name": spec.name,
        "path": spec.path,
        "records": spec.records,
        "readout_n": spec.readout_n,
        "gate": spec.gate,
        "gate_n": budget.gate_n,
        "seeds": spec.seeds,
        "selection_seeds": spec.selection_seeds,
        "learning_rates": ", ".join(f"{lr:g}" for lr in spec.learning_rates),
        "retry_steps_factor": spec.retry_steps_factor,
    }
    non = []
    for r in results:
        if r.finished and not r.learned:
            ar, pk, fits = best_gate(r)
            non.append(
                {"name": r.name, "href": page_path(r.name), "ar_valid": _num_text(ar),
                 "passkey_exact": _num_text(pk), "fits": fits}
            )
    running = [
        {"name": r.name, "href": page_path(r.name), "what": progress_text(spec, r)}
        for r in results
        if not r.finished
    ]
    index = folder / "index.html"
    index.write_text(
        env.get_template("index.html").render(
            study=study, root="", rows=leaderboard(spec, results), non=non, running=running,
            frontier="figures/frontier.png",
        )
    )
    written.append(index)
    page = env.get_template("mechanism.html")
    for r in results:
        path = folder / page_path(r.name)
        path.write_text(
            page.render(study=study, root="../", m=mechanism_context(spec, r, budgets[r.name]))
        )
        written.append(path)
    return written


def site_study(out: Path) -> str | None:
    """The study whose records the site at ``out`` was written from, as its ``MARKER`` names it
    (None when the marker is missing, unreadable or names none)."""
    import re

    try:
        text = (out / MARKER).read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r"from the records of (\S+?);", text)
    return found.group(1) if found else None


def _check_out(out: Path, study: str) -> None:
    """Refuse an ``out`` that is a file, a folder of other files, or the site of another study
    (its marker names another study: a default ``--out site`` must not replace another study's
    committed site)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise StudyError(f"--out {out} is a file; expected a folder for the site")
    if (out / MARKER).is_file():
        other = site_study(out)
        if other is not None and other != study:
            raise StudyError(
                f"--out {out} holds the site of study {other!r} (its {MARKER}), not of {study!r}; expected "
                f"another folder for the site of {study!r}, e.g. --out site_{study}"
            )
        return
    if not any(out.iterdir()):
        return
    raise StudyError(
        f"--out {out} holds other files (no {MARKER}: not a site this command wrote); "
        "expected a new or empty folder, or an earlier site to replace"
    )


def write_site(spec: StudySpec, out: str | os.PathLike) -> Path:
    """Render the site of ``spec`` and put it at ``out`` whole; returns ``out/index.html``.

    Raises:
        StudyError: ``out`` is a file, a folder of other files or the site of another study (one
            line), or the study's budget config is incomplete.
        OSError: the folder beside ``out`` cannot be written.
    """
    from swar_bench.utils import interrupts
    from swar_bench.utils.files import TEMP_PREFIX, new_file_mode

    out = Path(out)
    _check_out(out, spec.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{TEMP_PREFIX}{out.name}-"))
    old = None
    try:
        render(spec, tmp)
        (tmp / MARKER).write_text(
            f"written by `swar-bench study site` from the records of {spec.name}; "
            "the next run replaces this whole folder\n"
        )
        mode = new_file_mode() | ((new_file_mode() & 0o444) >> 2)  # folders: r implies x
        for folder in (tmp, tmp / "figures", tmp / "mechanisms"):
            folder.chmod(mode)
        with interrupts.deferred():
            if out.exists():
                old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f"{TEMP_PREFIX}{out.name}-old-"))
                os.rename(out, old / "site")
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and (old / "site").exists() and not out.exists():
            os.rename(old / "site", out)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return out / "index.html"
