"""A study's records: one JSON file per finished fit and test, a CSV validation curve per fit.

    <records>/<run>.fit.json    command, code, environment, wall time, tokens, FLOPs, final
                                validation accuracies, selection score, gate
    <records>/<run>.curve.csv   step,n_writes,answer_type,accuracy (every validation of the fit)
    <records>/<run>.test.json   command, code, environment, wall time, accuracy per N and answer
                                type (count, correct), accuracy per key-age bin
    <records>/<run>.failed.json a fit or test that exited non-zero (exit status, log tail)

A fit or test record also keeps ``config_files``, ``{path: content hash}`` of each ``--config``
file its command reads (``swar_bench.study.config_files``); records of earlier versions have none.

Records are the study's only state: tables, figures and the site are functions of them, and
``swar-bench study run`` continues from them on any machine. Every file is written atomically.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from swar_bench.utils.files import atomic_write_text

RECORD_VERSION = 1


def _nan_safe(value: Any) -> Any:
    """JSON has no NaN: unobserved accuracies are stored as null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_safe(v) for v in value]
    return value


RECORD_SUFFIXES = (".fit.json", ".test.json", ".failed.json", ".curve.csv")
"""The endings of a record's file name (``<run>`` + one of them)."""


def record_problem(path: Path, what: str) -> str | None:
    """One line refusing to write ``what`` at ``path`` when an existing record is there (its name
    ends as a record's, or it is a JSON object with ``record_version``); None otherwise."""
    if not path.is_file():
        return None
    is_record = path.name.endswith(RECORD_SUFFIXES)
    if not is_record and path.suffix == ".json":
        try:
            is_record = "record_version" in json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError, TypeError):
            is_record = False
    if not is_record:
        return None
    return f"{path} is a record of the study; expected {what} at a name that is no record (another --out)"


def write_json(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` atomically, keys sorted (a rewrite of the same record changes no byte)."""
    atomic_write_text(
        path,
        json.dumps(
            _nan_safe({"record_version": RECORD_VERSION, **record}), indent=1, sort_keys=True
        )
        + "\n",
    )


class CorruptRecord(ValueError):
    """A record file that is there but cannot be read as the record it names (not JSON, not an
    object, a frontier test record whose accuracy rows are not ``[N, kind, count, correct]``,
    :func:`check_accuracy_rows`): a fault of the data (exit 1), not of the command line."""


def _accuracy_rows_problem(record: dict[str, Any]) -> str | None:
    """Why a test record's ``accuracy`` is not a list of ``[N, kind, count, correct]`` rows (ints,
    a kind name, 0 <= correct <= count), else None."""
    rows = record.get("accuracy", [])
    if not isinstance(rows, list):
        return f"accuracy is a {type(rows).__name__}, expected a list of [N, kind, count, correct] rows"
    for row in rows:
        ok = (isinstance(row, list) and len(row) == 4 and isinstance(row[1], str)
              and all(isinstance(v, int) and not isinstance(v, bool) for v in (row[0], row[2], row[3]))
              and 0 <= row[3] <= row[2])
        if not ok:
            return f"accuracy row {json.dumps(row)[:80]} is not [N, kind, count, correct] with 0 <= correct <= count"
    return None


def read_json(path: Path) -> dict[str, Any] | None:
    """The record at ``path``; None when there is none.

    Raises:
        CorruptRecord: (a ValueError) the file is there but is not a JSON object (one line naming it).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise CorruptRecord(f"record {path} is not UTF-8 text (byte {err.start}); delete it or restore it from "
                            "version control") from None
    try:
        record = json.loads(text)
    except ValueError:
        raise CorruptRecord(
            f"record {path} is not JSON; delete it or restore it from version control"
        ) from None
    if not isinstance(record, dict):
        msg = f"record {path} is not a JSON object; delete it or restore it from version control"
        raise CorruptRecord(msg)
    return record


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


FIT_FIELDS: dict[str, tuple[str, Any]] = {
    "score": ("null or an accuracy in [0, 1]", lambda v: v is None or _is_number(v) and 0 <= v <= 1),
    "accuracy": ("an accuracy in [0, 1]", lambda v: _is_number(v) and 0 <= v <= 1),  # MQAR: never unobserved
    "best_accuracy": ("an accuracy in [0, 1]", lambda v: _is_number(v) and 0 <= v <= 1),
    "lr": ("a positive learning rate", lambda v: _is_number(v) and v > 0),
    "state_bytes": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "n_params": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "seq_len": ("an integer >= 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "epochs": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "flops_per_token": ("null or a number >= 0", lambda v: v is None or _is_number(v) and v >= 0),
    "curve": ("the file name of the run's curve", lambda v: isinstance(v, str) and v != ""),
}
"""The fields of a fit record (frontier ``kind: fit``, MQAR ``kind: mqar_fit``) the status,
report and site read, each with what it holds and its test; checked when present."""

GATE_FIELDS: dict[str, tuple[str, Any]] = {
    "ar_valid": ("null or an accuracy in [0, 1]", FIT_FIELDS["score"][1]),
    "passkey_exact": ("null or an accuracy in [0, 1]", FIT_FIELDS["score"][1]),
    "passed": ("true or false", lambda v: isinstance(v, bool)),
}
"""The fields of a frontier fit record's ``gate`` (the learned gate at the read-out N)."""


def fit_record_problem(record: dict[str, Any]) -> str | None:
    """Why a fit record's fields are not what a fit writes (an accuracy of 7.5, a state of -128
    bytes, a gate that is no mapping), else None. Fields that are absent are not checked."""
    for fields, node, lead in ((FIT_FIELDS, record, ""), (GATE_FIELDS, record.get("gate"), "gate.")):
        if lead and node is None:
            continue
        if not isinstance(node, dict):
            return f"gate is {json.dumps(node)[:40]}, expected a mapping of ar_valid, passkey_exact, passed"
        for key, (expected, ok) in fields.items():
            if key in node and not ok(node[key]):
                return f"{lead}{key} is {json.dumps(node[key])[:40]}, expected {expected}"
    return None


def read_fit(path: Path) -> dict[str, Any] | None:
    """The fit record at ``path`` (:func:`read_json`), None when there is none.

    Raises:
        CorruptRecord: the file is not a JSON object, or a field the reports read is out of its
            range or of another type (:func:`fit_record_problem`); one line naming the file.
    """
    record = read_json(path)
    problem = None if record is None else fit_record_problem(record)
    if problem is not None:
        raise CorruptRecord(f"record {path}: {problem}; delete it or restore it from version control")
    return record


def read_record(path: Path, kind: str) -> dict[str, Any] | None:
    """The ``kind`` record at ``path`` (``fit``: :func:`read_fit`; ``test``: its accuracy rows checked,
    :func:`check_accuracy_rows`); None when there is none. Raises CorruptRecord as those do."""
    if kind == "fit":
        return read_fit(path)
    record = read_json(path)
    return check_accuracy_rows(record, path) if kind == "test" else record


def check_accuracy_rows(record: dict[str, Any] | None, path: Path) -> dict[str, Any] | None:
    """``record`` (a test record of a study of the fair protocol, read from ``path``) unchanged when
    its ``accuracy`` rows are ``[N, kind, count, correct]``; else CorruptRecord naming the file."""
    problem = None if record is None else _accuracy_rows_problem(record)
    if problem is not None:
        raise CorruptRecord(f"record {path}: {problem}; delete it or restore it from version control")
    return record


def _written_order(path: Path) -> list[Any]:
    """Sort key of an event file: its path with every run of digits compared as a number, so
    ``version_2`` (a second resume) comes before ``version_10`` and, in one folder, a file of an
    earlier start time (``events.out.tfevents.<unix time>.<host>...``) before a later one."""
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"([0-9]+)", path.as_posix()))]


def scalar_history(log_dir: Path, prefix: str = "val/acc/") -> list[tuple[int, str, float]]:
    """``(step, tag, value)`` of every scalar whose tag starts with ``prefix`` in the TensorBoard
    event files under ``log_dir``, sorted by step and tag. The files are read in the order they
    were written (a resumed fit logs into a new ``version_N`` folder): a step logged twice (by a
    stopped attempt after its last checkpoint, and again by the attempt that resumed from it)
    keeps its later value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows: dict[tuple[int, str], float] = {}
    found = list(log_dir.rglob("events.out.tfevents.*"))
    for events in sorted(found, key=lambda p: _written_order(p.relative_to(log_dir))):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            if tag.startswith(prefix):
                for event in acc.Scalars(tag):
                    rows[(event.step, tag)] = float(event.value)
    return [(step, tag, value) for (step, tag), value in sorted(rows.items())]


def curve_rows(history: list[tuple[int, str, float]]) -> list[tuple[int, int, str, float]]:
    """``val/acc/<kind>/n<N>`` scalars as ``(step, N, kind, accuracy)`` rows."""
    out = []
    for step, tag, value in history:
        parts = tag.split("/")
        if len(parts) == 4 and parts[3].startswith("n") and parts[3][1:].isdigit():
            out.append((step, int(parts[3][1:]), parts[2], value))
    return out


def curve_csv(rows: list[tuple[int, int, str, float]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["step", "n_writes", "answer_type", "accuracy"])
    for step, n, kind, value in rows:
        writer.writerow([step, n, kind, "nan" if math.isnan(value) else f"{value:.6g}"])
    return buf.getvalue()


def read_curve(path: Path) -> list[tuple[int, int, str, float]]:
    """The rows of a ``<run>.curve.csv`` (empty when there is none).

    Raises:
        CorruptRecord: a file whose rows are not ``step, n_writes, answer_type, accuracy`` (an
            integer step and N, an accuracy in [0, 1]), or not UTF-8 text (one line naming it)."""
    if not path.is_file():
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            rows = [(int(r["step"]), int(r["n_writes"]), r["answer_type"], float(r["accuracy"]))
                    for r in csv.DictReader(handle)]
    except (KeyError, TypeError, ValueError) as err:  # a cut row (None), a missing column, a word
        problem = f"no {err} column" if isinstance(err, KeyError) else "a row that is not step, n_writes, answer_type, accuracy"
        raise CorruptRecord(f"curve {path}: {problem}; delete it or restore it from version control") from None
    bad = next((r for r in rows if not 0.0 <= r[3] <= 1.0), None)
    if bad is not None:
        raise CorruptRecord(f"curve {path}: accuracy {bad[3]} at step {bad[0]} is not in [0, 1]; delete it or "
                            "restore it from version control")
    return rows


def final_validation(rows: list[tuple[int, int, str, float]]) -> tuple[int, dict[str, float]]:
    """The last validation of a curve: ``(step, {"<kind>/n<N>": accuracy})``."""
    if not rows:
        return -1, {}
    last = max(step for step, *_ in rows)
    return last, {f"{kind}/n{n}": value for step, n, kind, value in rows if step == last}


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))
