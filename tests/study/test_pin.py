"""A study pinned to its training code (``code_fingerprint``): records judged against the pin, the
key checked, and ``study run`` refused in one line from a checkout of other code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import provenance
from swar_bench.study.cli import main
from swar_bench.study.mqar import load_mqar_study
from swar_bench.study.spec import StudyError, load_study
from tests.study.test_study_cli import _study

HERE = provenance.fingerprint()
OTHER = "0123456789abcdef" if HERE != "0123456789abcdef" else "fedcba9876543210"
COMMIT = "a" * 40


def _code(fp: str, commit: str = COMMIT, dirty: bool = False) -> dict:
    return {"commit": commit, "dirty": dirty, "fingerprint": fp}


def test_without_a_pin_a_record_is_compatible_with_the_checkout():
    assert provenance.compatible(_code(HERE))
    assert not provenance.compatible(_code(OTHER))
    assert provenance.compatible(_code(OTHER), accepted=(COMMIT[:7],))
    assert not provenance.compatible(_code(OTHER, dirty=True), accepted=(COMMIT[:7],))


def test_with_a_pin_a_record_is_compatible_with_the_pin_not_the_checkout():
    assert provenance.compatible(_code(OTHER), pinned=OTHER)
    assert not provenance.compatible(_code(HERE), pinned=OTHER)
    assert provenance.compatible(_code(HERE), accepted=(COMMIT,), pinned=OTHER)
    assert not provenance.compatible(None, pinned=OTHER)


HEX16 = st.text("0123456789abcdef", min_size=16, max_size=16)


@settings(max_examples=200, deadline=None)
@given(
    pinned=st.one_of(st.none(), HEX16),
    record_fp=HEX16,
    checkout=HEX16,
    commit=st.text("0123456789abcdef", min_size=40, max_size=40),
    dirty=st.booleans(),
    accepted=st.lists(st.text("0123456789abcdef", min_size=1, max_size=40), max_size=3),
)
def test_compatibility_is_the_pin_or_the_checkout_or_a_declared_commit(
    pinned, record_fp, checkout, commit, dirty, accepted
):
    expected = record_fp == (pinned if pinned is not None else checkout) or any(
        len(c) >= 7 and commit.startswith(c) and not dirty for c in accepted
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(provenance, "fingerprint", lambda: checkout)
        got = provenance.compatible(_code(record_fp, commit, dirty), tuple(accepted), pinned)
        assert got == expected
        # the checkout's code never matters once the study is pinned
        if pinned is not None:
            mp.setattr(provenance, "fingerprint", lambda: record_fp)
            assert (
                provenance.compatible(_code(record_fp, commit, dirty), tuple(accepted), pinned)
                == expected
            )
    refusal = provenance.pin_refusal("s", pinned, "/nonexistent", checkout=checkout)
    assert (refusal is None) == (pinned is None or pinned == checkout)
    if refusal is not None:
        assert "\n" not in refusal and pinned in refusal and checkout in refusal


@pytest.mark.parametrize(
    "value", ["5BCEC857E4759810", "5bcec857e475981", "5bcec857e4759810a", 123, "xyz"]
)
def test_a_bad_pin_is_one_line(tmp_path, value):
    with pytest.raises(StudyError) as err:
        load_study(_study(tmp_path, f"code_fingerprint: {json.dumps(value)}\n"))
    assert "code_fingerprint=" in str(err.value) and "16 lowercase hex digits" in str(err.value)
    assert "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(
    value=st.text(min_size=1, max_size=20).filter(
        lambda v: not (len(v) == 16 and set(v) <= set("0123456789abcdef"))
    )
)
def test_every_bad_pin_is_refused(tmp_path_factory, value):
    tmp = tmp_path_factory.mktemp("pin")
    with pytest.raises(StudyError, match="code_fingerprint="):
        load_study(_study(tmp, f"code_fingerprint: {json.dumps(value)}\n"))


def test_a_pin_is_read_for_both_kinds_of_study(tmp_path):
    assert load_study(_study(tmp_path, f"code_fingerprint: {OTHER}\n")).code_fingerprint == OTHER
    assert load_study(_study(tmp_path)).code_fingerprint is None
    mqar = _pinned_mqar(tmp_path)
    assert load_mqar_study(mqar).code_fingerprint == OTHER
    mqar.write_text(mqar.read_text().replace(OTHER, "nope"))
    with pytest.raises(StudyError, match="code_fingerprint='nope' is invalid"):
        load_mqar_study(mqar)


def _record(records: Path, name: str, code: dict) -> None:
    records.mkdir(parents=True, exist_ok=True)
    (records / name).write_text(json.dumps({"kind": "fit", "code": code}))


def test_run_from_other_code_is_refused_in_one_line_naming_the_commit(tmp_path, capsys):
    study = _study(tmp_path, f"code_fingerprint: {OTHER}\n")
    _record(tmp_path / "records", "A.fit.json", _code(OTHER, "b" * 40))
    # a dirty tree's record names no commit of that code
    _record(tmp_path / "records", "B.fit.json", _code(OTHER, "c" * 40, dirty=True))
    assert main(["run", str(study)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"swar-bench study run: error: study tiny is pinned to training code {OTHER}; this checkout has {HERE}; "
        f"run it from a checkout of commit {'b' * 12} (git worktree add ../tiny-code {'b' * 12})"
    )
    assert not (tmp_path / "runs").exists()


def test_run_of_an_unknown_pinned_commit_says_so(tmp_path, capsys):
    assert main(["run", str(_study(tmp_path, f"code_fingerprint: {OTHER}\n"))]) == 2
    assert "no record names its commit" in capsys.readouterr().err


def test_status_and_report_work_from_any_checkout_of_a_pinned_study(tmp_path, capsys):
    """The pinned code's record is done, the checkout's own is stale: status reads the pin."""
    from swar_bench.study.status import run_states as rows

    study = load_study(_study(tmp_path, f"code_fingerprint: {OTHER}\n"))
    spec_rows = rows(study)
    assert spec_rows, "a fresh study plans its selection fits"
    _, run, _ = spec_rows[0]
    name = run.split(" ", 1)[1]
    from swar_bench.study.commands import command_text, fit_args, read_budget

    m = study.mechanisms[0]
    lr = float(name.split("_lr")[1].split("_")[0])
    command = command_text(fit_args(study, read_budget(study, m), m, lr, 0))
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / f"{name}.fit.json").write_text(
        json.dumps({"command": command, "code": _code(OTHER)})
    )
    assert {r: s for _, r, s in rows(study)}[run] == "done"
    (tmp_path / "records" / f"{name}.fit.json").write_text(
        json.dumps({"command": command, "code": _code(HERE)})
    )
    assert {r: s for _, r, s in rows(study)}[run] == "stale"


def test_a_record_names_the_cpu_model_it_ran_on(tmp_path, monkeypatch):
    # CPUs of other vector widths round a float32 matmul differently: "x86_64" alone cannot tell
    # two machines' records apart
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n")
    real_path = provenance.Path
    monkeypatch.setattr(
        provenance, "Path", lambda p: info if p == "/proc/cpuinfo" else real_path(p)
    )
    assert provenance.cpu_model() == f"AMD EPYC 7B13 <{provenance.platform.machine()}>"
    info.write_text("processor\t: 0\n")  # no model name: what platform knows
    assert provenance.cpu_model() in (
        provenance.platform.processor(),
        provenance.platform.machine(),
        "cpu",
    )


def _pinned_mqar(tmp_path: Path) -> Path:
    config = tmp_path / "mqar.yaml"
    config.write_text("trainer: {}\n")
    study = tmp_path / "mqar_study.yaml"
    study.write_text(
        f"task: mqar\nname: m\nrecords: {tmp_path / 'r'}\nout: {tmp_path / 'o'}\ncode_fingerprint: {OTHER}\n"
        f"entries:\n  - {{name: A, config: {config}, d_model: 8}}\n"
    )
    return study


def test_the_reported_misspelt_entry_is_named_before_the_pin(tmp_path, capsys):
    """fault: `study run mqar_zoology.yaml --only Nope` from another checkout said the study was
    pinned; after switching checkouts the typo was refused then. The typo is any checkout's."""
    assert main(["run", str(_pinned_mqar(tmp_path)), "--only", "Nope"]) == 2
    assert capsys.readouterr().err == ("swar-bench study run: error: --only: no entry 'Nope' in the study; "
                                       "expected some of A\n")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["frontier", "mqar"]), fault=st.sampled_from(["only", "only_and_add", "name_alone"]),
       name=st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda n: n not in ("A", "GRU")))
def test_a_fault_of_the_command_line_is_named_before_the_pin(tmp_path_factory, capsys, kind, fault, name):
    tmp_path = tmp_path_factory.mktemp("s")
    study = _pinned_mqar(tmp_path) if kind == "mqar" else _study(tmp_path, f"code_fingerprint: {OTHER}\n")
    extra = {"only": ["--only", name], "only_and_add": ["--only", name, "--add", "GRU"],
             "name_alone": ["--name", name]}[fault]
    assert main(["run", str(study), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is pinned to training code" not in err, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "o").exists()
