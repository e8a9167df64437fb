"""``swar-bench study run``: the protocol of a study file, executed with the product's commands.

For each mechanism (in the study's order, ``jobs`` processes at once):

1. **Choose the learning rate**: fit every grid value on the selection seeds (0 .. k - 1), score each
   fit on its final validation (``protocol.selection_score``), take the best mean, and extend the
   grid by one value when the pick is at an edge (``protocol.choose_rate``).
2. **Train the other seeds** at the chosen rate. Seed ``s`` sets ``--seed_everything``,
   ``--data.seed`` and ``--data.train_index_start = s * seed_index_stride``: every seed has its
   own initialisation and its own training examples.
3. **Gate and test**: a seed whose final validation at the shortest training N passes the gate is
   tested at every test N; one that does not is recorded as "did not learn at this budget".
4. **Retry a non-learner**: when no selection fit passes the gate at any rate, one more fit at the
   chosen rate with ``retry_steps_factor`` x the steps (seed 0), tested if it passes.

A fit stopped part-way (Ctrl-C, SIGTERM, the machine stopped) resumes from its newest checkpoint
when the next ``run`` finds its attempt file with the same command and training code
(``swar_bench.study.attempts``); otherwise it starts afresh.

Every fit validates ``curve_points`` times (``--trainer.val_check_interval``) and its curve is kept.
A record is reused when its command is the same, its code is compatible
(``provenance.compatible``) and the config files it names say what they said when it ran
(``swar_bench.study.config_files``; a record that keeps no hashes of them is judged without);
a record of other code, or of a config file changed since, stops the run in one line unless
``rerun_stale`` is set.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

from swar_bench.study import children, protocol, provenance
from swar_bench.study.attempts import Attempts, drop_unresumable, plan_attempt
from swar_bench.study.commands import (  # noqa: F401 (the names other modules import from here)
    STALE_AFTER,
    SWAR_BENCH,
    Budget,
    command_text,
    fit_args,
    lr_text,
    mechanism_args,
    mechanism_class,
    mechanism_facts,
    read_budget,
    run_name,
    running_marker,
    test_args,
)
from swar_bench.study.config_files import KEY as CONFIG_FILES
from swar_bench.study.config_files import config_hashes, reusable
from swar_bench.study.records import (
    curve_csv,
    curve_rows,
    final_validation,
    read_csv_rows,
    read_fit,
    read_record,
    scalar_history,
    write_json,
)
from swar_bench.study.slots import Slots
from swar_bench.study.spec import MechanismSpec, StudySpec
from swar_bench.utils import interrupts

BAD_INPUT = 2
"""The exit status of a fit or test that refused its command line or config (``swar_bench.harness.errors``)."""


def refusal_line(run: str, log_lines: list[str], log_path: Path) -> str:
    """The study's line for a run that refused its command (exit ``BAD_INPUT``): the run's own error
    line (the last ``swar-bench: error: ...`` of its log), else where its log is."""
    said = next((ln for ln in reversed(log_lines) if ln.startswith("swar-bench: error:")), None)
    return (f"study: {run} refused its command (exit {BAD_INPUT}): "
            f"{said.removeprefix('swar-bench: error: ') if said else f'see {log_path}'}; "
            "no other run starts: fix the study file or its config files and run again")


def say(line: str) -> None:
    """A progress line of ``study run`` (``study: fit X: ...``): on stdout."""
    print(line, flush=True)


def say_error(line: str) -> None:
    """A line of ``study run`` that reports a failed, refused or stopped run, or the study's stop: on stderr."""
    print(line, file=sys.stderr, flush=True)


class Stopped(Exception):
    """The study was stopped (Ctrl-C, SIGTERM, or a run that exited 130 / 143)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class Runner:
    """Runs one study's missing fits and tests, ``jobs`` processes at once."""

    def __init__(
        self,
        spec: StudySpec,
        jobs: int = 2,
        threads: int = 1,
        rerun_stale: bool = False,
        only: list[str] | None = None,
        dry_run: bool = False,
        log=say,
        log_error=say_error,
    ):
        self.spec = spec
        self.budgets = {m.name: read_budget(spec, m) for m in spec.mechanisms}
        self.chosen: dict[str, float | None] = {}
        self.records = Path(spec.records)
        self.out = Path(spec.out)
        self.jobs, self.threads = jobs, threads
        self.rerun_stale = rerun_stale
        self.only = only
        self.dry_run = dry_run
        self.log = log  # progress (stdout)
        self.log_error = log_error  # a failed, refused or stopped run, the study's stop (stderr)
        self.slots = Slots(max(1, jobs))  # runs start in the protocol's order (swar_bench.study.slots)
        self.lock = threading.Lock()
        self.failed: list[str] = []
        self.children: set[subprocess.Popen] = set()
        self.stopped: int | None = None
        self.code = provenance.code_version()
        self.env = provenance.environment()
        self.planned: list[str] = []
        self.commands: dict[str, str] = {}  # "fit NAME" / "test NAME" -> its command (status compares records)
        self.started = 0  # fits and tests this run started

    # ----------------------------------------------------------------- records

    def _record(self, name: str, kind: str, command: str) -> dict[str, Any] | None:
        """The reusable ``<name>.<kind>.json``: same command, compatible code, and its config files
        as they were (``config_files``); None when it must run.

        Raises:
            StudyError: the record is of other code, or a config file of it has changed since
                (``swar_bench.study.config_files``), and ``rerun_stale`` is not set."""
        record = read_record(self.records / f"{name}.{kind}.json", kind)
        if record is None or record.get("command") != command:
            return None
        return reusable(self.records / f"{name}.{kind}.json", record, compatible_code=self.spec.compatible_code,
                        code_fingerprint=self.spec.code_fingerprint, checkout_fingerprint=self.code["fingerprint"],
                        rerun_stale=self.rerun_stale)

    # ----------------------------------------------------------------- processes

    def _execute(self, args: list[str], log_path: Path, attempt: Attempts | None = None) -> tuple[int, float]:
        """Run ``swar-bench <args>`` (output to ``log_path``; appended to when ``attempt`` resumes)
        when a slot is free: ``(exit status, wall seconds)``; ``attempt`` records its start and
        its wall time (``swar_bench.study.attempts``).

        Raises:
            Stopped: the study was stopped, or the run exited 130 / 143."""
        with self.slots.hold():
            with self.lock:
                if self.stopped is not None:
                    raise Stopped(self.stopped)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            env = {
                **os.environ,
                "OMP_NUM_THREADS": str(self.threads),
                "MKL_NUM_THREADS": str(self.threads),
                "OMP_WAIT_POLICY": "PASSIVE",
            }
            if attempt is not None:  # the attempt file first: a run marked running has one
                attempt.begin()
            marker = running_marker(log_path.parent, log_path.with_suffix("").stem)
            marker.write_text(f"{socket.gethostname()} {os.getpid()}\n")
            start = time.monotonic()
            with self.lock:
                self.started += 1
            resuming = attempt is not None and attempt.resume_from is not None
            with open(log_path, "a" if resuming else "w") as handle:
                # ends with this thread, which waits for it (swar_bench.study.children)
                proc = children.launch(
                    [*SWAR_BENCH, *args], stdout=handle, stderr=subprocess.STDOUT, env=env
                )
                with self.lock:
                    self.children.add(proc)
                try:
                    marker.write_text(f"{socket.gethostname()} {proc.pid}\n")  # the run's own pid
                    rc = proc.wait()
                finally:
                    with self.lock:
                        self.children.discard(proc)
                    marker.unlink(missing_ok=True)
                    if attempt is not None:
                        attempt.end(time.monotonic() - start)
            if rc in (130, 143) or rc in (-2, -15):
                self.stop(rc if rc > 0 else 128 - rc)
                raise Stopped(self.stopped)
            if rc == BAD_INPUT:
                with self.lock:  # before the slot is free: the run waiting for it must not start
                    self.stopped = BAD_INPUT if self.stopped is None else self.stopped
            return rc, time.monotonic() - start

    def stop(self, status: int) -> None:
        """No run starts from now on; the running ones get SIGINT (130) or SIGTERM (143)."""
        with self.lock:
            if self.stopped is None:
                self.stopped = status
            running = list(self.children)
        children.stop_all(running, status)

    def _failed(self, name: str, kind: str, command: str, rc: int, log_path: Path) -> None:
        """Record a run that failed (``<name>.failed.json``: command, exit status, log tail).

        Raises:
            Stopped: (status 2) the run refused its command (exit 2: a bad value in the study's
                config files or ``init_args``, ``swar_bench.harness.errors``): every other run
                of the study would be refused alike, so none starts from now on (the running
                ones finish), and no learning rate is chosen from refusals."""
        tail = (
            log_path.read_text(errors="replace").strip().splitlines()[-15:]
            if log_path.is_file()
            else []
        )
        write_json(
            self.records / f"{name}.failed.json",
            {
                "kind": kind,
                "command": command,
                "exit_status": rc,
                "log_tail": tail,
                "code": self.code,
                "environment": self.env,
            },
        )
        with self.lock:
            self.failed.append(f"{kind} {name}")
        if rc == BAD_INPUT:  # _execute has stopped the study: no run starts from now on, the running ones finish
            self.log_error(refusal_line(f"{kind} {name}", tail, log_path))
            raise Stopped(BAD_INPUT)
        self.log_error(f"study: {kind} {name} failed (exit {rc}); see {log_path}")

    # ----------------------------------------------------------------- fits and tests

    def _launch(self, kind: str, m: MechanismSpec, lr: float, seed: int, retry: bool) -> Any:
        """Where a launcher takes over a ``kind`` run ("fit" / "test") that has no reusable
        record: what ``fit`` / ``test`` return instead of running it here. ``NotImplemented``
        (here): run it in this process's pool (``swar_bench.study.launchers``)."""
        return NotImplemented

    def _resume_args(self, attempt: Attempts) -> list[str]:
        """The options that make a fit resume ``attempt``'s checkpoint: ``--ckpt_path=last`` (the
        fit takes the most progress of its checkpoint folder and completes a save a kill cut short,
        ``swar_bench.harness.run_folders``)."""
        return ["--ckpt_path=last"]

    def _fresh(self, name: str) -> None:
        """Before a fit that does not resume: nothing of an earlier attempt is reused (its run folder goes). Its
        records stay until the new fit has succeeded (a failed ``--rerun-stale`` fit leaves the old pair whole)."""
        shutil.rmtree(self.out / name, ignore_errors=True)

    def fit(
        self, m: MechanismSpec, lr: float, seed: int, retry: bool = False, again: bool = False
    ) -> dict[str, Any] | None:
        """The fit record of one run (reused or made; ``again``: made, its record kept until the new
        fit has succeeded); None when it failed or in a dry run."""
        name = run_name(m, lr, seed, retry)
        budget = self.budgets[m.name]
        args = fit_args(self.spec, budget, m, lr, seed, retry)
        command = command_text(args)
        with self.lock:
            self.planned.append(f"fit {name}")
            self.commands[f"fit {name}"] = command
        saved = None if again else self._record(name, "fit", command)
        if saved is not None or self.dry_run:
            return saved
        launched = self._launch("fit", m, lr, seed, retry)
        if launched is not NotImplemented:
            return launched
        run_dir = self.out / name
        hashes = config_hashes(args)  # the config files as this attempt reads them
        attempt = plan_attempt(run_dir, command, self.code["fingerprint"], hashes)
        if attempt.resume_from is None:
            self._fresh(name)
            run_args = args
        else:  # the command as recorded, the resume option only on this attempt's command line
            self.log(f"study: fit {name}: resuming from step {attempt.resume_from[1]}")
            run_args = [*args, *self._resume_args(attempt)]
        try:
            rc, _ = self._execute(run_args, self.out / f"{name}.fit.log", attempt)
        except Stopped:
            drop_unresumable(run_dir)  # nothing to resume: no folder left holding only its attempt file
            raise
        if rc != 0:
            attempt.forget()  # a failure is not resumed: the next run starts it afresh
            drop_unresumable(run_dir)  # its log, <out>/<run>.fit.log, stays
            self._failed(name, "fit", command, rc, self.out / f"{name}.fit.log")
            return None
        secs = attempt.wall_s
        rows = curve_rows(scalar_history(run_dir))
        (self.records / f"{name}.curve.csv").parent.mkdir(parents=True, exist_ok=True)
        from swar_bench.utils.files import atomic_write_text

        atomic_write_text(self.records / f"{name}.curve.csv", curve_csv(rows))
        step, val = final_validation(rows)
        gate_n = budget.gate_n
        ar_valid = val.get(f"ar_valid/n{gate_n}", math.nan)
        passkey_exact = val.get(f"passkey_exact/n{gate_n}", math.nan)
        tokens = _tokens_seen(run_dir / "checkpoints" / "last.ckpt")
        facts = mechanism_facts(m)
        record = {
            "kind": "fit",
            "mechanism": m.name,
            "lr": lr,
            "seed": seed,
            "retry": retry,
            "command": command,
            CONFIG_FILES: hashes,
            "code": self.code,
            "environment": self.env,
            "wall_s": round(secs, 1),
            **({"resumed_from_step": attempt.resumed_from_steps} if attempt.resumed_from_steps else {}),
            "tokens": tokens,
            "train_flops": 3.0 * facts["flops_per_token"] * tokens,
            **facts,
            "final_step": step,
            "validation": val,
            "score": protocol.selection_score(val, budget.val_n),
            "gate": {
                "n_writes": gate_n,
                "ar_valid": ar_valid,
                "passkey_exact": passkey_exact,
                "passed": self.spec.gate.passes(ar_valid, passkey_exact),
            },
            "curve": f"{name}.curve.csv",
        }
        (self.records / f"{name}.failed.json").unlink(missing_ok=True)
        (self.records / f"{name}.test.json").unlink(missing_ok=True)  # of the old checkpoint: only now it goes
        write_json(self.records / f"{name}.fit.json", record)
        self.log(
            f"study: fit {name}: {secs / 60:.1f} min, score {record['score']:.3f}, "
            f"gate {'passed' if record['gate']['passed'] else 'not passed'}"
        )
        return read_fit(self.records / f"{name}.fit.json")

    def test(
        self, m: MechanismSpec, lr: float, seed: int, retry: bool = False
    ) -> dict[str, Any] | None:
        name = run_name(m, lr, seed, retry)
        args = test_args(self.spec, m, lr, seed, retry)
        command = command_text(args)
        with self.lock:
            self.planned.append(f"test {name}")
            self.commands[f"test {name}"] = command
        saved = self._record(name, "test", command)
        if saved is not None or self.dry_run:
            return saved
        launched = self._launch("test", m, lr, seed, retry)
        if launched is not NotImplemented:
            return launched
        # a fit record from another machine without its checkpoint: trained again here (its record kept till then)
        if not (self.out / name / "checkpoints" / "last.ckpt").is_file() and self.fit(m, lr, seed, retry,
                                                                                     again=True) is None:
            return None
        shutil.rmtree(self.out / name / "test", ignore_errors=True)
        hashes = config_hashes(args)
        rc, secs = self._execute(args, self.out / f"{name}.test.log")
        if rc != 0:
            self._failed(name, "test", command, rc, self.out / f"{name}.test.log")
            return None
        test_dir = self.out / name / "test"
        accuracy = [
            [int(r["n_writes"]), r["answer_type"], int(r["count"]), int(r["correct"])]
            for r in read_csv_rows(test_dir / "answer_type_accuracy.csv")
        ]
        ages = [
            [
                int(r["n_writes"]),
                r["key_age_bin"],
                int(r["age_lo"]),
                int(r["age_hi"]),
                int(r["count"]),
                int(r["correct"]),
            ]
            for r in read_csv_rows(test_dir / "accuracy_by_key_age.csv")
        ]
        record = {
            "kind": "test",
            "mechanism": m.name,
            "lr": lr,
            "seed": seed,
            "retry": retry,
            "command": command,
            CONFIG_FILES: hashes,
            "code": self.code,
            "environment": self.env,
            "wall_s": round(secs, 1),
            "accuracy": accuracy,
            "accuracy_by_key_age": ages,
        }
        (self.records / f"{name}.failed.json").unlink(missing_ok=True)
        write_json(self.records / f"{name}.test.json", record)
        self.log(f"study: test {name}: {secs / 60:.1f} min")
        return record

    # ----------------------------------------------------------------- the protocol

    def _parallel(self, calls: list) -> list:
        if not calls:
            return []
        tickets = [self.slots.ticket() for _ in calls]  # in the list's order, before any thread starts

        def call(c: tuple, ticket: int) -> Any:
            self.slots.reserve(ticket)
            try:
                return c[0](*c[1:])
            finally:
                self.slots.give_up()  # a call that started no process (a reused record) frees its turn

        with futures.ThreadPoolExecutor(len(calls)) as pool:
            return list(pool.map(call, calls, tickets))

    def passed(self, record: dict[str, Any] | None) -> bool:
        """Whether a fit record passes the study's gate now (:func:`protocol.gate_passed`)."""
        return protocol.gate_passed(self.spec.gate, record)

    def rates(self, m: MechanismSpec) -> tuple[list[float], tuple[float, ...], tuple[float, ...]] | None:
        """``(grid, below, above)`` of ``m``: its own grid and the study's extensions, or, for an
        arm with ``learning_rate_from``, the one rate its source chose (None while that is
        undecided: the source's selection has not finished)."""
        if m.learning_rate_from is None:
            return list(self.spec.grid_of(m)), self.spec.extra_below, self.spec.extra_above
        if m.learning_rate_from not in self.chosen:
            planned = self.planned
            self.planned = []  # the source's runs are listed under the source
            self.mechanism(self.spec.mechanism(m.learning_rate_from))
            self.planned = planned
        chosen = self.chosen.get(m.learning_rate_from)
        return None if chosen is None else ([chosen], (), ())

    def mechanism(self, m: MechanismSpec) -> None:
        rates = self.rates(m)
        if rates is None:
            self.log(f"study: {m.name}: waits for the learning rate of {m.learning_rate_from}, not chosen yet")
            return
        grid, below, above = rates
        seeds = self.spec.seeds_of(m)
        chosen_seeds = seeds[: self.spec.selection_seeds]
        fits: dict[tuple[float, int], dict | None] = {}

        def score_of(lr: float) -> float | None:
            if any((lr, s) not in fits for s in chosen_seeds):
                return None
            return protocol.mean_score(
                [
                    math.nan if fits[(lr, s)] is None else _num(fits[(lr, s)]["score"])
                    for s in chosen_seeds
                ]
            )

        while True:
            chosen, used, complete = protocol.choose_rate(grid, below, above, score_of)
            if complete:
                break
            todo = [(lr, s) for lr in used for s in chosen_seeds if (lr, s) not in fits]
            results = self._parallel([(self.fit, m, lr, s) for lr, s in todo])
            fits.update(zip(todo, results))  # a failed fit scores 0 beside fits that finished
            if not self.dry_run and all(r is None for r in fits.values()) and (len(grid) > 1 or below or above):
                # not one fit finished: a rate chosen (or a grid extended) from failures alone would be noise
                # (a grid of one rate without extensions chooses nothing: its other seeds still run)
                self.log_error(f"study: {m.name}: every selection fit failed; no learning rate is chosen from "
                         f"failures alone (their .failed.json records in {self.records} say why)")
                with self.lock:
                    self.chosen[m.name] = None
                return
            if self.dry_run and any(r is None for r in results):
                # a dry run guesses nothing: a missing selection fit leaves the rate open, and the
                # plan ends with the fits that would decide it
                with self.lock:
                    self.chosen[m.name] = None
                return
        with self.lock:
            self.chosen[m.name] = chosen
        rest = [s for s in seeds if (chosen, s) not in fits]
        fits.update(
            zip(
                [(chosen, s) for s in rest],
                self._parallel([(self.fit, m, chosen, s) for s in rest]),
            )
        )
        passed = [s for s in seeds if self.passed(fits.get((chosen, s)))]
        self._parallel([(self.test, m, chosen, s) for s in passed])
        # a dry run plans the retry once every fit that decides it is recorded (and none passed)
        decided = not self.dry_run or all(r is not None for r in fits.values())
        if decided and protocol.retry_due(self.spec.gate, list(fits.values())):
            retry = self.fit(m, chosen, 0, retry=True)
            if self.passed(retry):
                self.test(m, chosen, 0, retry=True)

    def run(self) -> int:
        """Run every mechanism (or those in ``only``); 0 when all finished, 1 when any failed."""
        mechs = [m for m in self.spec.mechanisms if self.only is None or m.name in self.only]
        # check for stale records before anything runs: one line, nothing started
        for m in mechs:
            for lr in self.spec.grid_of(m) + self.spec.extra_below + self.spec.extra_above:
                for s in self.spec.seeds_of(m):
                    for retry in (False, True):
                        name = run_name(m, lr, s, retry)
                        self._record(
                            name,
                            "fit",
                            command_text(fit_args(self.spec, self.budgets[m.name], m, lr, s, retry)),
                        )
                        self._record(
                            name, "test", command_text(test_args(self.spec, m, lr, s, retry))
                        )
        # two waves: the mechanisms that choose their own rate (and the sources of the selected
        # arms that borrow one), then the arms that run at a source's chosen rate
        sources = {m.learning_rate_from for m in mechs if m.learning_rate_from}
        first = [m for m in self.spec.mechanisms
                 if m.learning_rate_from is None and (m in mechs or m.name in sources)]
        second = [m for m in mechs if m.learning_rate_from is not None]
        pool = futures.ThreadPoolExecutor(max(1, self.jobs))
        previous = interrupts.install(sigterm=True)  # SIGTERM stops the fits as Ctrl-C does
        try:
            for wave in (first, second):
                for job in [pool.submit(self.mechanism, m) for m in wave]:
                    job.result()
        except Stopped as stop:
            pool.shutdown(wait=True, cancel_futures=True)
            refused = ": a run refused its command; fix what it names first" if stop.status == BAD_INPUT else ""
            self.log_error(
                f"study: stopped (exit {stop.status}{refused}); `swar-bench study run {self.spec.path}` continues "
                "from the records"
            )
            return stop.status
        except (KeyboardInterrupt, interrupts.Terminated) as signalled:
            status = interrupts.stop_status(signalled)
            self.stop(status)
            pool.shutdown(wait=True, cancel_futures=True)
            how = interrupts.stop_words(signalled)
            self.log_error(
                f"study: {how}; `swar-bench study run {self.spec.path}` continues from the records"
            )
            return status
        finally:
            interrupts.restore(previous)
        pool.shutdown(wait=True)
        if self.failed:
            self.log_error(f"study: {len(self.failed)} run(s) failed: {', '.join(self.failed)}")
            return 1
        if not self.started and not self.dry_run:
            self.log(f"study: nothing to run: every fit and test the protocol needs now is in {self.records}")
        return 0


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)


def _tokens_seen(ckpt: Path) -> int:
    from swar_bench.runtime.checkpoint_io import load_checkpoint

    state = load_checkpoint(ckpt)
    return int(state.get("tokens_seen", 0))
