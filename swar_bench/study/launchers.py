"""Where ``swar-bench study run`` runs its fits and tests: ``--launcher local`` or ``--launcher slurm``.

``local`` (the default) runs ``--jobs`` ``swar-bench fit`` / ``test`` processes at once on this
machine (``swar_bench.study.runner.Runner``).

``slurm`` submits every fit and test as one task of a SLURM job array, through submitit
(https://github.com/facebookincubator/submitit): one node, one process, the study file's
``slurm:`` resources (``swar_bench.study.slurm_spec.SlurmSpec``) with the command-line overrides. The
protocol is sequential per mechanism (learning-rate selection fits, then the other seeds, then
the tests), so ``run`` submits what the records make decidable now (across all mechanisms, one
array), waits until a task of the queue ends (it polls ``squeue`` every ``--poll-s`` seconds),
reads the records, submits what became decidable, and so on until the study is done; a task that
ended without its record (cancelled, failed, out of time without a checkpoint) is recorded as
failed, counts as a failed run for the rest of the protocol as it does locally, and is submitted
again by the next ``run``. Stopping ``run`` (Ctrl-C, a closed terminal) stops nothing in the
queue: the next ``run`` finds the queued tasks (``<out>/<run>.<kind>.slurm``, the job id of each
submitted run) and waits for them instead of submitting them twice. ``--no-wait`` submits what is
decidable now and exits, saying what to run once the queue has drained.

Requeue: each array asks for ``--requeue`` and for SIGUSR1 ``signal_delay_s`` before its time
limit. A fit's ``swar_bench.callbacks.slurm_requeue.SlurmRequeue`` saves ``hpc_ckpt_<k>.ckpt`` at
a batch boundary and runs ``scontrol requeue <array job>_<task>``; the requeued task (any requeue:
the signal, ``scontrol requeue``, a preemption with requeue, a node failure), like a task a later
``run`` submits again, resumes from the newest checkpoint of its run
(``swar_bench.runtime.slurm.newest_checkpoint``) when its attempt file holds the same command and
training code (``swar_bench.study.attempts``, as on this machine). A test starts again.

Inside a task, submitit's process runs :func:`run_task`, which runs the same ``swar-bench``
subprocess as the local launcher and writes the same records; the records stay the only state.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swar_bench.study.attempts import Attempts
from swar_bench.study.records import read_json, write_json
from swar_bench.study.runner import Runner, run_name, say, say_error
from swar_bench.study.slurm_spec import SlurmSpec, slurm_spec
from swar_bench.study.spec import MechanismSpec, StudyError, StudySpec
from swar_bench.utils import slurm_commands
from swar_bench.utils.argparsing import count_arg, positive_arg
from swar_bench.utils.slurm_commands import SlurmCommandError

LAUNCHERS = ("local", "slurm")

ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
    "RESIZING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "SPECIAL_EXIT",
})
"""``squeue`` states of a task that has not ended (``squeue --helpstate``): it may still write its record."""
WAITING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SPECIAL_EXIT"})
"""The active states of a task that waits to start (``study status`` says *queued*)."""


# ---------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One fit or test of the protocol: a task of a job array.

    Attributes:
        kind: ``"fit"`` or ``"test"``.
        mechanism: the mechanism's name in the study.
        lr: the learning rate; seed: the training seed; retry: the longer fit of a non-learner.
    """

    kind: str
    mechanism: str
    lr: float
    seed: int
    retry: bool = False

    @property
    def name(self) -> str:
        return run_name(MechanismSpec(name=self.mechanism), self.lr, self.seed, self.retry)

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def marker_path(out: Path, kind: str, name: str) -> Path:
    """``<out>/<run>.<kind>.slurm``: the job of a submitted run (JSON: job, kind, run, submitted),
    there from its submission until ``run`` has seen the task end."""
    return Path(out) / f"{name}.{kind}.slurm"


def read_marker(out: Path, kind: str, name: str) -> dict[str, Any] | None:
    try:
        return json.loads(marker_path(out, kind, name).read_text())
    except (OSError, ValueError):
        return None


def write_marker(out: Path, task: Task, job: str) -> None:
    from swar_bench.utils.files import atomic_write_text

    atomic_write_text(
        marker_path(out, task.kind, task.name),
        json.dumps({"job": job, "kind": task.kind, "run": task.name, "submitted": time.time()}) + "\n",
    )


# ---------------------------------------------------------------------------------------- the queue


def squeue_states(user: str | None = None) -> dict[str, str]:
    """``{job id: state}`` of every job of ``user`` (default: this user) that ``squeue`` still
    lists, array tasks one by one (``123_4``) and recently ended jobs with their final state
    (``--states=all``: until ``MinJobAge``).

    Raises:
        SlurmCommandError: ``squeue`` is not on PATH or fails (one line: ``SLURM's squeue failed
            (exit 1: squeue: fatal: ...)``, ``swar_bench.utils.slurm_commands``).
    """
    command = ["squeue", "--noheader", "--array", "--states=all", "--user", user or getpass.getuser(),
               "--format=%i|%T"]
    result = slurm_commands.run(command, timeout=120)
    states = {}
    for line in result.stdout.splitlines():
        job, _, state = line.strip().partition("|")
        if job:
            states[job] = state.split()[0] if state else "UNKNOWN"
    return states


def queue_state(out: Path, kind: str, name: str, states: dict[str, str] | None) -> str | None:
    """``"queued"`` / ``"running"`` for a submitted run whose task has not ended, else None.

    ``states`` is :func:`squeue_states`; None (no ``squeue`` here, e.g. the records copied off
    the cluster) trusts the marker: ``"running"``."""
    marker = read_marker(out, kind, name)
    if marker is None:
        return None
    if states is None:
        return "running"
    state = states.get(str(marker.get("job")))
    if state not in ACTIVE_STATES:
        return None
    return "queued" if state in WAITING_STATES else "running"


# ---------------------------------------------------------------------------------------- planning


class _PendingRecord(dict):
    """What the planner returns for a run that is not done: an empty (falsy) record, so that the
    protocol code treats it as "not passed"; :class:`_Planner` stops a mechanism at it."""


PENDING = _PendingRecord()


class _Pending(Exception):
    """A protocol step waits for runs that are not done."""


class _Planner(Runner):
    """The runs the protocol needs now: ``Runner``'s protocol over the records, where a run
    without a record is collected in ``needed`` instead of run, and a mechanism stops at the first
    step that waits for one. Runs in ``settled`` (tasks of this ``run`` that ended without a
    reusable record) count as failed, as a failed local run does."""

    def __init__(self, spec: StudySpec, settled: set[tuple[str, str]], **kwargs: Any):
        super().__init__(spec, jobs=1, log=lambda line: None, log_error=lambda line: None, **kwargs)
        self.settled = settled
        self.needed: list[Task] = []
        self.commands: dict[tuple[str, str], str] = {}

    def _record(self, name: str, kind: str, command: str) -> dict[str, Any] | None:
        self.commands[(kind, name)] = command
        return super()._record(name, kind, command)

    def _launch(self, kind: str, m: MechanismSpec, lr: float, seed: int, retry: bool) -> Any:
        task = Task(kind, m.name, lr, seed, retry)
        if task.key in self.settled:
            return None
        if task not in self.needed:
            self.needed.append(task)
        return PENDING

    def _parallel(self, calls: list) -> list:
        results = [call[0](*call[1:]) for call in calls]
        if any(r is PENDING for r in results):
            raise _Pending
        return results

    def plan(self) -> list[Task]:
        """The runs that can start now, in the protocol's order (every mechanism, or ``only``).

        Raises:
            StudyError: a record of other code and no ``rerun_stale`` (one line, as ``Runner``)."""
        for m in self.spec.mechanisms:
            if self.only is not None and m.name not in self.only:
                continue
            try:
                self.mechanism(m)
            except _Pending:
                pass
        return list(self.needed)


def plan(spec: StudySpec, settled: set[tuple[str, str]] | None = None, only: list[str] | None = None,
         rerun_stale: bool = False) -> tuple[list[Task], dict[tuple[str, str], str]]:
    """``(tasks, commands)``: the runs the protocol can start now from the records (see
    :class:`_Planner`) and the ``swar-bench`` command line of each run it looked at."""
    planner = _Planner(spec, settled or set(), only=only, rerun_stale=rerun_stale)
    return planner.plan(), planner.commands


# ---------------------------------------------------------------------------------------- inside a task


class _TaskRunner(Runner):
    """``Runner`` inside a SLURM task. A fit resumes as a local one does
    (``swar_bench.study.attempts``: same command, same training code, a readable checkpoint),
    whether its task was requeued (``SLURM_RESTART_COUNT`` > 0: the time limit, a preemption, a
    node failure) or submitted again by a later ``run`` (a cancelled or timed-out task); it
    resumes from the checkpoint with the most progress, by name (``hpc_ckpt_<k>.ckpt`` of a
    requeue among them), and the stopped attempt's log is kept as ``<run>.fit.log.<k>``."""

    def __init__(self, spec: StudySpec, restart: int, **kwargs: Any):
        super().__init__(spec, jobs=1, **kwargs)  # progress on stdout, a failure on stderr (runner.say)
        self.restart = restart

    def _resume_args(self, attempt: Attempts) -> list[str]:
        return [f"--ckpt_path={attempt.resume_from[0]}"]

    def _execute(self, args: list[str], log_path: Path, attempt: Attempts | None = None) -> tuple[int, float]:
        if attempt is not None and attempt.resume_from is not None and log_path.is_file():
            # keep the stopped attempt's log
            os.replace(log_path, log_path.with_name(f"{log_path.name}.{len(attempt.history) - 1}"))
        return super()._execute(args, log_path, attempt)


def _requeue_signal_seen(signum: int, frame: Any) -> None:
    print("study: SIGUSR1 received (the time limit nears, or a preemption): the fit saves a checkpoint and "
          "requeues this task", flush=True)


def run_task(spec: StudySpec, task: Task, threads: int, code: dict[str, Any], rerun_stale: bool) -> str:
    """One fit or test inside its SLURM task (what submitit runs); returns the record's path.

    SIGUSR1 (``--signal``) reaches every process of the task: this process notes it, and the
    ``swar-bench fit`` it runs saves a checkpoint and requeues the task. ``code`` is the code
    version of the ``run`` that submitted the task, written into the record as the local launcher
    does.

    Raises:
        RuntimeError: the run failed (its failure record is written; the task ends FAILED).
        swar_bench.study.runner.Stopped: the run was stopped (SIGTERM of a cancel or a requeue).
    """
    signal.signal(signal.SIGUSR1, _requeue_signal_seen)
    runner = _TaskRunner(spec, restart=int(os.environ.get("SLURM_RESTART_COUNT") or 0), threads=threads,
                         rerun_stale=rerun_stale)
    runner.code = code
    m = spec.mechanism(task.mechanism)
    record = (runner.fit if task.kind == "fit" else runner.test)(m, task.lr, task.seed, task.retry)
    if record is None:
        raise RuntimeError(f"{task} failed; see {Path(spec.records) / f'{task.name}.failed.json'}")
    return str(Path(spec.records) / f"{task.name}.{task.kind}.json")


# ---------------------------------------------------------------------------------------- the launcher


def sbatch_parameters(spec: StudySpec, slurm: SlurmSpec) -> dict[str, Any]:
    """The parameters of submitit's ``SlurmExecutor`` for the study's tasks: one node, one process,
    ``slurm``'s resources, ``--requeue`` and SIGUSR1 ``signal_delay_s`` before the time limit (the
    fit's requeue path; submitit's own default, USR2, is replaced)."""
    parameters: dict[str, Any] = {
        "job_name": f"study_{spec.name}",
        "time": slurm.time_min,
        "cpus_per_task": slurm.cpus_per_task,
        "nodes": 1,
        "ntasks_per_node": 1,
        "array_parallelism": slurm.array_parallelism,
        "signal_delay_s": slurm.signal_delay_s,
        "additional_parameters": {**slurm.additional_parameters, "requeue": True,
                                  "signal": f"USR1@{slurm.signal_delay_s}"},
    }
    if slurm.partition:
        parameters["partition"] = slurm.partition
    if slurm.gpus_per_task:
        parameters["gpus_per_task"] = slurm.gpus_per_task
    if slurm.mem_gb is not None:
        parameters["mem"] = f"{round(slurm.mem_gb * 1024)}M"
    return parameters


def submitit_submit(spec: StudySpec, slurm: SlurmSpec, threads: int, code: dict[str, Any],
                    rerun_stale: bool) -> Callable[[list[Task]], list[str]]:
    """A function that submits tasks as one job array through submitit's ``SlurmExecutor``
    (:func:`sbatch_parameters`) and returns their job ids (``<array>_<index>``, or ``<job>`` for a
    single task). Its files (the sbatch script, the pickled call, the task's stdout and stderr)
    go to ``<out>/slurm/<job>/``."""
    import submitit

    root = Path(spec.out).resolve() / "slurm"
    executor = submitit.SlurmExecutor(folder=root / "%j")
    executor.update_parameters(**sbatch_parameters(spec, slurm))

    def submit(tasks: list[Task]) -> list[str]:
        n = len(tasks)
        before = set(root.iterdir()) if root.is_dir() else None
        try:  # sbatch's failure in one line (SlurmCommandError), not the raw stderr submitit prints
            jobs = slurm_commands.quietly("sbatch", lambda: executor.map_array(
                run_task, [spec] * n, tasks, [threads] * n, [code] * n, [rerun_stale] * n))
        except SlurmCommandError:  # nothing was submitted: submitit's pickles and script go
            for path in (set(root.iterdir()) if root.is_dir() else set()) - (before or set()):
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            if before is None and root.is_dir() and not any(root.iterdir()):
                root.rmdir()
            raise
        return [str(job.job_id) for job in jobs]

    return submit


class SlurmLauncher:
    """``swar-bench study run --launcher slurm`` (see the module docstring).

    ``submit(tasks) -> job ids`` and ``states() -> {job id: state}`` are submitit and ``squeue``
    unless given (the tests give fakes); ``wait_for_change`` blocks until the queue may have moved
    (default: ``poll_s`` seconds, the polling interval of ``squeue``)."""

    def __init__(self, spec: StudySpec, slurm: SlurmSpec, only: list[str] | None = None, rerun_stale: bool = False,
                 wait: bool = True, poll_s: float = 30.0, log: Callable[[str], None] = say,
                 log_error: Callable[[str], None] = say_error,
                 submit: Callable[[list[Task]], list[str]] | None = None,
                 states: Callable[[], dict[str, str]] | None = None,
                 wait_for_change: Callable[[], None] | None = None):
        from swar_bench.study import provenance

        self.spec, self.slurm, self.only, self.rerun_stale = spec, slurm, only, rerun_stale
        self.wait, self.poll_s, self.log = wait, poll_s, log
        self.log_error = log_error  # a run that ended without its record, a stop (stderr)
        self.out, self.records = Path(spec.out), Path(spec.records)
        self.code = provenance.code_version()
        self._submit = submit
        self.states = states or squeue_states
        self.wait_for_change = wait_for_change or (lambda: time.sleep(self.poll_s))
        self.in_flight: dict[tuple[str, str], tuple[Task | None, str]] = {}
        self.settled: set[tuple[str, str]] = set()
        self.failed: list[str] = []
        self.commands: dict[tuple[str, str], str] = {}

    def submit(self, tasks: list[Task]) -> list[str]:
        if self._submit is None:
            self._submit = submitit_submit(self.spec, self.slurm, self.slurm.cpus_per_task, self.code,
                                           self.rerun_stale)
        return self._submit(tasks)

    def _rerun(self) -> str:
        return shlex.join(["swar-bench", "study", "run", self.spec.path, "--launcher", "slurm"])

    def _markers(self) -> dict[tuple[str, str], str]:
        found = {}
        for path in sorted(self.out.glob("*.slurm")) if self.out.is_dir() else []:
            try:
                marker = json.loads(path.read_text())
                found[(str(marker["kind"]), str(marker["run"]))] = str(marker["job"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    def _ended(self, key: tuple[str, str], job: str, state: str | None, during_run: bool) -> None:
        """A submitted run's task left the queue: done when its record is there, else failed
        (a failure record unless the task wrote one)."""
        kind, name = key
        marker_path(self.out, kind, name).unlink(missing_ok=True)
        if during_run:
            self.settled.add(key)
        if (self.records / f"{name}.{kind}.json").is_file():
            if during_run:
                self.log(f"study: {kind} {name} done (job {job})")
            return
        how = state or "ended"
        # the task's own failure record (a non-zero exit) is kept; the queue's word is added to it
        failure = read_json(self.records / f"{name}.failed.json")
        if failure is None:
            log = self.out / f"{name}.{kind}.log"
            tail = log.read_text(errors="replace").strip().splitlines()[-15:] if log.is_file() else []
            failure = {"kind": kind, "command": self.commands.get(key), "exit_status": None, "log_tail": tail,
                       "code": self.code}
        failure.pop("record_version", None)
        write_json(self.records / f"{name}.failed.json", {**failure, "slurm_job": job, "slurm_state": how})
        if during_run:
            self.failed.append(f"{kind} {name}")
            self.log_error(f"study: {kind} {name} ended {how} without a record (job {job}); see "
                     f"{self.out / f'{name}.{kind}.log'} and {self.out / 'slurm'}")
        else:
            self.log_error(f"study: {kind} {name}: its task (job {job}) ended {how} without a record; submitting it again")

    def _refresh(self, during_run: bool) -> None:
        """Read the queue: runs whose task ended leave ``in_flight``."""
        states = self.states()
        for key, job in self._markers().items():
            state = states.get(job)
            if state in ACTIVE_STATES:
                task = self.in_flight.get(key, (None, job))[0]
                self.in_flight[key] = (task, job)
            else:
                self.in_flight.pop(key, None)
                self._ended(key, job, state, during_run)
        for key in [k for k in self.in_flight if not marker_path(self.out, *k).is_file()]:
            del self.in_flight[key]

    def run(self) -> int:
        """Submit, wait and resubmit until the study is done (or, with ``wait=False``, submit what
        is decidable now); 0 done (or submitted), 1 a run failed, 130 interrupted while waiting.

        Raises:
            StudyError: a record of other code without ``rerun_stale``, ``squeue`` / ``sbatch``
                not found or failing (one line naming ``--launcher slurm``, :func:`slurm_refusal`;
                nothing more is submitted)."""
        try:
            return self._run()
        except SlurmCommandError as err:
            raise StudyError(slurm_refusal(err)) from None

    def _run(self) -> int:
        try:
            self._refresh(during_run=False)
            while True:
                tasks, commands = plan(self.spec, self.settled, self.only, self.rerun_stale)
                self.commands.update(commands)
                new = [t for t in tasks if t.key not in self.in_flight]
                if new:
                    for task in new:  # a failure record is of the attempt before this one
                        (self.records / f"{task.name}.failed.json").unlink(missing_ok=True)
                    self.out.mkdir(parents=True, exist_ok=True)
                    try:
                        jobs = self.submit(new)
                    except SlurmCommandError as err:
                        raise StudyError(slurm_refusal(err, f"submitting {len(new)} task(s): ")) from None
                    except Exception as err:  # noqa: BLE001 - submitit's other refusals, in one line
                        raise StudyError(f"--launcher slurm: submitting {len(new)} task(s) failed: "
                                         f"{' '.join(str(err).split())[:400]}") from None
                    for task, job in zip(new, jobs):
                        write_marker(self.out, task, job)
                        self.in_flight[task.key] = (task, job)
                    array = jobs[0].split("_")[0]
                    self.log(f"study: submitted job {array}: {len(new)} task(s): {', '.join(map(str, new))}")
                if not self.in_flight:
                    break
                if not self.wait:
                    self.log(f"study: {len(self.in_flight)} run(s) queued or running; once they have ended, "
                             f"`{self._rerun()}` submits the next step of the protocol "
                             f"(`swar-bench study status {self.spec.path}` reads the queue)")
                    return 0
                before = set(self.in_flight)
                while set(self.in_flight) == before:
                    self.wait_for_change()
                    self._refresh(during_run=True)
        except KeyboardInterrupt:
            self.log_error(f"study: stopped waiting; {len(self.in_flight)} run(s) stay in the queue; "
                     f"`{self._rerun()}` waits for them and continues")
            return 130
        if self.failed:
            self.log_error(f"study: {len(self.failed)} run(s) failed: {', '.join(self.failed)}; "
                     f"`{self._rerun()}` submits them again")
            return 1
        self.log("study: every run of the protocol is done")
        return 0


# ---------------------------------------------------------------------------------------- the command line


POLL_S = 30.0
"""Seconds between two reads of SLURM's queue when ``--poll-s`` is not given."""


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The launcher options of ``swar-bench study run``."""
    run.add_argument("--launcher", choices=LAUNCHERS, default="local",
                     help="local: --jobs processes on this machine; slurm: one SLURM job-array task per fit "
                          "and test (submitit), with the study's slurm: resources (default: local)")
    run.add_argument("--partition", default=None, help="slurm: the partition (default: the study's, else the "
                                                       "cluster's default)")
    run.add_argument("--time-min", type=count_arg(1, "(minutes)"), default=None, help="slurm: the time limit of each task, minutes")
    run.add_argument("--cpus-per-task", type=count_arg(1), default=None, help="slurm: CPUs of each task (its torch threads)")
    run.add_argument("--gpus-per-task", type=count_arg(0), default=None, help="slurm: GPUs of each task")
    run.add_argument("--mem-gb", type=positive_arg("a positive number of GB"), default=None,
                     help="slurm: memory of each task, GB")
    run.add_argument("--slurm-param", action="append", default=[], metavar="OPTION=VALUE",
                     help="slurm: another sbatch option for every task (repeatable), e.g. account=myproject, "
                          "or a flag, e.g. exclusive")
    run.add_argument("--no-wait", action="store_true",
                     help="slurm: submit what the protocol can start now and exit (run again to go on)")
    run.add_argument("--poll-s", type=positive_arg("a positive number of seconds"), default=None,
                     help=f"slurm: seconds between two reads of the queue (default {POLL_S:g})")


def slurm_options(spec: StudySpec, args: argparse.Namespace) -> SlurmSpec:
    """The study's ``slurm:`` resources with the command line's overrides.

    Raises:
        StudyError: a bad value (one line, as for the study file)."""
    extra: dict[str, Any] = {}
    for item in args.slurm_param:
        option, sep, value = item.partition("=")
        if not option.strip() or (sep and not value.strip()):
            raise StudyError(f"--slurm-param={item!r} is invalid; expected OPTION=VALUE (e.g. account=myproject) "
                             "or a flag OPTION (e.g. exclusive)")
        extra[option.strip()] = value.strip() if sep else True
    overrides = {"partition": args.partition, "time_min": args.time_min, "cpus_per_task": args.cpus_per_task,
                 "gpus_per_task": args.gpus_per_task, "mem_gb": args.mem_gb}
    if extra:
        overrides["additional_parameters"] = extra
    return slurm_spec(overrides, "command line", base=spec.slurm)


def slurm_refusal(err: SlurmCommandError, doing: str = "") -> str:
    """The one line of a SLURM command ``study run --launcher slurm`` could not use: ``--launcher
    slurm: SLURM's squeue failed (exit 1: squeue: fatal: ...); expected a SLURM login node where
    sbatch and squeue answer (or --launcher local)`` (``doing``: what it was doing, before)."""
    return (f"--launcher slurm: {doing}{err}; expected a SLURM login node where sbatch and squeue answer "
            "(or --launcher local)")


def check_launcher(args: argparse.Namespace) -> None:
    """Refuse, in one line and before anything is written or submitted, a SLURM launcher this
    machine cannot use (no ``sbatch`` or ``squeue`` on PATH, no submitit), a bad ``--poll-s``, or
    SLURM options without ``--launcher slurm``.

    Raises:
        StudyError: one line naming what is missing and what was expected."""
    if args.launcher != "slurm":
        given = [flag for flag, value in (("--partition", args.partition), ("--time-min", args.time_min),
                                          ("--cpus-per-task", args.cpus_per_task),
                                          ("--gpus-per-task", args.gpus_per_task), ("--mem-gb", args.mem_gb),
                                          ("--slurm-param", args.slurm_param), ("--no-wait", args.no_wait),
                                          ("--poll-s", args.poll_s))
                 if not (value is None or value is False or value == [])]  # 0 is given too (0 == False)
        if given:
            raise StudyError(f"{given[0]} is a SLURM option; expected --launcher slurm with it")
        return
    for tool in slurm_commands.TOOLS:
        if shutil.which(tool) is None:
            raise StudyError(slurm_refusal(SlurmCommandError(slurm_commands.missing(tool))))
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise StudyError("--launcher slurm needs submitit, which is not installed; expected "
                         "pip install 'swar_bench[slurm]'") from None

