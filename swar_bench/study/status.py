"""``swar-bench study status``: every run the protocol needs now, and where it stands.

The plan is the one ``run`` follows, computed from the records alone (a learning rate whose
selection fits are missing counts as unscored, so the plan shows the grid as it stands; the retry
of a non-learner is planned once every fit that decides it is recorded and none passed the gate).
A run is judged by ``run``'s rule (``Runner._record``): *done* (its record is there, made with the
same command by compatible code, its config files as they were), *stale* (a record of the same
command by other code, or one whose config file has changed since it ran,
``swar_bench.study.config_files``: ``run`` stops on it unless ``--rerun-stale``), *running* (its
run folder holds a live process marker on this host, or its SLURM task runs), *queued* (its
SLURM task waits in the queue), *failed* (a failure record) or *to do* (no record, or one made
with another command: the row says which arguments differ).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from swar_bench.study import provenance
from swar_bench.study.config_files import config_change
from swar_bench.study.launchers import queue_state, squeue_states
from swar_bench.study.records import read_record
from swar_bench.study.runner import Runner, running_marker
from swar_bench.study.spec import StudyError, StudySpec


def is_running(out: Path, name: str) -> bool:
    """Whether ``<out>/<name>.running`` names a live process: its pid answers on this host, or
    the marker is another host's (trusted: a cluster node's run)."""
    marker = running_marker(out, name)
    try:
        host, pid = marker.read_text().split()
    except (OSError, ValueError):
        return False
    if host != socket.gethostname():
        return True  # another machine's run: trust its marker
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    return True


def _queue(out: Path) -> dict[str, str] | None:
    """``squeue``'s states when a run of ``out`` was submitted to SLURM and ``squeue`` answers here;
    None otherwise (a submitted run then counts as running)."""
    if not (out.is_dir() and any(out.glob("*.slurm"))):
        return {}
    from swar_bench.utils.slurm_commands import SlurmCommandError

    try:
        return squeue_states()
    except (StudyError, SlurmCommandError):  # no SLURM here (the records copied off the cluster)
        return None


def command_change(recorded: object, planned: str) -> str:
    """Why a record made with another command is run again, in a few words: ``recorded with
    --model.mechanism.init_args.n_layers=1, now --model.mechanism.init_args.n_layers=2`` (at most
    two arguments each way)."""
    import shlex

    if not isinstance(recorded, str):
        return "its record names no command"
    try:
        old = shlex.split(recorded)
    except ValueError:
        return "its record's command cannot be read"
    new = shlex.split(planned)
    gone = [a for a in old if a not in new]
    added = [a for a in new if a not in old]

    def few(args: list[str]) -> str:
        return " ".join(args[:2]) + (f" (+{len(args) - 2} more)" if len(args) > 2 else "") if args else "nothing"

    if not gone and not added:
        return "recorded with the same arguments in another order"
    return f"recorded with {few(gone)}, now {few(added)}"


def run_rows(spec: StudySpec) -> list[tuple[str, str, str, str]]:
    """``(mechanism, "fit NAME" / "test NAME", state, why)`` for every planned run, in plan order;
    ``why`` is "" or what makes a record not count (``run``'s rule, ``Runner._record``)."""
    runner = Runner(spec, jobs=1, rerun_stale=True, dry_run=True, log=lambda line: None, log_error=lambda line: None)
    queue = _queue(runner.out)
    rows = []
    for m in spec.mechanisms:
        runner.planned = []
        runner.mechanism(m)
        for entry in runner.planned:
            kind, name = entry.split(" ", 1)
            record = read_record(runner.records / f"{name}.{kind}.json", kind)
            same = record is not None and record.get("command") == runner.commands[entry]
            why = ""
            compatible = same and provenance.compatible(record.get("code"), spec.compatible_code, spec.code_fingerprint)
            change = config_change(record) if compatible else None  # None for a record without config_files
            if compatible and change is None:
                state = "done"
            elif compatible:
                state = "stale"
                why = f"{change}; run --rerun-stale to run it again"
            elif same:
                code = record.get("code") or {}
                state = "stale"
                why = (f"made by other code, fingerprint {code.get('fingerprint')}; run --rerun-stale "
                       "or list its commit in compatible_code")
            elif (queued := queue_state(runner.out, kind, name, queue)) is not None:
                state = queued
            elif is_running(runner.out, name):
                state = "running"
            elif (runner.records / f"{name}.failed.json").is_file():
                state = "failed"
            else:
                state = "to do"
                why = "" if record is None else command_change(record.get("command"), runner.commands[entry])
            rows.append((m.name, entry, state, why))
    return rows


def run_states(spec: StudySpec) -> list[tuple[str, str, str]]:
    """``(mechanism, "fit NAME" / "test NAME", state)`` for every planned run, in plan order."""
    return [(m, entry, state) for m, entry, state, _ in run_rows(spec)]


def stale_runs(spec: StudySpec) -> list[tuple[str, str]]:
    """``(mechanism, run)`` for every planned run whose record is of other (incompatible) code."""
    return [(m, entry) for m, entry, state in run_states(spec) if state == "stale"]


def print_status(spec: StudySpec) -> int:
    """Print one line per planned run and a summary; 1 when a run has failed (as ``run``), else 0."""
    rows = run_rows(spec)
    width = max((len(e) for _, e, _, _ in rows), default=10)
    for _, entry, state, why in rows:
        print(f"{entry:<{width}}  {state}" + (f" ({why})" if why else ""))
    print(summary_line([state for _, _, state, _ in rows], "now"))
    return 1 if any(state == "failed" for _, _, state, _ in rows) else 0


def summary_line(states: list[str], planned: str = "") -> str:
    """The last line of ``study status``, the count of runs in each state (in the order of
    ``STATES``, then any other): ``study: 144 done, 2 running, 181 to do (327 runs planned now)``
    (``planned``: a word after "planned"; ``now`` for a plan that grows as results come in)."""
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    order = sorted(counts, key=lambda s: (STATES.index(s) if s in STATES else len(STATES), s))
    shown = ", ".join(f"{counts[s]} {s}" for s in order) or "nothing planned"
    return f"study: {shown} ({len(states)} run{'' if len(states) == 1 else 's'} planned{' ' + planned if planned else ''})"


STATES = ("done", "stale", "running", "started", "queued", "failed", "to do")
"""The states a run of ``study status`` can be in, in the order its summary line counts them."""
