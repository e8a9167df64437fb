"""A corrupt record is one line naming it, exit 1, in `study status` and `study report` (fault:
a record truncated to 200 bytes or holding `[]` ended both in a traceback around a good message,
and a test record whose `accuracy` was a string crashed `report` with `not enough values to
unpack`, naming no file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORDS = sorted(p.name for p in (ROOT / "results" / "frontier_v2").glob("*.json"))
FILES = RECORDS + sorted(p.name for p in (ROOT / "results" / "frontier_v2").glob("*.curve.csv"))


def _study(tmp: Path) -> tuple[Path, Path]:
    """A copy of the frontier study reading a copy of its records; (study file, records folder)."""
    records = tmp / "rec"
    shutil.copytree(ROOT / "results" / "frontier_v2", records)
    text = (ROOT / "configs" / "studies" / "frontier.yaml").read_text()
    study = tmp / "fr.yaml"
    study.write_text("\n".join(f"records: {records}" if line.startswith("records:") else line
                               for line in text.splitlines()) + "\n")
    return study, records


def _ran(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return code, err


def _a_test_record_that_counts(records: Path) -> Path:
    """A test record the report reads (its seed passed the gate at the chosen rate)."""
    return records / "DeltaNet_lr0.0003_seed0.test.json"


@pytest.mark.parametrize("corruption", ["truncated", "a list", "accuracy a string", "a short accuracy row"])
def test_the_reported_corrupt_records_are_one_line(tmp_path, capsys, monkeypatch, corruption):
    monkeypatch.chdir(ROOT)
    study, records = _study(tmp_path)
    if corruption == "truncated":
        path = records / RECORDS[0]
        path.write_bytes(path.read_bytes()[:200])
    elif corruption == "a list":
        path = _a_test_record_that_counts(records)
        path.write_text("[]")
    else:
        path = _a_test_record_that_counts(records)
        record = json.loads(path.read_text())
        record["accuracy"] = "garbage" if corruption == "accuracy a string" else [[32, "ar_valid", 5]]
        path.write_text(json.dumps(record))
    commands = ["report"] if corruption.startswith(("accuracy", "a short")) else ["status", "report"]
    for command in commands:
        code, err = _ran(capsys, command, str(study), *(["--out", str(tmp_path / "o")] if command == "report" else []))
        assert code == 1 and len(err) == 1, err
        assert err[0].startswith(f"swar-bench study {command}: FAILED: record {path}"), err
        assert err[0].endswith("; delete it or restore it from version control"), err


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FILES), cut=st.integers(0, 400), how=st.sampled_from(["cut", "scalar", "list", "bytes"]),
       command=st.sampled_from(["status", "report"]))
def test_any_record_corrupted_anyhow_is_one_line_or_ignored(tmp_path_factory, capsys, monkeypatch, name, cut, how,
                                                           command):
    """The kind: any record or curve of the study cut short, or replaced by a JSON scalar, a list or
    bytes that are not UTF-8: `status` and `report` end 0 (the file is not read by that command) or
    1 with one line naming that file; never a traceback."""
    monkeypatch.chdir(ROOT)
    tmp = tmp_path_factory.mktemp("c")
    study, records = _study(tmp)
    path = records / name
    if how == "cut":
        path.write_bytes(path.read_bytes()[:cut])
    elif how == "bytes":
        path.write_bytes(b"\xc4\xff" * (cut + 1))
    else:
        path.write_text("3" if how == "scalar" else "[1]")
    code, err = _ran(capsys, command, str(study), *(["--out", str(tmp / "o")] if command == "report" else []))
    assert code in (0, 1), err
    if code == 1:
        assert len(err) == 1 and err[0].startswith((f"swar-bench study {command}: FAILED: record {path}",
                                                    f"swar-bench study {command}: FAILED: curve {path}")), err


@pytest.mark.parametrize("corruption", ["cut", "other columns", "accuracy 5.0"])
def test_the_reported_corrupt_curves_are_one_line(tmp_path, capsys, monkeypatch, corruption):
    """Fault: a truncated curve ended `study report` in `TypeError: float() argument must be ...
    not 'NoneType'`, one of other columns in `KeyError: 'step'`; an accuracy of 5.0 was drawn."""
    monkeypatch.chdir(ROOT)
    study, records = _study(tmp_path)
    fit = json.loads((records / "DeltaNet_lr0.0003_seed0.fit.json").read_text())
    curve = records / fit["curve"]
    text = curve.read_text()
    if corruption == "cut":
        curve.write_text(text[: len(text) // 2].rsplit(",", 1)[0] + "\n")
    elif corruption == "other columns":
        curve.write_text("a,b\nx,y\n")
    else:
        header, first, *rest = text.splitlines()
        curve.write_text("\n".join([header, first.rsplit(",", 1)[0] + ",5.0", *rest]) + "\n")
    code, err = _ran(capsys, "report", str(study), "--out", str(tmp_path / "o"))
    assert code == 1 and len(err) == 1 and err[0].startswith(f"swar-bench study report: FAILED: curve {curve}: "), err


def test_a_record_that_is_not_utf8_is_one_line(tmp_path, capsys, monkeypatch):
    """Fault: 500 random bytes as a fit record ended status and report in a UnicodeDecodeError."""
    monkeypatch.chdir(ROOT)
    study, records = _study(tmp_path)
    path = records / "GatedDeltaNet_lr0.0003_seed0.fit.json"
    path.write_bytes(b"\xc4\xff" * 250)
    for command in ("status", "report"):
        code, err = _ran(capsys, command, str(study), *(["--out", str(tmp_path / "o")] if command == "report" else []))
        assert code == 1 and err == [(f"swar-bench study {command}: FAILED: record {path} is not UTF-8 text (byte 0); "
                                     "delete it or restore it from version control")], err


def test_the_reported_out_of_range_score_is_one_line(tmp_path, capsys, monkeypatch):
    """Fault: `"score": 7.5` in a frontier fit record was read as a score (it changed the report's
    choice of rate); now the record is named, in `report` and in `status`."""
    monkeypatch.chdir(ROOT)
    study, records = _study(tmp_path)
    path = records / "DeltaNet_lr0.0003_seed0.fit.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "score": 7.5}))
    code, err = _ran(capsys, "report", str(study), "--out", str(tmp_path / "o"))
    assert code == 1 and err == [(f"swar-bench study report: FAILED: record {path}: score is 7.5, expected null or "
                                  "an accuracy in [0, 1]; delete it or restore it from version control")], err
    assert not (tmp_path / "o").exists()


BAD_VALUES = {
    "score": [7.5, -0.1, "0.5", True, [0.5]], "lr": [0, -1e-3, "1e-3", None], "state_bytes": [-128, 1.5, "64", None],
    "n_params": [-5, 2.0, None], "flops_per_token": [-1.0, "x"], "curve": [5, "", None],
    "gate.ar_valid": [1.5, -1, "1"], "gate.passkey_exact": [2, "0"], "gate.passed": [1, "true", None],
    "gate": [5, [1], "passed"],
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from([n for n in RECORDS if n.endswith(".fit.json")]),
       field_value=st.sampled_from([(f, v) for f, vs in BAD_VALUES.items() for v in vs]))
def test_any_fit_field_out_of_its_range_is_refused_naming_the_record(tmp_path_factory, monkeypatch, name,
                                                                     field_value):
    """The kind: any field a report reads out of its range or of another type, in any fit record,
    is one CorruptRecord line naming the file and the field (whether or not this study's report
    would read that record); the committed records all pass."""
    from swar_bench.study.records import CorruptRecord, read_fit

    monkeypatch.chdir(ROOT)
    tmp = tmp_path_factory.mktemp("f")
    path = tmp / name
    record = json.loads((ROOT / "results" / "frontier_v2" / name).read_text())
    assert read_fit(ROOT / "results" / "frontier_v2" / name) == record
    field, value = field_value
    if field.startswith("gate."):
        record["gate"] = {**record["gate"], field[5:]: value}
    else:
        record[field] = value
    path.write_text(json.dumps(record))
    with pytest.raises(CorruptRecord) as err:
        read_fit(path)
    line = str(err.value)
    assert line.startswith(f"record {path}: {field} is {json.dumps(value)}") and "\n" not in line, line
    assert line.endswith("; delete it or restore it from version control")


def test_mqar_records_out_of_range_are_named_too(tmp_path, capsys):
    """The MQAR study's fit records go through the same check (`accuracy` 1.5, `epochs` -1)."""
    from swar_bench.study.records import CorruptRecord, read_fit

    source = ROOT / "results" / "mqar" / "Mamba_T64_d64_lr0.01.fit.json"
    record = json.loads(source.read_text())
    assert read_fit(source) == record
    for field, value in (("accuracy", 1.5), ("accuracy", None), ("epochs", -1), ("seq_len", 0), ("best_accuracy", "0.9")):
        path = tmp_path / source.name
        path.write_text(json.dumps({**record, field: value}))
        with pytest.raises(CorruptRecord, match=f"^record {path}: {field} is {json.dumps(value)}, expected "):
            read_fit(path)


@pytest.mark.parametrize("edit", [{"score": 7.5}, {"score": "abc"}, {"state_bytes": -1}, {"gate": 5}])
def test_status_refuses_a_fit_record_out_of_range_as_report_does(tmp_path, capsys, monkeypatch, edit):
    """Fault (new-user check): `study status` read `score: 7.5` (and planned 5 new runs), `gate: 5`,
    `state_bytes: -1` without a word, and ended `score: "abc"` in a ValueError traceback, where
    `report` refused each in one line."""
    monkeypatch.chdir(ROOT)
    study, records = _study(tmp_path)
    path = records / "GatedDeltaNet_lr0.001_seed0.fit.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **edit}))
    code, err = _ran(capsys, "status", str(study))
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith(f"swar-bench study status: FAILED: record {path}: {next(iter(edit))}"), err
