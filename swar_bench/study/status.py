"""``swar-bench study status``: every run the protocol needs now, and where it stands.

The plan is the one ``run`` follows, computed from the records alone (a learning rate whose
selection fits are missing counts as unscored, so the plan shows the grid as it stands). A run
is *done* (its record is there, of compatible code), *stale* (a record of other code), *running*
(its run folder holds a live process marker on this host, or its SLURM task runs), *queued* (its
SLURM task waits in the queue), *failed* (a failure record) or *to do*.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from swar_bench.study import provenance
from swar_bench.study.launchers import queue_state, squeue_states
from swar_bench.study.records import read_json
from swar_bench.study.runner import Runner, running_marker
from swar_bench.study.spec import StudyError, StudySpec


def _running(out: Path, name: str) -> bool:
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
    try:
        return squeue_states()
    except StudyError:
        return None


def run_states(spec: StudySpec) -> list[tuple[str, str, str]]:
    """``(mechanism, "fit NAME" / "test NAME", state)`` for every planned run, in plan order."""
    runner = Runner(spec, jobs=1, rerun_stale=True, dry_run=True, log=lambda line: None)
    queue = _queue(runner.out)
    rows = []
    for m in spec.mechanisms:
        runner.planned = []
        runner.mechanism(m)
        for entry in runner.planned:
            kind, name = entry.split(" ", 1)
            record = read_json(runner.records / f"{name}.{kind}.json")
            if record is not None and provenance.compatible(
                record.get("code"), spec.compatible_code, spec.code_fingerprint
            ):
                state = "done"
            elif record is not None:
                state = "stale"
            elif (queued := queue_state(runner.out, kind, name, queue)) is not None:
                state = queued
            elif _running(runner.out, name):
                state = "running"
            elif (runner.records / f"{name}.failed.json").is_file():
                state = "failed"
            else:
                state = "to do"
            rows.append((m.name, entry, state))
    return rows


def stale_runs(spec: StudySpec) -> list[tuple[str, str]]:
    """``(mechanism, run)`` for every planned run whose record is of other (incompatible) code."""
    return [(m, entry) for m, entry, state in run_states(spec) if state == "stale"]


def print_status(spec: StudySpec) -> int:
    """Print one line per planned run and a summary; 1 when a run has failed (as ``run``), else 0."""
    rows = run_states(spec)
    width = max((len(e) for _, e, _ in rows), default=10)
    for _, entry, state in rows:
        print(f"{entry:<{width}}  {state}")
    print(summary_line([state for _, _, state in rows], "now"))
    return 1 if any(state == "failed" for _, _, state in rows) else 0


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
