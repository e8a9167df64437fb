"""A study of Zoology's MQAR recipe: ``swar-bench study run|status|report`` on a file with ``task: mqar``.

Zoology (Arora et al., 2023; HazyResearch/zoology, ``zoology/experiments/iclr24_zoology_figure2``)
scores a mixer at one width by the best test accuracy over the learning rates
``logspace(-4, -2, 4)``, one seed, each run stopped early once the accuracy passes 0.99. A study
file says which (mechanism, width) entries to run and beside which published values to report them:

    task: mqar
    name: mqar_zoology
    records: results/mqar              # the study's only state: one JSON record per finished run
    out: runs/studies/mqar             # run folders (checkpoints, logs); a stopped run resumes here
    learning_rates: [2.154434690031884e-3, 1.0e-2, 4.641588833612782e-4, 1.0e-4]   # in run order
    seed: 123
    solved_at: 0.99                    # optional: an entry solved at one rate skips its other rates
    entries:
      - {name: Attention_T64_d64, config: configs/mqar/figure2_t64.yaml, d_model: 64,
         published: {mixer: Attention, accuracy: 0.98}}
      - {name: GatedDeltaNet_T64_d64, config: configs/mqar/figure2_t64.yaml,
         overlay: configs/mqar/mechanisms/gated_delta_net.yaml, d_model: 64,
         learning_rates: [2.154434690031884e-3, 1.0e-2],      # optional: the entry's own rates
         max_epochs: 16}                                      # optional: a budget below the recipe's

Each run is ``swar-bench fit --config <config> [--config <overlay>]`` with the width, rate and
seed on the command line; it validates on the test segment after every epoch (``val/mqar/acc``,
the recipe's config). Its record (``<records>/<run>.fit.json``) holds the command, the code and
environment (``swar_bench.study.provenance``), the accuracy after every epoch
(``<run>.curve.csv``), the final and best accuracy, the state bytes per sequence and the wall time.
The score of a run is its **final** accuracy (what Zoology's plots read: the last logged
``valid/accuracy`` of each wandb run); an entry's score is the best over its rates.

Budget: an entry's ``max_epochs`` (at most the recipe's ``trainer.max_epochs``) stops its runs
after that many epochs (``--trainer.max_epochs``). The learning-rate schedule is the recipe's
(``model.max_steps``: cosine over all 64 epochs), so such a run is exactly the first
``max_epochs`` epochs of the recipe's run; the report gives the epochs run against the recipe's,
and a run stopped by the budget below the early stop's accuracy is one that did not reach it *in
that many epochs*, not one that cannot.

Order and skipping: runs go rate by rate across the entries (every entry's first rate, then every
entry's second, ...), so each entry has a score early. With ``solved_at: A``, an entry one of whose
records reached final accuracy ``>= A`` skips its rates not yet run: its best over all its rates
is then within ``1 - A`` of the score it has (an accuracy is at most 1). With ``A`` at the early
stop's 0.99 this costs the figure at most 0.01 and saves the runs of rates that cannot change it.

Resuming: a record is reused when its command is the same and its code compatible (else one line,
or ``--rerun-stale``; ``code_fingerprint: <16 hex>`` pins the training code the records are judged
against, as in a study of the task, ``swar_bench.study.provenance``); a run stopped mid-way restarts from its ``last.ckpt`` when its command is
unchanged (the command is kept beside the run folder as ``<run>.command``, with the hashes of its
config files: a run whose config file has changed since starts afresh, and a record of it is stale,
``swar_bench.study.config_files``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from swar_bench.study import children, provenance
from swar_bench.study.config_files import KEY as CONFIG_FILES
from swar_bench.study.config_files import config_hashes, reusable
from swar_bench.study.fields import NAME, StudyError, named, number
from swar_bench.study.records import read_fit, scalar_history, write_json
from swar_bench.study.runner import BAD_INPUT, refusal_line, running_marker, say, say_error
from swar_bench.study.spec import pinned_code, study_name
from swar_bench.utils.text import plural

SWAR_BENCH = [sys.executable, "-m", "swar_bench.cli"]
ZOOLOGY_RATES = (2.154434690031884e-3, 1.0e-2, 4.641588833612782e-4, 1.0e-4)
"""``numpy.logspace(-4, -2, 4)`` (Zoology figure 2's ``lrs``), 2.15e-3 first."""
ENTRY_KEYS = {"name", "config", "overlay", "d_model", "published", "learning_rates", "max_epochs"}
STUDY_KEYS = {"task", "name", "records", "out", "learning_rates", "seed", "entries", "compatible_code",
              "code_fingerprint", "note", "solved_at"}


@dataclass(frozen=True)
class Published:
    """A value read off a paper's figure: ``mixer`` (its name there), ``accuracy`` and ``source``."""

    mixer: str
    accuracy: float
    source: str = "Zoology (Arora et al., 2023), Figure 2"


@dataclass(frozen=True)
class Entry:
    """One (mechanism, width) of the study: ``config`` (+ ``overlay``) at ``d_model``; its own
    ``learning_rates`` (run order) when set, else the study's; ``max_epochs``: a budget of epochs
    below the recipe's (None: the recipe's; module docstring, "Budget")."""

    name: str
    config: str
    d_model: int
    overlay: str | None = None
    published: Published | None = None
    learning_rates: tuple[float, ...] | None = None
    max_epochs: int | None = None


@dataclass(frozen=True)
class MQARStudy:
    """A parsed MQAR study file (module docstring); paths are as written (relative to the cwd)."""

    path: str
    name: str
    records: str
    out: str
    entries: tuple[Entry, ...]
    learning_rates: tuple[float, ...] = ZOOLOGY_RATES
    seed: int = 123
    compatible_code: tuple[str, ...] = field(default_factory=tuple)
    code_fingerprint: str | None = None
    solved_at: float | None = None

    def rates(self, e: Entry) -> tuple[float, ...]:
        """The learning rates of entry ``e``, in run order: its own, else the study's."""
        return e.learning_rates or self.learning_rates

    def entry(self, name: str) -> Entry:
        for e in self.entries:
            if e.name == name:
                return e
        raise StudyError(f"no entry {name!r} in {self.path}; expected one of {', '.join(e.name for e in self.entries)}")


def is_mqar_study(path: str | Path) -> bool:
    """True when the YAML file at ``path`` is a mapping with ``task: mqar`` (False when unreadable:
    the ordinary loader then names the fault)."""
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and raw.get("task") == "mqar"


def task_problem(path: str | Path) -> str | None:
    """One line when the study file at ``path`` names a ``task`` other than ``mqar`` (the one task
    a study file names: without it, a study of the passkey task), with the closest task; else None.

    e.g. ``s.yaml: task='mqra' is unknown (did you mean mqar?); expected task: mqar (an MQAR study),
    or no task (a study of the passkey task)``."""
    import yaml

    from swar_bench.utils.text import did_you_mean

    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(raw, dict) or "task" not in raw or raw["task"] == "mqar":
        return None
    return (f"{path}: task={raw['task']!r} is unknown{did_you_mean(str(raw['task']), ['mqar'])}; expected task: mqar "
            "(an MQAR study), or no task (a study of the passkey task)")


def _unknown(keys, allowed, where: str) -> None:
    """Refuse the keys of ``keys`` not in ``allowed``: ``s.yaml: unknown key sead (did you mean
    seed?); expected some of ...`` (each unknown key with its closest known one)."""
    from swar_bench.utils.text import did_you_mean

    extra = sorted(set(keys) - allowed, key=str)
    if extra:
        shown = ", ".join(f"{k}{did_you_mean(str(k), sorted(allowed))}" for k in extra)
        raise StudyError(f"{where}: unknown key{'s' if len(extra) > 1 else ''} {shown}; "
                         f"expected some of {', '.join(sorted(allowed))}")


def load_mqar_study(path: str | Path) -> MQARStudy:
    """Parse and check an MQAR study file.

    Raises:
        StudyError: one line naming the bad value and what was expected (unknown keys, a missing
            or non-file config, a width or rate that is not positive, a duplicate or bad name).
    """
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise StudyError(f"study file {path}: cannot be read ({err})") from None
    if not isinstance(raw, dict) or raw.get("task") != "mqar":
        raise StudyError(f"study file {path}: expected a mapping with task: mqar")
    _unknown(raw, STUDY_KEYS, str(path))
    study_name(raw.get("name"), str(path))
    for key in ("records", "out"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise StudyError(f"{path}: {key}={raw.get(key)!r}; expected a non-empty string")
    rates = _rates(raw.get("learning_rates", list(ZOOLOGY_RATES)), str(path))
    solved_at = None if raw.get("solved_at") is None else number(raw["solved_at"])
    if raw.get("solved_at") is not None and (solved_at is None or not 0 < solved_at <= 1):
        raise StudyError(f"{path}: solved_at={raw['solved_at']!r}; expected an accuracy in (0, 1], e.g. 0.99")
    seed = number(raw.get("seed", 123), integer=True)
    if seed is None or seed < 0:
        raise StudyError(f"{path}: seed={raw['seed']!r}; expected an integer >= 0")
    entries_raw = raw.get("entries")
    if not isinstance(entries_raw, list) or not entries_raw:
        raise StudyError(f"{path}: entries={entries_raw!r}; expected a non-empty list")
    entries, seen = [], set()
    for i, e in enumerate(entries_raw):
        at = f"{path}: entries[{i}]"
        if not isinstance(e, dict):
            raise StudyError(f"{at}={e!r}; expected a mapping")
        at = named(at, e)
        _unknown(e, ENTRY_KEYS, at)
        name = e.get("name")
        if not isinstance(name, str) or not NAME.match(name) or name in seen:
            raise StudyError(f"{at}: name={name!r}; expected a new name of letters, digits, '_', '.', '-'")
        seen.add(name)
        for key in ("config", "overlay"):
            value = e.get(key)
            if value is None and key == "overlay":
                continue
            if not isinstance(value, str) or not Path(value).is_file():
                raise StudyError(f"{at}: {key}={value!r}; expected an existing config file")
        d = number(e.get("d_model"), integer=True)
        if d is None or d < 1:
            raise StudyError(f"{at}: d_model={e.get('d_model')!r}; expected an integer >= 1")
        pub = e.get("published")
        published = None
        if pub is not None:
            accuracy = number(pub.get("accuracy")) if isinstance(pub, dict) else None
            if not isinstance(pub, dict) or not isinstance(pub.get("mixer"), str) or accuracy is None or not 0 <= accuracy <= 1:
                raise StudyError(f"{at}: published={pub!r}; expected {{mixer: NAME, accuracy: 0..1[, source: TEXT]}}")
            published = Published(pub["mixer"], accuracy, str(pub.get("source", Published.source)))
        own = _rates(e["learning_rates"], at) if e.get("learning_rates") is not None else None
        entries.append(Entry(name, e["config"], d, e.get("overlay"), published, own))
    from swar_bench.study.config_files import refuse_config_typos

    # a typo fails every fit: refused here
    refuse_config_typos([p for e in entries for p in (e.config, e.overlay)], str(path))
    entries = [  # against the recipe's epochs: read once the config files are known to be sound
        replace(e, max_epochs=_max_epochs(raw_e["max_epochs"], recipe_epochs(e), f"{path}: entries[{i}] ({e.name})"))
        if raw_e.get("max_epochs") is not None else e
        for i, (e, raw_e) in enumerate(zip(entries, entries_raw))
    ]
    accepted = raw.get("compatible_code") or []
    return MQARStudy(
        path=str(path), name=raw["name"], records=raw["records"], out=raw["out"], entries=tuple(entries),
        learning_rates=rates, seed=seed, solved_at=None if solved_at is None else float(solved_at),
        compatible_code=tuple(str(c) for c in accepted),
        code_fingerprint=pinned_code(raw.get("code_fingerprint"), f"{path}: code_fingerprint"),
    )


def recipe_epochs(e: Entry) -> int | None:
    """The recipe's ``trainer.max_epochs`` of the entry's merged config (None: not set there)."""
    value = (merged_config(e, d_model=False).get("trainer") or {}).get("max_epochs")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _max_epochs(value: Any, recipe: int | None, where: str) -> int:
    """An entry's ``max_epochs``: an integer from 1 to the recipe's ``trainer.max_epochs``.

    Raises:
        StudyError: ``<where>: max_epochs=0; expected an integer from 1 to 64 (the recipe's
            trainer.max_epochs)``."""
    top = "" if recipe is None else f" to {recipe} (the recipe's trainer.max_epochs)"
    epochs = number(value, integer=True)
    if epochs is None or epochs < 1 or (recipe is not None and epochs > recipe):
        raise StudyError(f"{where}: max_epochs={value!r}; expected an integer from 1{top}")
    return epochs


def _rates(rates: Any, where: str) -> tuple[float, ...]:
    """``learning_rates`` as floats: a non-empty list of distinct positive finite numbers
    (``swar_bench.study.spec.number``: ``1e-3`` too, which YAML 1.1 reads as text).

    Raises:
        StudyError: ``<where>: learning_rates[1]='abc'; expected a positive number such as 1e-3``,
            or ``<where>: learning_rates=[...]; expected a non-empty list of distinct positive
            numbers``."""
    values = [number(r) for r in rates] if isinstance(rates, list) else []
    for i, (r, v) in enumerate(zip(rates, values)):
        if v is None or v <= 0:
            raise StudyError(f"{where}: learning_rates[{i}]={r!r}; expected a positive number such as 1e-3")
    if not values or len({lr_text(v) for v in values}) < len(values):
        raise StudyError(f"{where}: learning_rates={rates!r}; expected a non-empty list of distinct positive numbers")
    return tuple(values)


def solved_by(study: MQARStudy, e: Entry) -> dict[str, Any] | None:
    """The record of ``e`` that solved it (final accuracy ``>= study.solved_at``, the best such),
    or None (no ``solved_at``, or no record reached it)."""
    if study.solved_at is None:
        return None
    records = [r for lr in study.rates(e) if (r := read_fit(Path(study.records) / f"{run_name(e, lr)}.fit.json"))]
    solved = [r for r in records if r["accuracy"] is not None and math.isfinite(r["accuracy"]) and r["accuracy"] >= study.solved_at]
    return max(solved, key=lambda r: r["accuracy"], default=None)


def lr_text(lr: float) -> str:
    return f"{lr:.3g}"


def run_name(e: Entry, lr: float) -> str:
    return f"{e.name}_lr{lr_text(lr)}"


def _class(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def merged_config(e: Entry, d_model: bool = True) -> dict[str, Any]:
    """The entry's config with its overlay merged in (mappings merged key by key, as jsonargparse
    applies two ``--config`` files) and (``d_model``) its ``d_model`` set."""
    import yaml

    def merge(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            if "class_path" in b and b["class_path"] != a.get("class_path"):
                # another class: the earlier class's arguments that it does not take are dropped
                # (jsonargparse's rule when a later config changes class_path)
                import inspect

                accepted = inspect.signature(_class(b["class_path"])).parameters
                a = {**a, "init_args": {k: v for k, v in (a.get("init_args") or {}).items() if k in accepted}}
            return {**a, **{k: merge(a.get(k), v) for k, v in b.items()}}
        return b

    cfg = yaml.safe_load(Path(e.config).read_text())
    if e.overlay:
        cfg = merge(cfg, yaml.safe_load(Path(e.overlay).read_text()))
    if d_model:
        cfg["model"]["mechanism"]["init_args"]["mechanism"]["init_args"]["d_model"] = e.d_model
    return cfg


def entry_facts(e: Entry) -> dict[str, Any]:
    """``seq_len`` (T), ``state_bytes`` (float32 state of one sequence after T tokens: the mixers'
    state, a KV cache for attention, plus the position counter), ``n_params`` and ``mechanism``
    (the inner class) of the entry's model, built from its merged config."""
    cfg = merged_config(e)
    outer = cfg["model"]["mechanism"]
    inner = outer["init_args"]["mechanism"]

    args = {k: v for k, v in outer["init_args"].items() if k != "mechanism"}
    model = _class(outer["class_path"])(_class(inner["class_path"])(**inner.get("init_args", {})), **args)
    T = int(cfg["data"]["mqar"]["input_seq_len"])
    return {
        "seq_len": T,
        "state_bytes": int(model.state_bytes(1, T)),
        "n_params": int(model.n_params),
        "mechanism": inner["class_path"].rsplit(".", 1)[-1],
    }


def fit_args(study: MQARStudy, e: Entry, lr: float) -> list[str]:
    name = run_name(e, lr)
    out = Path(study.out)
    args = ["fit", "--config", e.config]
    if e.overlay:
        args += ["--config", e.overlay]
    return args + [
        f"--model.mechanism.init_args.mechanism.init_args.d_model={e.d_model}",
        f"--model.lr={lr!r}",
        f"--seed_everything={study.seed}",
        f"--trainer.logger.init_args.save_dir={out}",
        f"--trainer.logger.init_args.name={name}",
        f"--checkpoint.dirpath={out / name / 'checkpoints'}",
        *([f"--trainer.max_epochs={e.max_epochs}"] if e.max_epochs is not None else []),
    ]


def curve(run_dir: Path) -> list[dict[str, Any]]:
    """One row per validation: ``{"step", "tag", "value"}`` of the ``val/mqar/`` scalars."""
    return [{"step": s, "tag": t, "value": v} for s, t, v in scalar_history(run_dir, prefix="val/mqar/")]


def curve_text(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["step", "tag", "value"])
    for r in rows:
        writer.writerow([r["step"], r["tag"], f"{r['value']:.6g}"])
    return buf.getvalue()


class MQARRunner:
    """Runs an MQAR study's missing fits, ``jobs`` processes at once (``threads`` torch threads each)."""

    def __init__(self, study: MQARStudy, jobs: int = 1, threads: int = 1, rerun_stale: bool = False,
                 only: list[str] | None = None, log=say, log_error=say_error):
        self.study, self.jobs, self.threads = study, jobs, threads
        self.rerun_stale, self.log = rerun_stale, log  # progress (stdout)
        self.log_error = log_error  # a failed or refused fit, the study's stop (stderr)
        self.entries = list(study.entries) if only is None else [study.entry(n) for n in only]
        self.records, self.out = Path(study.records), Path(study.out)
        self.code, self.env = provenance.code_version(), provenance.environment()
        self.failed: list[str] = []
        self.refused: str | None = None  # a fit that refused its command (exit 2): no other fit starts
        self.stopped: int | None = None  # 130 / 143 once Ctrl-C or SIGTERM stopped the study: no fit starts
        self.children: set[subprocess.Popen] = set()
        self.lock = threading.Lock()

    def stop(self, status: int) -> None:
        """No fit starts from now on; the running ones get SIGINT (130) or SIGTERM (143) and stop
        as a fit does (a checkpoint the next ``run`` resumes from)."""
        with self.lock:
            self.stopped = self.stopped or status
            running = list(self.children)
        children.stop_all(running, status)

    def saved(self, name: str, command: str) -> dict[str, Any] | None:
        """The reusable record of ``name`` (same command, compatible code, its config files as
        they were: ``swar_bench.study.config_files``), else None.

        Raises:
            StudyError: a record of other code or of a config file changed since, without
                ``rerun_stale``."""
        record = read_fit(self.records / f"{name}.fit.json")
        if record is None or record.get("command") != command:
            return None
        return reusable(self.records / f"{name}.fit.json", record, compatible_code=self.study.compatible_code,
                        code_fingerprint=self.study.code_fingerprint, checkout_fingerprint=self.code["fingerprint"],
                        rerun_stale=self.rerun_stale)

    def fit(self, e: Entry, lr: float) -> dict[str, Any] | None:
        """The record of one run (reused, or trained now, resuming its ``last.ckpt`` when the
        same command was stopped before); None when it failed."""
        from swar_bench.utils.files import atomic_write_text

        name = run_name(e, lr)
        args = fit_args(self.study, e, lr)
        command = shlex.join(["swar-bench", *args])
        record = self.saved(name, command)
        if record is not None:
            return record
        if self.refused is not None or self.stopped is not None:
            return None
        if (solver := solved_by(self.study, e)) is not None:
            self.log(f"study: skip {name}: {e.name} is solved (accuracy {solver['accuracy']:.4f} at lr "
                     f"{lr_text(solver['lr'])}, solved_at {self.study.solved_at:g})")
            return None
        run_dir, marker = self.out / name, self.out / f"{name}.command"
        last = run_dir / "checkpoints" / "last.ckpt"
        hashes = config_hashes(args)  # the marker's second line (none in earlier versions' markers)
        kept = marker.read_text().splitlines() if marker.is_file() else []
        resumed = last.is_file() and kept[:1] == [command] and kept[1:] in ([], [json.dumps(hashes)])
        if not resumed:
            shutil.rmtree(run_dir, ignore_errors=True)
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(marker, command + "\n" + json.dumps(hashes) + "\n")
        log_path = self.out / f"{name}.fit.log"
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads), "MKL_NUM_THREADS": str(self.threads)}
        self.log(f"study: fit {name}{' (resumed from last.ckpt)' if resumed else ''}")
        start = time.monotonic()
        running = running_marker(self.out, name)  # `study status` says "running" while it is there
        with open(log_path, "a" if resumed else "w") as handle:
            # ends with this thread, which waits for it (swar_bench.study.children)
            if self.stopped is not None:
                return None
            with children.launch([*SWAR_BENCH, *args, *([f"--ckpt_path={last}"] if resumed else [])],
                                 stdout=handle, stderr=subprocess.STDOUT, env=env) as proc:
                with self.lock:
                    self.children.add(proc)
                    if self.stopped is not None:  # stopped while it started: it stops with the others
                        children.stop_all([proc], self.stopped)
                try:
                    atomic_write_text(running, f"{socket.gethostname()} {proc.pid}\n")
                    rc = proc.wait()
                except BaseException:  # as subprocess.call
                    proc.kill()
                    raise
                finally:
                    running.unlink(missing_ok=True)
                    with self.lock:
                        self.children.discard(proc)
        secs = time.monotonic() - start
        if rc != 0 and self.stopped is not None:  # stopped with the study: resumed by the next run
            return None
        if rc != 0:
            self.failed.append(name)
            if rc == BAD_INPUT:  # every other fit of the study would be refused alike
                self.refused = name
                tail = log_path.read_text(errors="replace").splitlines() if log_path.is_file() else []
                self.log_error(refusal_line(f"fit {name}", tail, log_path))
                return None
            self.log_error(f"study: fit {name} failed (exit {rc}); see {log_path}")
            if rc in (130, 143):  # a fit stopped by Ctrl-C or SIGTERM stops the study: no fit starts after it
                self.stop(rc)
                raise KeyboardInterrupt
            return None
        rows = curve(run_dir)
        acc = [r for r in rows if r["tag"] == "val/mqar/acc"]
        final_step = max((r["step"] for r in rows), default=-1)
        previous = read_fit(self.records / f"{name}.fit.json") if resumed else None
        record = {
            "kind": "mqar_fit", "entry": e.name, "d_model": e.d_model, "lr": lr, "seed": self.study.seed,
            "command": command, CONFIG_FILES: hashes, "code": self.code, "environment": self.env,
            "wall_s": round(secs + float((previous or {}).get("wall_s", 0.0)), 1), "resumed": resumed,
            **entry_facts(e),
            "epochs": len(acc),
            "accuracy": acc[-1]["value"] if acc else math.nan,
            "best_accuracy": max((r["value"] for r in acc), default=math.nan),
            "final": {r["tag"]: r["value"] for r in rows if r["step"] == final_step},
            "curve": f"{name}.curve.csv",
        }
        atomic_write_text(self.records / f"{name}.curve.csv", curve_text(rows))
        write_json(self.records / f"{name}.fit.json", record)
        self.log(f"study: fit {name}: {secs / 60:.1f} min, {plural(len(acc), 'epoch')}, accuracy {record['accuracy']:.4f}")
        return record

    def run(self) -> int:
        """Every missing run, rate by rate across the entries (an entry solved by then skips the
        rest, ``solved_at``); 0 when none failed, 1 when one did."""
        depth = max(len(self.study.rates(e)) for e in self.entries)
        plan = [(e, self.study.rates(e)[i]) for i in range(depth) for e in self.entries if i < len(self.study.rates(e))]
        for e, lr in plan:  # a stale record stops the study before anything runs
            self.saved(run_name(e, lr), shlex.join(["swar-bench", *fit_args(self.study, e, lr)]))
        from swar_bench.utils import interrupts

        pool = futures.ThreadPoolExecutor(max_workers=self.jobs)
        previous = interrupts.install(sigterm=True)  # SIGTERM stops the fits as Ctrl-C does
        try:
            for job in [pool.submit(self.fit, *job) for job in plan]:
                job.result()
        except (KeyboardInterrupt, interrupts.Terminated) as signalled:
            status = interrupts.stop_status(signalled)
            self.stop(status)
            pool.shutdown(wait=True, cancel_futures=True)
            how = interrupts.stop_words(signalled)
            self.log_error(f"study: {how}; `swar-bench study run {self.study.path}` continues from the records")
            return status
        finally:
            interrupts.restore(previous)
        pool.shutdown(wait=True)
        if self.refused is not None:
            self.log_error(f"study: stopped (exit {BAD_INPUT}: a run refused its command; fix what it names first); "
                     f"`swar-bench study run {self.study.path}` continues from the records")
            return BAD_INPUT
        return 1 if self.failed else 0
