"""The equal-budget comparison behind docs/RESULTS.md, run with the product's own commands.

For every mechanism and learning rate it runs
``swar-bench fit --config configs/results.yaml --config configs/mechanisms/<m>.yaml --model.lr=<lr>``,
picks the learning rate with the best final validation score (mean of ar_valid, ar_expired and
passkey accuracy over the validation N of the config: the test split is never used to choose),
runs ``swar-bench test`` on that checkpoint (N = 32 .. 4096) and writes the tables and one figure
per answer kind (accuracy vs N, one line per mechanism) into ``docs/results_tables.md`` and
``docs/figures/results_<kind>.png`` (docs/RESULTS.md reads them).

    python scripts/results.py                       # the whole sweep (about an hour on 2 CPU cores)
    python scripts/results.py --mechanisms GRU --lrs 3e-3 --steps 50 --out runs/smoke --docs runs/smoke \
        --records runs/smoke/records
    python scripts/results.py --config configs/results_passkey.yaml --tag passkey --out runs/results_passkey \
        --mechanisms ScalarDecayLinearAttention_learned,GatedDeltaNet,Mamba2,DeltaNet --lrs 1e-3,3e-3

``--config`` swaps the shared budget config; ``--tag T`` writes ``docs/results_T_tables.md`` and
``docs/figures/results_T_<kind>.png`` instead, so a follow-up sweep does not overwrite the main one.

Every test accuracy is reported with its count and 95% Wilson interval (answer tokens; sequences
for passkey_exact), ``*`` marking cells of fewer than 30 items. ``--seeds 0,1,2`` trains every
learning rate on the first seed, picks the rate by that seed's validation score, trains the other
seeds at the chosen rate only (``--seed_everything`` and ``--data.seed``; runs ``<name>_seed<s>``),
tests every seed's checkpoint, and reports per cell the mean across seeds with its min-max and 95%
t interval; the figures draw the mean with the t interval as a band. ``--jobs`` mechanisms run at
once, each mechanism's runs in that order, and the reports are rewritten as each mechanism
finishes. Every finished fit and test leaves a record in ``--records`` (default ``results/<tag>``:
command lines, validation score, training tokens, test accuracy); ``--resume`` reuses a fit
whose record holds the same fit and validate command lines, or else whose run folder holds its
last.ckpt, its validation logs and the same fit command, and a test likewise (its record, or its
run folder's CSV, with the same test command), so a sweep whose records are committed goes on
where it stopped on any machine, without the run folders (a test whose fit exists only as a record
trains it again). The test N (``--test-configs``) is in the test command only: changing it reruns
the tests, not the fits.

The defaults write into the committed ``docs/`` and ``results/<tag>`` (``--docs``,
``--records``): a trial run, one with any setting that changes the config's protocol (``--steps``,
``--eval-examples``, ``--test-configs``), is refused unless both name folders outside them
(resolved: ``--docs docs`` or ``--records results/x`` is refused too). An empty folder option is
refused; ``--steps`` and ``--eval-examples`` with ``--frontier-only``, which runs nothing, too. A record ``--resume``
cannot use (empty, not JSON, or a field of the wrong type) is named in one warning line and its
run is done again.

Ctrl-C or SIGTERM (or a run that exits 130 / 143) stops the sweep at once: no run starts after it,
the running ones get the signal, no table, figure or results.json is written from then on, the
records of the runs finished so far stay, and the script exits 130 / 143 with one line saying that
``--resume`` continues.

``--frontier`` also writes the decay frontier at N = 4x the longest training N of the config:
``docs/<prefix>_frontier.md`` (a table) and ``docs/figures/<prefix>_frontier.png``, one point per
mechanism, x = passkey_exact, y = the forgetting score min(ar_valid, ar_expired_stale), with error
bars across seeds (a Wilson interval with one seed). ``--frontier-only`` runs nothing and writes
them from the ``<out>/results.json`` of a finished sweep; into the committed ``docs/`` only when
that results.json says it was written by a sweep of the same ``--config`` without trial settings
(every results.json records its config and trial settings), else ``--docs`` must name another folder. ``--mechanisms frontier`` names every
mechanism of the frontier (the fixed decays 0.5 ... 1.0 and the learned one of
ScalarDecayLinearAttention, and the data-dependent baselines):

    python scripts/results.py --config configs/results_frontier.yaml --tag frontier --out runs/results_frontier \
        --mechanisms frontier --lrs 1e-3,3e-3 --seeds 0,1,2 --frontier --resume

Exit code 0 when every run finished and was reported, 1 otherwise; 2 for a bad option (one line,
before any run); 130 on Ctrl-C, 143 on SIGTERM.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: import this checkout's swar_bench

from swar_bench import interrupts
from swar_bench.argparsing import ArgumentParser
from swar_bench.intervals import (
    FEW_NOTE,
    MISSING,
    format_accuracy,
    format_spread,
    seed_spread,
    wilson,
)
from swar_bench.io import atomic_write, atomic_write_text

CONFIG = "configs/results.yaml"
FIXED_DECAYS = ("0.5", "0.9", "0.97", "0.99", "0.999", "1.0")
"""The fixed decays of ScalarDecayLinearAttention on the frontier (1.0 = no decay), one config each."""
MECHANISM_CONFIGS = {
    "ScalarDecayLinearAttention": "configs/mechanisms/scalar_decay_linear_attention.yaml",
    "ScalarDecayLinearAttention_learned": "configs/mechanisms/scalar_decay_linear_attention_learned.yaml",
    "MultiScaleRetention": "configs/mechanisms/multi_scale_retention.yaml",
    "DeltaNet": "configs/mechanisms/delta_net.yaml",
    "GatedDeltaNet": "configs/mechanisms/gated_delta_net.yaml",
    "Mamba2": "configs/mechanisms/mamba2.yaml",
    "SlidingWindowAttention": "configs/mechanisms/sliding_window_attention.yaml",
    "GRU": "configs/mechanisms/gru.yaml",
    **{f"ScalarDecayLinearAttention_decay{d}": f"configs/mechanisms/scalar_decay_linear_attention_decay{d}.yaml"
       for d in FIXED_DECAYS},
    "GatedLinearAttention": "configs/mechanisms/gated_linear_attention.yaml",
    "HGRN2": "configs/mechanisms/hgrn2.yaml",
    "KimiDeltaAttention": "configs/mechanisms/kimi_delta_attention.yaml",
    "GatedDeltaProduct": "configs/mechanisms/gated_delta_product.yaml",
    "Mamba": "configs/mechanisms/mamba.yaml",
    "RWKV7": "configs/mechanisms/rwkv7.yaml",
    "mLSTM": "configs/mechanisms/mlstm.yaml",
    "Based": "configs/mechanisms/based.yaml",
    "LogLinearAttention": "configs/mechanisms/log_linear_attention.yaml",
    "LSTM": "configs/mechanisms/lstm.yaml",
}
DEFAULT = ("ScalarDecayLinearAttention", "MultiScaleRetention", "DeltaNet", "GatedDeltaNet", "Mamba2",
           "SlidingWindowAttention", "GRU")  # the seven of docs/RESULTS.md's first sweep
FRONTIER = (  # ``--mechanisms frontier``: every point of the decay frontier (docs/RESULTS.md)
    *(f"ScalarDecayLinearAttention_decay{d}" for d in FIXED_DECAYS), "ScalarDecayLinearAttention_learned",
    "GatedDeltaNet", "DeltaNet", "Mamba2", "GatedLinearAttention", "RWKV7", "KimiDeltaAttention", "mLSTM",
    "HGRN2", "GatedDeltaProduct", "Mamba", "MultiScaleRetention", "GRU",
)
SCORE_KINDS = ("ar_valid", "ar_expired", "passkey")
REPORT_KINDS = ("ar_valid", "ar_expired_stale", "ar_expired_never", "passkey_exact")
UNIT = (0.0, 1.0)  # accuracies and the forgetting score: their t intervals across seeds are clipped to it


def run_name(mechanism: str, lr: float, seed: int | None = None) -> str:
    """``GRU_lr0.003``, or ``GRU_lr0.003_seed1`` for one seed of a ``--seeds`` sweep."""
    return f"{mechanism}_lr{lr:g}" + ("" if seed is None else f"_seed{seed}")


def seed_args(seed: int | None) -> list[str]:
    """The fit/test overrides of one seed: model initialisation and training-stream order."""
    return [] if seed is None else [f"--seed_everything={seed}", f"--data.seed={seed}"]


def parse_seeds(text: str | None) -> list[int | None]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; None -> ``[None]`` (one run with the config's seed).

    Raises:
        ValueError: not integers >= 0, or one seed twice (one line naming the value).
    """
    if text is None:
        return [None]
    try:
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or any(s < 0 for s in seeds):
        raise ValueError(f"--seeds={text!r} is invalid; expected distinct integers >= 0, e.g. 0,1,2")
    check_list("--seeds", text, seeds)
    return seeds


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it, both resolved (symbolic links, ``..``)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_list(flag: str, text: str, values: list) -> None:
    """Refuse a comma-separated option that names nothing or one value twice (``1e-3,0.001`` too).

    Raises:
        ValueError: one line naming the option, its value and what was expected.
    """
    if not values:
        raise ValueError(f"{flag}={text!r} names nothing; expected a comma-separated list")
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise ValueError(f"{flag}={text!r} names {twice!r} twice; expected distinct values")


def load_config(path: Path, shown_as: str) -> dict:
    """The shared config at ``path`` (``--config=shown_as``), checked for what the sweep reads:
    ``data.train_configs``, ``data.val_configs`` and ``data.test_configs``, each a list of integers >= 1.

    Raises:
        ValueError: not readable YAML, not a mapping, or a list missing or malformed; one line.
    """
    import yaml

    expected = "expected a YAML mapping with a data: section holding train_configs, val_configs and test_configs"
    try:
        cfg = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"--config={shown_as}: cannot be read ({err.__class__.__name__}); {expected}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"--config={shown_as}: not valid YAML{where}; {expected}") from None
    problem = ("is empty" if cfg is None else f"holds a {type(cfg).__name__}, not a mapping"
               if not isinstance(cfg, dict) else "has no data: section" if not isinstance(cfg.get("data"), dict)
               else None)
    if problem is not None:  # a user's file, not a caller's type error: the ValueError every bad option raises
        raise ValueError(f"--config={shown_as}: {problem}; {expected}")
    for key in ("train_configs", "val_configs", "test_configs"):
        value = cfg["data"].get(key)
        if not (isinstance(value, list) and value and all(_is_count(n) and n >= 1 for n in value)):
            raise ValueError(f"--config={shown_as}: data.{key} is {json.dumps(value)}; expected a list of "
                             "integers >= 1 (N values)")
    return cfg


def base_args(mechanism: str, out: Path, name: str, steps: int | None, config: str = CONFIG) -> list[str]:
    args = [
        "--config", config, "--config", MECHANISM_CONFIGS[mechanism],
        f"--trainer.logger.init_args.save_dir={out}", f"--trainer.logger.init_args.name={name}",
        f"--checkpoint.dirpath={out / name / 'checkpoints'}",
    ]
    if steps is not None:
        args += [f"--trainer.max_steps={steps}", f"--model.max_steps={steps}", f"--trainer.val_check_interval={steps}"]
    return args


SWAR_BENCH = [sys.executable, "-m", "swar_bench.cli"]
"""The program each run executes (``swar-bench`` of this checkout)."""
STOP_STATUS = {signal.SIGINT: 128 + signal.SIGINT, signal.SIGTERM: 128 + signal.SIGTERM}
"""Exit status of a process stopped by Ctrl-C (130) or SIGTERM (143), as every swar-bench command exits."""
STOP_GRACE_S = 60
"""Seconds a run may take to stop after it was signalled before it is killed."""


class Interrupted(Exception):
    """The sweep was stopped: Ctrl-C / SIGTERM here, or a run that exited 130 / 143.

    ``status`` is the exit code the script returns (130 or 143)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


_children: set[subprocess.Popen] = set()  # the swar-bench processes running now
_children_lock = threading.Lock()
_halted: list[int] = []  # the exit status of the stop, once the sweep is stopped
_signalled: set[subprocess.Popen] = set()  # the runs already sent the stop signal (each gets it once)


def halted() -> int | None:
    """The exit status (130 / 143) once the sweep is stopped (:func:`halt`, or a signal recorded by
    ``swar_bench.interrupts``), else None."""
    if _halted:
        return _halted[0]
    stop = interrupts.stopped()
    return None if stop is None else 128 + (signal.SIGTERM if stop is interrupts.Terminated else signal.SIGINT)


def halt(status: int) -> list[subprocess.Popen]:
    """Stop the sweep with exit ``status``: no run starts from now on, and every running one gets
    the signal of ``status`` (SIGINT for 130, SIGTERM for 143; once). Returns the runs signalled."""
    with _children_lock:
        if not _halted:
            _halted.append(status)
        # a run that exits 143 after the stop calls halt() again: the others were signalled already
        running = [proc for proc in _children if proc not in _signalled]
        _signalled.update(running)
    signum = signal.SIGTERM if status == STOP_STATUS[signal.SIGTERM] else signal.SIGINT
    for proc in running:
        try:
            proc.send_signal(signum)
        except ProcessLookupError:  # it ended meanwhile
            pass
    return running


def stop_runs(status: int) -> None:
    """:func:`halt`, then wait for every running run to end (``STOP_GRACE_S`` each, then killed),
    also those a run's own stop signalled before."""
    halt(status)
    with _children_lock:
        running = list(_children)
    for proc in running:
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def swar_bench(args: list[str], log: Path, threads: int) -> tuple[int, str]:
    """Run ``swar-bench ARGS`` in a subprocess with ``threads`` torch threads; output to ``log``.

    Raises:
        Interrupted: the sweep is stopped (nothing is started), or the run exited 130 / 143
            (it was stopped by Ctrl-C / SIGTERM: the whole sweep stops).
    """
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as handle:
        with _children_lock:  # no run starts once halt() has taken its list of running ones
            status = halted()
            if status is not None:
                raise Interrupted(status)
            proc = subprocess.Popen([*SWAR_BENCH, *args], cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env=env)
            _children.add(proc)
        try:
            rc = proc.wait()
        finally:
            with _children_lock:
                _children.discard(proc)
    if rc in STOP_STATUS.values() or -rc in STOP_STATUS:  # stopped, not failed: never a result
        halt(rc if rc > 0 else STOP_STATUS[-rc])
        raise Interrupted(halted())
    return rc, command_line(args)


def command_line(args: list[str]) -> str:
    """The command of ``args`` as the records store it, and ``--resume`` compares it:
    ``swar-bench`` and the arguments joined by spaces (unquoted; :func:`shown` quotes it)."""
    return "swar-bench " + " ".join(args)


def shown(args: list[str]) -> str:
    """The command of ``args`` as the tables print it, quoted so that it pastes into a shell as it
    ran (``'--data.test_configs=[32,64]'``: a file named ``3`` would otherwise match the glob)."""
    return shlex.join(["swar-bench", *args])


def _is_number(value: object) -> bool:
    """A JSON number (NaN included: an unmeasured score or cell), not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    """A JSON integer >= 0, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _record_problem(record: object, test: bool) -> str | None:
    """Why ``record`` cannot be used as a fit record (``{"fit", "validate": str, "score": number,
    "tokens": integer >= 0}``) or, ``test``, a test record (``{"test": str, "accuracy": [[n, kind,
    accuracy, count, correct], ...]}`` with integers n >= 1 and 0 <= correct <= count, kind a str,
    accuracy a number); None when it can."""
    if not isinstance(record, dict):
        return f"holds {type(record).__name__}; expected a JSON object"
    fields = {"test": str, "accuracy": list} if test else {"fit": str, "validate": str, "score": "number",
                                                            "tokens": "count"}
    for key, kind in fields.items():
        value = record.get(key)
        ok = {"number": _is_number, "count": _is_count}[kind](value) if isinstance(kind, str) else isinstance(value, kind)
        if not ok:
            what = {"number": "a number", "count": "an integer >= 0", str: "a string", list: "a list"}[kind]
            return f"{key!r} is {json.dumps(value)}; expected {what}"
    for row in record.get("accuracy", []) if test else []:
        if not (isinstance(row, list) and len(row) == 5 and _is_count(row[0]) and row[0] >= 1
                and isinstance(row[1], str) and _is_number(row[2]) and _is_count(row[3])
                and _is_count(row[4]) and row[4] <= row[3]):
            return (f"'accuracy' row {json.dumps(row)}; expected [n, kind, accuracy, count, correct] with "
                    "integers n >= 1 and 0 <= correct <= count")
    return None


def read_record(path: Path) -> dict | None:
    """One run's record (``results/<tag>/<run>.json``, or ``<run>.test.json`` for a test), or None
    when there is none.

    Raises:
        ValueError: the file is there but cannot be used (empty, not JSON, or a field of the wrong
            type or shape: :func:`_record_problem`); one line naming the file and why.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot be read ({err.__class__.__name__}); expected a JSON record") from None
    try:
        record = json.loads(text)
    except ValueError as err:
        why = "is empty" if not text.strip() else f"is not JSON ({err})"
        raise ValueError(f"{path}: {why}; expected a JSON record") from None
    problem = _record_problem(record, test=path.name.endswith(".test.json"))
    if problem is not None:
        raise ValueError(f"{path}: {problem}")
    return record


def write_record(path: Path, record: dict) -> None:
    """Write one run's record atomically (sorted keys: a rerun that changes nothing changes no byte)."""
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")


def last_scalars(log_dir: Path) -> dict[str, float]:
    """The last value of every scalar in the TensorBoard event files under ``log_dir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    values: dict[str, tuple[int, float]] = {}
    for events in sorted(log_dir.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            last = acc.Scalars(tag)[-1]
            if tag not in values or last.step >= values[tag][0]:
                values[tag] = (last.step, last.value)
    return {k: v for k, (_, v) in values.items()}


def validation_score(scalars: dict[str, float], val_n: list[int]) -> float:
    keys = [f"val/acc/{k}/n{n}" for k in SCORE_KINDS for n in val_n]
    found = [scalars[k] for k in keys if k in scalars]
    return sum(found) / len(found) if len(found) == len(keys) else float("nan")


def mechanism_facts(mechanism: str) -> dict[str, float]:
    """Params and state bytes per sequence (float32) of the configured mechanism."""
    import yaml

    from swar_bench import mechanisms

    spec = yaml.safe_load((ROOT / MECHANISM_CONFIGS[mechanism]).read_text())["model"]["mechanism"]
    mech = getattr(mechanisms, spec["class_path"].rsplit(".", 1)[1])(**spec.get("init_args", {}))
    return {"n_params": int(mech.n_params), "state_bytes": int(mech.state_bytes(1))}


def read_accuracy(csv_path: Path) -> dict[tuple[int, str], tuple[float, int, int]]:
    """``(n_writes, answer_type) -> (accuracy, count, correct)`` from ``answer_type_accuracy.csv``."""
    out = {}
    with open(csv_path) as handle:
        for row in csv.DictReader(handle):
            accuracy = float("nan") if row["accuracy"] == MISSING else float(row["accuracy"])  # count 0
            out[(int(row["n_writes"]), row["answer_type"])] = (accuracy, int(row["count"]), int(row["correct"]))
    return out


def seed_values(r: dict, n: int, kind: str) -> list[float]:
    """The accuracy of one cell in every seed of ``r`` (NaN where a seed did not observe it)."""
    values = []
    for per_seed in r["seeds"].values():
        acc, count, _ = per_seed["accuracy"].get((n, kind), (math.nan, 0, 0))
        values.append(acc if count else math.nan)
    return values


def cell_text(r: dict, n: int, kind: str) -> str:
    """One seed: ``accuracy [Wilson interval] (items)``; several: mean (min–max; t interval; seeds)."""
    if len(r["seeds"]) == 1:
        (per_seed,) = r["seeds"].values()
        _, count, correct = per_seed["accuracy"].get((n, kind), (math.nan, 0, 0))
        return format_accuracy(correct, count)
    return format_spread(seed_spread(seed_values(r, n, kind), bounds=UNIT))


def band(r: dict, n: int, kind: str) -> tuple[float, float, float]:
    """``(centre, low, high)`` the figures draw: one seed, the accuracy and its Wilson interval;
    several, the mean and its 95% t interval across seeds (NaN where undefined)."""
    if len(r["seeds"]) == 1:
        (per_seed,) = r["seeds"].values()
        _, count, correct = per_seed["accuracy"].get((n, kind), (math.nan, 0, 0))
        p = wilson(correct, count)
        return p.accuracy, p.low, p.high
    spread = seed_spread(seed_values(r, n, kind), bounds=UNIT)
    return spread.mean, spread.low, spread.high


def training_tokens(ckpt: Path) -> int:
    from swar_bench.checkpoint_io import load_checkpoint

    state = load_checkpoint(ckpt)
    return int(state.get("tokens_seen", 0))


def line_styles(mechanisms: list[str], plt) -> dict[str, tuple[object, str, str]]:
    """``{mechanism: (colour, marker, line style)}``, one distinct style per mechanism: the
    ScalarDecayLinearAttention variants (fixed decays, learned) dashed with square markers in shades
    of one colour map, from short memory to long; every other mechanism solid with circles in its
    own colour of tab20 (20 colours; beyond 20 they repeat with another marker)."""
    scalar = [m for m in mechanisms if m.startswith("ScalarDecayLinearAttention")]
    others = [m for m in mechanisms if m not in scalar]
    shades = plt.get_cmap("viridis")
    styles = {m: (shades(0.9 * i / max(len(scalar) - 1, 1)), "s", "--") for i, m in enumerate(scalar)}
    palette = plt.get_cmap("tab20")
    for i, m in enumerate(others):
        styles[m] = (palette(i % palette.N), "o" if i < palette.N else "^", "-")
    return styles


def plot(results: dict, test_n: list[int], docs: Path, prefix: str = "results") -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = line_styles(list(results), plt)
    paths = []
    for kind in REPORT_KINDS:
        fig, ax = plt.subplots(figsize=(6, 4) if len(results) <= 7 else (9, 4.5))
        for mech, r in results.items():
            centre, low, high = zip(*(band(r, n, kind) for n in test_n))
            colour, marker, ls = styles[mech]
            ax.plot(test_n, centre, marker=marker, ls=ls, color=colour, markersize=4, label=mech)
            shown = [i for i, (lo, hi) in enumerate(zip(low, high)) if math.isfinite(lo) and math.isfinite(hi)]
            if shown:  # an all-NaN band would break the log-scaled axis
                ax.fill_between([test_n[i] for i in shown], [low[i] for i in shown], [high[i] for i in shown],
                                color=colour, alpha=0.2 if len(results) <= 7 else 0.1, linewidth=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(test_n, [str(n) for n in test_n])
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("N (writes)")
        ax.set_ylabel(f"{kind} accuracy")
        ax.set_title(f"passkey_swar test: {kind}")
        ax.grid(alpha=0.3)
        if len(results) <= 7:
            ax.legend(fontsize=7, loc="lower left")
        else:  # many lines: the legend beside the axes, where it hides no data
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        path = docs / "figures" / f"{prefix}_{kind}.png"
        try:
            atomic_write(path, lambda handle, fig=fig: fig.savefig(handle, format="png", dpi=110), binary=True)
        finally:
            plt.close(fig)
        paths.append(path)
    return paths


def token_cells(r: dict) -> tuple[str, str]:
    """The runs table's training tokens and FLOPs (6 x params x tokens) of one mechanism: one number
    when every seed trained on as many tokens, else ``min–max`` over the seeds (each seed's stream
    of generated examples has its own lengths)."""
    tokens = sorted({int(v["tokens"]) for v in r.get("seeds", {}).values() if "tokens" in v} or {int(r["tokens"])})
    lo, hi = tokens[0], tokens[-1]
    flop = lambda t: f"{6 * r['n_params'] * t:.3g}"
    flops = flop(lo) if flop(lo) == flop(hi) else f"{flop(lo)}–{flop(hi)}"  # equal to 3 digits: one number
    return (f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"), flops


def markdown(results: dict, test_n: list[int], commands: list[str], meta: dict, prefix: str = "results") -> str:
    lines = ["## Runs", "", "| mechanism | params | state bytes / sequence | training tokens | training FLOPs | "
             + " | ".join(f"val score lr={lr:g}" for lr in meta["lrs"]) + " | chosen lr |", "|---|---:|---:|---:|---:|"
             + "---:|" * len(meta["lrs"]) + "---:|"]
    for mech, r in results.items():
        scores = " | ".join(f"{r['scores'].get(lr, float('nan')):.3f}" for lr in meta["lrs"])
        tokens, flops = token_cells(r)
        lines.append(f"| {mech} | {r['n_params']:,} | {r['state_bytes']:,} | {tokens} | {flops} | {scores} | {r['lr']:g} |")
    seeds = meta.get("seeds", [None])
    over = ("" if len(seeds) == 1 else
            f" of the first seed ({seeds[0]}), which chooses the learning rate; the other seeds "
            f"({', '.join(map(str, seeds[1:]))}) are trained at the chosen rate only")
    lines += ["", ("Training FLOPs = 6 x params x training tokens (Kaplan et al. 2020); where the seeds' training "
                   "streams differ in length, both columns read `min–max` over the seeds. The validation score is the "
                   f"mean of ar_valid, ar_expired and passkey accuracy over the validation N at the end of training{over}."), ""]
    if meta.get("pending"):
        lines += [f"No row yet (not run, still running, or failed): {', '.join(meta['pending'])}.", ""]
    lines += ["## Test accuracy per N", ""]
    # the legend describes the formats the rows use (cell_text): Wilson for a row of one tested seed
    # (one seed asked, or the others failed), the t interval for a row of several
    counts = {len(r["seeds"]) for r in results.values()} or {len(seeds)}
    one = (FEW_NOTE if counts == {1} else "Rows of one tested seed: " + FEW_NOTE[0].lower() + FEW_NOTE[1:]) + (
        " Items are answer tokens; sequences for passkey_exact. The figures shade the Wilson interval.")
    several = ("" if 1 not in counts else "Rows of several tested seeds: ") + (
        f"cells read `mean (min–max; CI low–high; seeds)` of the test accuracy over the seeds "
        f"({', '.join(map(str, seeds))}), the CI the 95% Student-t interval of the mean, clipped to [0, 1]; the "
        "figures shade that interval.")
    several = several[0].upper() + several[1:]
    lines += [*([one, ""] if 1 in counts else []), *([several, ""] if counts - {1} else [])]
    header = "| mechanism | " + " | ".join(f"n{n}" for n in test_n) + " |"
    for kind in REPORT_KINDS:
        lines += [f"### {kind}", "", header, "|---|" + "---:|" * len(test_n)]
        for mech, r in results.items():
            cells = [cell_text(r, n, kind) for n in test_n]
            lines.append(f"| {mech} | " + " | ".join(cells) + " |")
        lines += ["", f"![{kind}](figures/{prefix}_{kind}.png)", ""]
    lines += ["## Commands", "", "```bash", *commands, "```", ""]
    return "\n".join(lines)


FRONTIER_X, FRONTIER_Y = "passkey_exact", "forgetting"
"""The frontier's axes: passkey_exact (keeping) and ``forgetting_score`` (forgetting), both at N = 4x
the longest training N."""


def forgetting_score(ar_valid: float, ar_expired_stale: float) -> float:
    """The frontier's forgetting score ``min(ar_valid, ar_expired_stale)`` at one N, in [0, 1].

    Answering NULL to every query scores 1 on stale queries and 0 on valid ones, answering every
    query with a value scores the reverse: either way the minimum is 0. It is high only for a
    model that both still holds the live keys and has let go of the stale ones (written, then idle
    for more than 2w writes; docs/TASK.md, "Answer rule"), i.e. one that forgets *selectively*
    (docs/RESULTS.md, "The decay frontier"). NaN when either input is NaN (the kind was not
    observed at that N).
    """
    if math.isnan(ar_valid) or math.isnan(ar_expired_stale):
        return math.nan
    return min(ar_valid, ar_expired_stale)


def frontier_points(raw: dict, n: int) -> dict[str, dict[str, tuple[float, float, float]]]:
    """One point per mechanism of a ``results.json``: ``{mech: {"x": (centre, low, high), "y": ...,
    "seeds": k, "per_seed": [(x, y), ...], "ar_valid": mean, "ar_expired_stale": mean, "n_params":
    int | None, "state_bytes": int | None}}``, ``per_seed`` holding each seed's own coordinates and the
    two accuracies the forgetting score is the minimum of (their mean over seeds).

    ``x`` is passkey_exact and ``y`` the ``forgetting_score`` at N = ``n``. With one seed the
    interval of x is the 95% Wilson interval of passkey_exact; that of y is ``[min(low_valid,
    low_stale), min(high_valid, high_stale)]`` (min is increasing in both arguments, so it holds
    the score whenever both Wilson intervals hold their accuracy: at least 90% by Bonferroni).
    With several seeds, the mean over seeds of the per-seed value with its 95% Student-t interval.
    Mechanisms whose runs did not test N = ``n`` are left out.
    """
    points = {}
    for mech, r in raw.items():
        cells = [seed["accuracy"] for seed in r["seeds"].values()]
        if not all(f"{n}/{FRONTIER_X}" in c for c in cells) or not cells:
            continue

        def acc(c: dict, kind: str) -> float:
            a, count, _ = c.get(f"{n}/{kind}", (math.nan, 0, 0))
            return float(a) if count else math.nan

        xs = [acc(c, FRONTIER_X) for c in cells]
        ys = [forgetting_score(acc(c, "ar_valid"), acc(c, "ar_expired_stale")) for c in cells]
        if len(cells) == 1:
            (c,) = cells
            bounds = {k: wilson(int(c.get(f"{n}/{k}", (0, 0, 0))[2]), int(c.get(f"{n}/{k}", (0, 0, 0))[1]))
                      for k in (FRONTIER_X, "ar_valid", "ar_expired_stale")}
            valid, stale = bounds["ar_valid"], bounds["ar_expired_stale"]
            x = (xs[0], bounds[FRONTIER_X].low, bounds[FRONTIER_X].high)
            y = (ys[0], forgetting_score(valid.low, stale.low), forgetting_score(valid.high, stale.high))
        else:
            sx, sy = seed_spread(xs, bounds=UNIT), seed_spread(ys, bounds=UNIT)
            x, y = (sx.mean, sx.low, sx.high), (sy.mean, sy.low, sy.high)
        valid = [acc(c, "ar_valid") for c in cells]
        stale = [acc(c, "ar_expired_stale") for c in cells]
        points[mech] = {"x": x, "y": y, "seeds": len(cells), "per_seed": list(zip(xs, ys)),
                        "ar_valid": seed_spread(valid).mean, "ar_expired_stale": seed_spread(stale).mean,
                        "n_params": r.get("n_params"), "state_bytes": r.get("state_bytes")}
    return points


def frontier_markdown(points: dict, n: int, n_train: int, prefix: str) -> str:
    """The frontier table: one row per mechanism, x and y with their intervals."""
    seeds = sorted({p["seeds"] for p in points.values()})
    how = ("95% Wilson interval of one seed (the forgetting score's: the min of the two Wilson bounds)"
           if seeds == [1] else "mean over seeds with its 95% Student-t interval, clipped to [0, 1]")

    def cell(v: tuple[float, float, float]) -> str:
        return MISSING if math.isnan(v[0]) else f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]".replace("nan", MISSING)

    lines = [f"## The decay frontier at n{n} (4x the longest training N, n{n_train})", "",
             (f"x = passkey_exact, y = forgetting score = min(ar_valid, ar_expired_stale), both at n{n}; "
              f"interval cells read `value [low, high]`, the {how}; ar_valid and ar_expired_stale are the means "
              "whose minimum, per seed, is the forgetting score."), "",
             ("| mechanism | seeds | passkey_exact | passkey_exact per seed | ar_valid | ar_expired_stale "
              "| forgetting score | state bytes / sequence | params |"), "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def order(kv: tuple[str, dict]) -> tuple[float, str]:  # best passkey first, unmeasured last
        x = kv[1]["x"][0]
        return (1.0 if math.isnan(x) else -x, kv[0])

    def number(v: float | None) -> str:
        return MISSING if v is None or math.isnan(v) else f"{v:.3f}"

    def count(v: int | None) -> str:
        return MISSING if v is None else f"{int(v):,}"

    for mech, p in sorted(points.items(), key=order):
        per_seed = " / ".join(number(x) for x, _ in p.get("per_seed", []))
        lines.append(f"| {mech} | {p['seeds']} | {cell(p['x'])} | {per_seed} | {number(p.get('ar_valid'))} "
                     f"| {number(p.get('ar_expired_stale'))} | {cell(p['y'])} | {count(p.get('state_bytes'))} "
                     f"| {count(p.get('n_params'))} |")
    lines += ["", f"![frontier](figures/{prefix}_frontier.png)", ""]
    return "\n".join(lines)


def spread_labels(ys: list[float], gap: float) -> list[float]:
    """Label heights for points at heights ``ys`` (any order), each at or above its own point and
    at least ``gap`` above the next lower label, as low as that allows: a greedy sweep from the
    lowest point up. Same length and order as ``ys``; raises ValueError for a negative ``gap``."""
    if gap < 0:
        raise ValueError(f"gap={gap!r} is invalid; expected a number >= 0")
    placed = [0.0] * len(ys)
    previous = -math.inf
    for i in sorted(range(len(ys)), key=lambda i: ys[i]):
        placed[i] = max(ys[i], previous + gap)
        previous = placed[i]
    return placed


def _short_name(mech: str) -> str:
    return mech.replace("ScalarDecayLinearAttention_", "scalar ").replace("decay", "decay ")


def plot_frontier(points: dict, n: int, path: Path) -> Path:
    """The frontier figure: one point per mechanism (the mean over seeds) with its x and y error
    bars, each seed's own point as a small hollow marker, the fixed scalar decays joined in order of
    decay, the corner that both keeps and forgets (x and y >= 0.9) shaded, and labels spread apart
    where points crowd (:func:`spread_labels`, per column of nearby x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 6))
    ax.fill_between([0.9, 1.03], 0.9, 1.03, color="tab:green", alpha=0.08, lw=0)
    ax.text(0.985, 0.905, "keeps and forgets", fontsize=7, ha="right", va="bottom", color="tab:green")
    styles = line_styles(list(points), plt)  # the same colour per mechanism as the per-kind figures
    drawn = {}
    for mech, p in points.items():
        (x, xlo, xhi), (y, ylo, yhi) = p["x"], p["y"]
        if math.isnan(x) or math.isnan(y):
            continue
        colour, marker, _ = styles[mech]
        xerr = [[x - xlo], [xhi - x]] if math.isfinite(xlo) and math.isfinite(xhi) else None
        yerr = [[y - ylo], [yhi - y]] if math.isfinite(ylo) and math.isfinite(yhi) else None
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=marker, capsize=3, markersize=6, label=mech,
                    color=colour, zorder=3)
        seeds = [(sx, sy) for sx, sy in p.get("per_seed", []) if not (math.isnan(sx) or math.isnan(sy))]
        if len(seeds) > 1:
            ax.scatter([sx for sx, _ in seeds], [sy for _, sy in seeds], s=18, facecolors="none",
                       edgecolors=[colour], linewidths=0.8, alpha=0.8, zorder=2)
        drawn[mech] = (x, y)
    fixed = sorted((float(m.rsplit("decay", 1)[1]), xy) for m, xy in drawn.items()
                   if m.startswith("ScalarDecayLinearAttention_decay"))
    if len(fixed) > 1:
        ax.plot([xy[0] for _, xy in fixed], [xy[1] for _, xy in fixed], ls="--", lw=0.8, color="grey",
                zorder=1, label="fixed scalar decays, in order of decay")
    # labels: points within 0.12 in x share a column, and a column's labels stay 0.03 apart in y
    columns: list[list[str]] = []
    for mech in sorted(drawn, key=lambda m: drawn[m][0]):
        if columns and drawn[mech][0] - drawn[columns[-1][0]][0] < 0.12:
            columns[-1].append(mech)
        else:
            columns.append([mech])
    for column in columns:
        heights = spread_labels([drawn[m][1] for m in column], 0.03)
        for mech, h in zip(column, heights):
            x, y = drawn[mech]
            ax.annotate(_short_name(mech), (x, y), xytext=(x + 0.02, h + 0.01), fontsize=6.5,
                        textcoords="data", va="bottom",
                        arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "grey"} if h - y > 0.02 else None)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"passkey_exact at n{n} (keeps)")
    ax.set_ylabel(f"min(ar_valid, ar_expired_stale) at n{n} (forgets selectively)")
    seeds = max((p["seeds"] for p in points.values()), default=1)
    how = "mean of seeds, 95% t interval; hollow: each seed" if seeds > 1 else "95% Wilson intervals"
    ax.set_title(f"passkey_swar: the decay frontier at n{n} ({how})", fontsize=10)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # points that coincide stay apart in the legend
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    try:
        atomic_write(path, lambda handle: fig.savefig(handle, format="png", dpi=110), binary=True)
    finally:
        plt.close(fig)
    return path


def write_frontier(raw: dict, n: int, n_train: int, docs: Path, prefix: str) -> tuple[Path, Path]:
    """Write ``docs/<prefix>_frontier.md`` and ``docs/figures/<prefix>_frontier.png`` from a
    ``results.json`` mapping. Raises ValueError when no mechanism was tested at N = ``n``."""
    points = frontier_points(raw, n)
    if not points:
        raise ValueError(f"no mechanism in the results was tested at n{n}; expected n{n} among the test N")
    figure = plot_frontier(points, n, docs / "figures" / f"{prefix}_frontier.png")
    table = docs / f"{prefix}_frontier.md"
    atomic_write_text(table, frontier_markdown(points, n, n_train, prefix))
    return table, figure


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows every default: argparse's own where there is a value, the help text's where
    the default depends on other options (None) or is off (a flag)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, ""):
            return action.help
        return super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    """The script's entry point; returns the exit code (module docstring). Ctrl-C / SIGTERM stop
    the sweep (:func:`halt`): one line, 130 / 143."""
    previous = interrupts.install(sigterm=True)
    _halted.clear()  # a new sweep
    _signalled.clear()
    try:
        return _main(argv)
    except (KeyboardInterrupt, interrupts.Terminated, Interrupted) as exc:  # before or after the sweep ran
        return _interrupted(exc)
    finally:
        interrupts.restore(previous)


def _interrupted(exc: BaseException, records: Path | None = None) -> int:
    """Stop every run (:func:`stop_runs`), print the one line and return the exit code of ``exc``."""
    if isinstance(exc, Interrupted):
        status = exc.status
    else:
        status = STOP_STATUS[signal.SIGTERM if isinstance(exc, interrupts.Terminated) else signal.SIGINT]
    for signum in STOP_STATUS:  # a second Ctrl-C must not cut the stopping of the runs short
        signal.signal(signum, signal.SIG_IGN)
    stop_runs(status)
    kept = f"the runs finished so far keep their records in {records}; " if records is not None else ""
    what = "Ctrl-C" if status == STOP_STATUS[signal.SIGINT] else "SIGTERM"
    print(f"results: interrupted ({what}); nothing more was run or written; {kept}run the same command with --resume "
          "to continue", file=sys.stderr, flush=True)
    return status


def _main(argv: list[str] | None) -> int:
    p = ArgumentParser(description=__doc__.splitlines()[0], formatter_class=_Help)
    p.add_argument("--mechanisms", default=",".join(DEFAULT),
                   help="comma-separated mechanism names (the default is the seven of docs/RESULTS.md); "
                        "'frontier' names every mechanism of the decay frontier")
    p.add_argument("--lrs", default="3e-3,1e-2", help="comma-separated learning rates (best on validation is kept)")
    p.add_argument("--steps", type=int, default=None,
                   help="override the config's optimizer steps (default: the config's); a trial budget, so it needs "
                        "--docs and --records outside the committed docs/ and results/")
    p.add_argument("--test-configs", default=None,
                   help="override the config's test N, e.g. 32,64 (default: the config's); the test command only, "
                        "so --resume reruns the tests, not the fits; a trial setting, so it needs --docs and --records "
                        "outside the committed docs/ and results/")
    p.add_argument("--eval-examples", type=int, default=None,
                   help="override the config's examples per evaluated N, in validation and test (default: the "
                        "config's); a trial setting, so it needs --docs and --records outside the committed docs/ and "
                        "results/")
    p.add_argument("--resume", action="store_true",
                   help="reuse every finished fit and test instead of running it again (default: off, everything runs): "
                        "a fit whose record in --records holds the same fit and validate command lines (no run folder "
                        "needed), or whose run folder holds its last.ckpt, its validation logs and the same fit "
                        "command; a test whose record, or whose run folder's accuracy CSV, has the same test command")
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run")
    p.add_argument("--out", type=str, default="runs/results", help="run folder (checkpoints, logs, results.json)")
    p.add_argument("--records", type=str, default=None,
                   help="folder of the per-run records (validation score, training tokens, test accuracy and the "
                        "command lines) that --resume reuses on any machine, without the run folders (default: "
                        "results/<tag>, or results/main with no tag: the committed records, which a run there "
                        "overwrites); commit it to carry a sweep across machines")
    p.add_argument("--docs", type=str, default=None,
                   help="where <prefix>_tables.md and figures/ go (default: docs, where the committed tables and "
                        "figures are: a run there overwrites them)")
    p.add_argument("--config", default=CONFIG, help="the equal-budget trainer/model/data config every run shares")
    p.add_argument("--tag", default="", help="name suffix of the outputs: results_<tag>_tables.md, figures/results_<tag>_<kind>.png "
                        "(default: none, results_tables.md and figures/results_<kind>.png)")
    p.add_argument("--seeds", default=None,
                   help="comma-separated seeds: train and test every configuration once per seed, report mean and spread "
                        "(default: one run per configuration, with the config's seed)")
    p.add_argument("--frontier", action="store_true",
                   help="also write the decay frontier at N = 4x the longest training N: "
                        "<docs>/<prefix>_frontier.md and <docs>/figures/<prefix>_frontier.png")
    p.add_argument("--frontier-only", action="store_true",
                   help="run nothing: write the frontier from the <out>/results.json of a finished sweep; with the "
                        "default --docs only when that results.json was written by a sweep of the same --config "
                        "without --steps, --eval-examples or --test-configs (it records them), else --docs is needed")
    args = p.parse_args(argv)
    for flag in ("--out", "--records", "--docs"):  # Path("") would be the current folder
        value = getattr(args, flag[2:])
        if value is not None and not value.strip():
            p.error(f"{flag}={value!r} is empty; expected a folder path")
    args.out = Path(args.out)
    args.records = Path(args.records) if args.records is not None else None
    args.docs = Path(args.docs) if args.docs is not None else Path("docs")
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as err:
        p.error(str(err))
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    mechs = [x for m in mechs for x in (FRONTIER if m == "frontier" else (m,))]
    if not mechs:
        p.error(f"--mechanisms={args.mechanisms!r} names no mechanism; expected some of {', '.join(MECHANISM_CONFIGS)}")
    unknown = [m for m in mechs if m not in MECHANISM_CONFIGS]
    if unknown:
        p.error(f"unknown mechanism {unknown[0]!r}; expected one of {', '.join(MECHANISM_CONFIGS)}")
    try:
        lrs = [float(x) for x in args.lrs.split(",")]
    except ValueError:
        p.error(f"--lrs={args.lrs!r} is invalid; expected comma-separated numbers")
    if not lrs or not all(lr > 0 for lr in lrs):
        p.error(f"--lrs={args.lrs!r} is invalid; expected positive learning rates")
    for flag, value in (("--jobs", args.jobs), ("--threads", args.threads), ("--steps", args.steps),
                        ("--eval-examples", args.eval_examples)):
        if value is not None and value < 1:
            p.error(f"{flag}={value} is invalid; expected an integer >= 1")
    test_n_given = None
    if args.test_configs is not None:
        from swar_bench.tasks.passkey_swar import ALLOWED_N

        try:
            bad = [x for x in args.test_configs.split(",") if x.strip() and int(x) not in ALLOWED_N]
        except ValueError:
            bad = [args.test_configs]
        if bad:
            p.error(f"--test-configs={args.test_configs!r}: {bad[0]!r} is not an allowed N; expected some of "
                    f"{', '.join(map(str, ALLOWED_N))}")
        test_n_given = [int(x) for x in args.test_configs.split(",") if x.strip()]
    try:
        check_list("--mechanisms", args.mechanisms, mechs)
        check_list("--lrs", args.lrs, lrs)
        if test_n_given is not None:
            check_list("--test-configs", args.test_configs, test_n_given)
    except ValueError as err:
        p.error(str(err))
    # every option that makes the runs differ from the config's committed protocol (a trial)
    trial = [f"{flag}={value}" for flag, value in (("--steps", args.steps), ("--eval-examples", args.eval_examples),
                                                   ("--test-configs", args.test_configs)) if value is not None]
    if args.frontier_only:
        ignored = [t for t in trial if not t.startswith("--test-configs")]
        if ignored:
            p.error(f"{ignored[0]} has no effect with --frontier-only, which runs nothing; expected it without "
                    f"{ignored[0].split('=')[0]}")
    committed_docs, committed_records = ROOT / "docs", ROOT / "results"
    records_path = args.records if args.records is not None else Path("results") / (args.tag or "main")
    into = [("--docs", args.docs, committed_docs)]
    if not args.frontier_only:
        into.append(("--records", records_path, committed_records))
    missing = [flag for flag, folder, committed in into
               if inside(folder if folder.is_absolute() else ROOT / folder, committed)]
    if trial and missing:
        p.error(f"{trial[0]} is a trial setting (it changes the config's protocol): it would overwrite the committed "
                f"tables, figures and records in docs/ and results/; expected {' and '.join(missing)} naming other "
                "folders")
    from swar_bench.lightning_cli import check_output_folder

    checked = [("--out", args.out), ("--docs", args.docs), ("--docs", args.docs / "figures")]
    if args.records is not None:
        checked.append(("--records", args.records))
    for flag, folder in checked:
        try:  # really creates and removes a folder there: permission bits alone pass for root in /proc
            check_output_folder(folder if folder.is_absolute() else ROOT / folder, flag)
        except ValueError as err:
            p.error(str(err))
    if not (ROOT / args.config).is_file():
        p.error(f"--config={args.config!r} does not exist; expected a YAML file such as {CONFIG}")
    if args.tag and not args.tag.replace("_", "").isalnum():
        p.error(f"--tag={args.tag!r} is invalid; expected letters, digits and underscores")
    prefix = f"results_{args.tag}" if args.tag else "results"
    try:
        cfg = load_config(ROOT / args.config, args.config)
    except ValueError as err:
        p.error(str(err))
    val_n, test_n = list(cfg["data"]["val_configs"]), list(cfg["data"]["test_configs"])
    data_overrides = []  # fit, validate and test: validation reads --eval-examples too
    test_overrides = []  # the test command only: a new test N keeps every fit
    if test_n_given is not None:
        test_n = test_n_given
        test_overrides.append(f"--data.test_configs=[{','.join(map(str, test_n))}]")
    if args.eval_examples:
        data_overrides.append(f"--data.eval_examples={args.eval_examples}")
    out = args.out if args.out.is_absolute() else ROOT / args.out
    docs = args.docs if args.docs.is_absolute() else ROOT / args.docs
    n_train = max(cfg["data"]["train_configs"])
    n_frontier = 4 * n_train
    if (args.frontier or args.frontier_only) and n_frontier not in test_n:
        p.error(f"--frontier: the frontier is read at 4x the longest training N, n{n_frontier}, which is not among "
                f"the test N {test_n}; expected a config or --test-configs that tests n{n_frontier}")
    if args.frontier_only:
        path = out / "results.json"
        if not path.is_file():
            p.error(f"--frontier-only: no {path}; expected the --out folder of a finished sweep")
        try:
            raw = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            p.error(f"--frontier-only: {path} cannot be read as JSON ({err.__class__.__name__}); expected the "
                    "results.json of a finished sweep")
        if not isinstance(raw, dict) or not all(isinstance(r, dict) and isinstance(r.get("seeds"), dict)
                                                for r in raw.values()):
            p.error(f"--frontier-only: {path} is not a sweep's results.json; expected one object per mechanism "
                    "with its seeds")
        committed = {"config": args.config, "trial": []}
        if inside(docs, committed_docs) and not all(r.get("protocol") == committed for r in raw.values()):
            p.error(f"--frontier-only: {path} was not written by a sweep of {args.config} without trial settings "
                    "(--steps, --eval-examples, --test-configs), or by one that does not say so: it would overwrite the "
                    "committed frontier in docs/; expected --docs naming another folder")
        try:
            table, figure = write_frontier(raw, n_frontier, n_train, docs, prefix)
        except ValueError as err:
            p.error(f"--frontier-only: {path}: {err}")
        print(f"results: wrote {table} and {figure}", flush=True)
        return 0
    records = args.records if args.records is not None else Path("results") / (args.tag or "main")
    records = records if records.is_absolute() else ROOT / records
    t0 = time.monotonic()
    slots = threading.Semaphore(args.jobs)  # at most --jobs swar-bench processes at once
    report_lock = threading.Lock()

    def run(argv: list[str], log: Path) -> tuple[int, float]:
        """Exit code and seconds of one ``swar-bench`` process (not counting the wait for a slot)."""
        with slots:
            start = time.monotonic()
            if halted() is not None:  # stopped while this run waited for its slot
                raise Interrupted(halted())
            rc, _ = swar_bench(argv, log, args.threads)
            return rc, time.monotonic() - start

    def saved_record(path: Path) -> dict | None:
        """``--resume``'s record at ``path``: None when there is none, or when it cannot be used (one
        warning line naming the file and why; the run is done again, as without a record)."""
        try:
            return read_record(path)
        except ValueError as err:
            print(f"results: warning: {err}; running it again", file=sys.stderr, flush=True)
            return None

    def fit(mech: str, lr: float, seed: int | None, force: bool = False) -> dict | None:
        """Train and validate one configuration, or reuse it: its record (any machine) or its run folder.

        Returns the fit record ``{"fit", "validate", "score", "tokens"}`` (with, in memory only,
        ``"shown"``: its two command lines as the tables print them), or None when it failed.

        Raises:
            Interrupted: the sweep was stopped."""
        name = run_name(mech, lr, seed)
        fit_args = ["fit", *base_args(mech, args.out, name, args.steps, args.config), f"--model.lr={lr:g}",
                    *seed_args(seed), *data_overrides]
        val_args = ["validate", *base_args(mech, args.out, f"{name}_val", None, args.config),
                    f"--ckpt_path={args.out / name / 'checkpoints' / 'last.ckpt'}", *seed_args(seed), *data_overrides]
        want = {"fit": command_line(fit_args), "validate": command_line(val_args)}
        show = {"shown": [shown(fit_args), shown(val_args)]}
        saved = saved_record(records / f"{name}.json") if args.resume and not force else None
        if saved and all(saved.get(k) == v for k, v in want.items()):
            return {**saved, **show}
        ckpt = out / name / "checkpoints" / "last.ckpt"
        command_record = out / name / "fit_command.txt"  # what the run in this folder was trained with
        done = (ckpt.exists() and any((out / f"{name}_val").rglob("events.out.tfevents.*"))
                and command_record.is_file() and command_record.read_text() == want["fit"])
        if not (args.resume and not force and done):
            command_record.unlink(missing_ok=True)
            (out / name / "test_command.txt").unlink(missing_ok=True)  # a new checkpoint needs a new test
            (records / f"{name}.test.json").unlink(missing_ok=True)
            # a new fit: `fit` refuses to write over the checkpoints of an earlier one, this script replaces them
            shutil.rmtree(out / name / "checkpoints", ignore_errors=True)
            rc, fit_secs = run(fit_args, out / name / "fit.log")
            if rc != 0:
                print(f"results: fit {name} failed (exit {rc}); see {out / name / 'fit.log'}", flush=True)
                return None
            atomic_write_text(command_record, want["fit"])
            shutil.rmtree(out / f"{name}_val", ignore_errors=True)  # the validation of this checkpoint only
            # the final validation that chooses the learning rate, on the last checkpoint
            rc, val_secs = run(val_args, out / name / "validate.log")
            if rc != 0:
                print(f"results: validate {name} failed (exit {rc}); see {out / name / 'validate.log'}", flush=True)
                return None
            print(f"results: fit {name}: {fit_secs:.0f}s, validation {val_secs:.0f}s", flush=True)
        record = {**want, "score": validation_score(last_scalars(out / f"{name}_val"), val_n),
                  "tokens": training_tokens(ckpt)}
        write_record(records / f"{name}.json", record)
        return {**record, **show}

    def test(mech: str, lr: float, seed: int | None) -> dict | None:
        """Test one kept fit, or reuse its test: its record (any machine) or its run folder.

        Returns the test record ``{"test", "accuracy"}`` (with, in memory only, ``"shown"``: its
        command line as the tables print it), or None when it (or the fit it needs) failed.

        Raises:
            Interrupted: the sweep was stopped."""
        name = run_name(mech, lr, seed)
        test_args = ["test", *base_args(mech, args.out, f"{name}_test", None, args.config),
                     f"--ckpt_path={args.out / name / 'checkpoints' / 'last.ckpt'}",
                     f"--accuracy.out_dir={args.out / name / 'test'}", f"--calibration.out_dir={args.out / name / 'test'}",
                     *seed_args(seed), *data_overrides, *test_overrides]
        want = command_line(test_args)
        show = {"shown": [shown(test_args)]}
        saved = saved_record(records / f"{name}.test.json") if args.resume else None
        if saved and saved.get("test") == want:
            return {**saved, **show}
        csv_path = out / name / "test" / "answer_type_accuracy.csv"
        command_record = out / name / "test_command.txt"  # removed when the fit runs again
        if not (args.resume and csv_path.is_file() and command_record.is_file() and command_record.read_text() == want):
            command_record.unlink(missing_ok=True)
            # a fit whose record came from another machine, without its checkpoint, is trained again
            if not (out / name / "checkpoints" / "last.ckpt").exists() and fit(mech, lr, seed, force=True) is None:
                return None
            rc, secs = run(test_args, out / name / "test.log")
            if rc != 0:
                print(f"results: test {name} failed (exit {rc}); see {out / name / 'test.log'}", flush=True)
                return None
            atomic_write_text(command_record, want)
            print(f"results: test {name}: {secs:.0f}s", flush=True)
        record = {"test": want, "accuracy": [[n, kind, *a] for (n, kind), a in read_accuracy(csv_path).items()]}
        write_record(records / f"{name}.test.json", record)
        return {**record, **show}

    failed: list[str] = []
    results: dict[str, dict] = {}
    commands: dict[str, list[str]] = {}

    def mechanism(mech: str) -> None:
        """Every run of one mechanism: both learning rates on the first seed, the chosen one on the
        other seeds, then a test per seed; then the reports are rewritten with it."""
        first, rest = seeds[0], seeds[1:]
        with futures.ThreadPoolExecutor(len(lrs)) as pool:
            chosen_by = dict(zip(lrs, pool.map(lambda lr: fit(mech, lr, first), lrs)))
        for lr, rec in chosen_by.items():
            if rec is None:
                failed.append(run_name(mech, lr, first))
        scores = {lr: rec["score"] for lr, rec in chosen_by.items() if rec is not None}
        if not scores:
            return
        lr = max(scores, key=lambda x: -1 if math.isnan(scores[x]) else scores[x])
        with futures.ThreadPoolExecutor(max(1, len(rest))) as pool:
            fits = {first: chosen_by[lr], **dict(zip(rest, pool.map(lambda s: fit(mech, lr, s), rest)))}
        with futures.ThreadPoolExecutor(len(seeds)) as pool:
            tests = dict(zip(seeds, pool.map(lambda s: test(mech, lr, s) if fits[s] else None, seeds)))
        r = {**mechanism_facts(mech), "lr": lr, "scores": scores, "seeds": {}}
        cmds = [c for rec in chosen_by.values() if rec for c in rec["shown"]]
        cmds += [c for s in rest if fits[s] for c in fits[s]["shown"]]
        for s in seeds:
            if tests[s] is None:
                failed.append(run_name(mech, lr, s) + ("" if fits[s] else " (fit)") + " (test)")
                continue
            cmds += tests[s]["shown"]
            r["seeds"][s] = {"tokens": fits[s]["tokens"],
                             "accuracy": {(int(n), kind): (acc, count, correct)
                                          for n, kind, acc, count, correct in tests[s]["accuracy"]}}
        if not r["seeds"]:
            return
        r["tokens"] = max(v["tokens"] for v in r["seeds"].values())
        with report_lock:
            results[mech], commands[mech] = r, cmds
            write_reports()

    def write_reports() -> None:
        """The tables, figures and ``results.json`` (and the frontier) of every mechanism finished so far.

        Raises:
            Interrupted: the sweep was stopped (nothing is written from then on)."""
        if halted() is not None:
            raise Interrupted(halted())
        done = {m: results[m] for m in mechs if m in results}  # in the order asked
        meta = {"lrs": lrs, "seeds": seeds, "minutes": (time.monotonic() - t0) / 60,
                "pending": [m for m in mechs if m not in results]}
        plot(done, test_n, docs, prefix)
        atomic_write_text(docs / f"{prefix}_tables.md", markdown(done, test_n, [c for m in done for c in commands[m]],
                                                                   meta, prefix))
        raw = {m: {**r, "protocol": {"config": args.config, "trial": trial}, "scores": {f"{lr:g}": s for lr, s in r["scores"].items()},
                   "seeds": {"config" if seed is None else str(seed):
                             {**v, "accuracy": {f"{n}/{k}": list(a) for (n, k), a in v["accuracy"].items()}}
                             for seed, v in r["seeds"].items()},
                   "spread": {f"{n}/{k}": seed_spread(seed_values(r, n, k), bounds=UNIT).as_dict()
                              for n in test_n for k in REPORT_KINDS}}
               for m, r in done.items()}
        atomic_write_text(out / "results.json", json.dumps(raw, indent=1))
        if args.frontier:
            raw = json.loads(json.dumps(raw))  # as --frontier-only reads it back: string keys throughout
            write_frontier(raw, n_frontier, n_train, docs, prefix)

    pool = futures.ThreadPoolExecutor(args.jobs)  # --jobs mechanisms in flight, in the order given
    try:
        for job in [pool.submit(mechanism, m) for m in mechs]:
            job.result()  # Ctrl-C / SIGTERM land here, in the main thread; a run's 130 / 143 comes as Interrupted
        interrupts.complete()  # a stop recorded but swallowed is reported; a later one is ignored
    except (KeyboardInterrupt, interrupts.Terminated, Interrupted) as exc:
        status = _interrupted(exc, records)  # stops the runs; then their threads end at once
        pool.shutdown(wait=True, cancel_futures=True)
        return status
    pool.shutdown(wait=True)
    if not results:
        print("results: no run finished; nothing written", file=sys.stderr)
        return 1
    print(f"results: wrote the tables and figures ({prefix}) in {docs} in {(time.monotonic() - t0) / 60:.1f} min",
          flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
