"""What an MQAR study has done (``swar-bench study status``) and its report (``study report``):
one line per run, and ``<name>.md`` (our score beside the published value per entry) with
``<name>_recall_vs_state.png`` (``swar_bench.study.mqar`` defines the study and runs it)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from swar_bench.study.config_files import config_change
from swar_bench.study.mqar import (
    Entry,
    MQARStudy,
    entry_facts,
    lr_text,
    recipe_epochs,
    run_name,
    solved_by,
)
from swar_bench.study.records import read_fit
from swar_bench.utils.text import plural


def epochs_allowed(e: Entry) -> str:
    """``64`` (the recipe's epochs), or ``16 (budget; recipe 64)`` for an entry with ``max_epochs``."""
    recipe = recipe_epochs(e)
    recipe_text = "-" if recipe is None else str(recipe)
    return recipe_text if e.max_epochs is None else f"{e.max_epochs} (budget; recipe {recipe_text})"


def status_lines(study: MQARStudy) -> list[str]:
    """One line per run: ``done <acc>``, ``stale`` (a record whose config file has changed since,
    ``swar_bench.study.config_files``), ``skipped`` (no record, its entry solved at another rate:
    ``solved_at``), ``running`` (its fit's process is alive: ``<out>/<name>.running``, as a
    frontier study's), ``started`` (a run folder without a record), or ``to do``; then the summary line of every study's status (``study: 2 done, 1 started, 37 to do
    (40 runs planned now)``, ``swar_bench.study.status.summary_line``)."""
    from swar_bench.study.status import is_running, summary_line

    lines, states = [], []
    for e in study.entries:
        solver = solved_by(study, e)
        for lr in study.rates(e):
            name = run_name(e, lr)
            record = read_fit(Path(study.records) / f"{name}.fit.json")
            if record is not None and (change := config_change(record)) is not None:
                lines.append(f"{name}: stale ({change}; run --rerun-stale to run it again)")
                states.append("stale")
            elif record is not None:
                budget = " (the entry's budget)" if record["epochs"] == e.max_epochs else ""
                lines.append(f"{name}: done, accuracy {record['accuracy']:.4f} after {plural(record['epochs'], 'epoch')}{budget}")
                states.append("done")
            elif solver is not None:
                lines.append(f"{name}: skipped ({e.name} is solved: accuracy {solver['accuracy']:.4f} at lr "
                             f"{lr_text(solver['lr'])})")
                states.append("skipped")
            elif is_running(Path(study.out), name):
                lines.append(f"{name}: running")
                states.append("running")
            elif (Path(study.out) / name).is_dir():
                lines.append(f"{name}: started (run folder present, no record)")
                states.append("started")
            else:
                lines.append(f"{name}: to do")
                states.append("to do")
    return [*lines, summary_line(states, "now")]  # the line of every study (docs/STUDY.md)


def scores(study: MQARStudy) -> list[dict[str, Any]]:
    """Per entry: the best final accuracy over its recorded rates (``score``, ``lr``), the rates
    done, and the entry's facts and published value."""
    out = []
    for e in study.entries:
        records = [r for lr in study.rates(e)
                   if (r := read_fit(Path(study.records) / f"{run_name(e, lr)}.fit.json")) is not None]
        best = max(records, key=lambda r: r["accuracy"] if r["accuracy"] is not None and math.isfinite(r["accuracy"]) else -1.0,
                   default=None)
        out.append({
            "entry": e, "records": records, "best": best, "rates": len(study.rates(e)),
            "solved": solved_by(study, e) is not None,
            "score": best["accuracy"] if best else math.nan,
            "facts": ({k: best[k] for k in ("seq_len", "state_bytes", "mechanism")} if best else entry_facts(e)),
        })
    return out


def unsolved_lines(study: MQARStudy, rows: list[dict[str, Any]]) -> list[str]:
    """The paragraph after the table naming each entry that ran every rate of its grid without
    reaching the early stop (``solved_at``): not solved at this budget (its best, the epochs it had,
    and whether its best rate is the top or bottom of the grid, where a rate beyond it was not
    tried). Empty when there is none or the study has no early stop."""
    if study.solved_at is None:
        return []
    said = []
    for r in rows:
        e, best = r["entry"], r["best"]
        if best is None or r["solved"] or len(r["records"]) < r["rates"]:
            continue
        grid = study.rates(e)
        edge = ""
        if len(grid) > 1 and best["lr"] in (max(grid), min(grid)):
            side = "largest" if best["lr"] == max(grid) else "smallest"
            edge = f"; its best rate {lr_text(best['lr'])} is the {side} of its grid (a rate beyond it was not run)"
        said.append(f"{e.name} reached {r['score']:.3f} (best of {plural(len(grid), 'rate')}, "
                    f"{best['epochs']} epochs of {epochs_allowed(e)}){edge}")
    if not said:
        return []
    return ["", (f"Not solved at this budget (every rate run, none reached {study.solved_at:g}): " + "; ".join(said)
                 + ". That is what the run reached with these rates and epochs, not a claim that the mechanism cannot "
                   "solve the task.")]


def write_mqar_report(study: MQARStudy, out: Path) -> list[Path]:
    """``<name>.md`` (our score beside the published value per entry) and ``<name>_recall_vs_state.png``
    (accuracy against state bytes per sequence, log scale; one point per entry with records)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from swar_bench.utils.files import atomic_path, atomic_write_text

    rows = scores(study)
    n = len(study.learning_rates)
    skip = ("" if study.solved_at is None else
            f" An entry whose run reached {study.solved_at:g} skips its other rates (marked solved): its best "
            f"over all of them is within {1 - study.solved_at:.2g} of its score.")
    lines = [
        f"# MQAR: {study.name}", "",
        ("Score: the best final test accuracy over the learning rates run so far (Zoology's protocol: best "
         f"of {n}, one seed, early stop above 0.99). Published: read off the paper's figure.{skip}"), "",
        ("| entry | mechanism | T | d_model | state bytes / seq | rates done | best lr | epochs run / allowed | accuracy "
         "| published | mixer there |"),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        e, f, best = r["entry"], r["facts"], r["best"]
        pub = e.published
        lines.append(
            f"| {e.name} | {f['mechanism']} | {f['seq_len']} | {e.d_model} | {f['state_bytes']:,} | "
            f"{len(r['records'])}/{r['rates']}{' (solved)' if r['solved'] else ''} | {lr_text(best['lr']) if best else '-'} | "
            f"{best['epochs']} / {epochs_allowed(e)} | {r['score']:.3f} | {f'{pub.accuracy:.2f}' if pub else '-'} | {pub.mixer if pub else '-'} |"
            if best else
            f"| {e.name} | {f['mechanism']} | {f['seq_len']} | {e.d_model} | {f['state_bytes']:,} | 0/{r['rates']} | - | "
            f"- / {epochs_allowed(e)} | - | "
            f"{f'{pub.accuracy:.2f}' if pub else '-'} | {pub.mixer if pub else '-'} |"
        )
    lines += unsolved_lines(study, rows)
    if any(e.max_epochs is not None for e in study.entries):
        lines += ["", ("Epochs: a budget below the recipe's (`max_epochs` of the entry, marked \"budget\") stops a run "
                       "after that many epochs; the learning-rate schedule is the recipe's, so the run is the first epochs "
                       "of the recipe's run, and an accuracy below the early stop's is what it reached in that many "
                       "epochs, not what the mechanism cannot reach.")]
    out.mkdir(parents=True, exist_ok=True)
    md = atomic_write_text(out / f"{study.name}.md", "\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        if r["best"] is None:
            continue
        f = r["facts"]
        ax.scatter(f["state_bytes"], r["score"], label=f"{f['mechanism']} d{r['entry'].d_model} T{f['seq_len']}")
    ax.set_xscale("log")
    ax.set_xlabel("state bytes per sequence (float32, after T tokens)")
    ax.set_ylabel("MQAR accuracy (best over rates)")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{study.name}: recall vs state")
    if ax.collections:
        ax.legend(fontsize=7)
    png = out / f"{study.name}_recall_vs_state.png"
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [Path(md), png]
