"""Editing a config file's contents left the study's records done: a record kept the command line,
not what its files said. Records now keep a content hash of each ``--config`` file; a record whose
file says something else now is stale (status, run, report), and a record without hashes (every
record of earlier versions) is judged as before."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import commands, mqar_report, provenance
from swar_bench.study.attempts import Attempts, plan_attempt, read_attempts
from swar_bench.study.cli import main
from swar_bench.study.commands import command_text, fit_args, read_budget, run_name
from swar_bench.study.config_files import config_change, config_hashes, config_paths, content_hash
from swar_bench.study.report import collect
from swar_bench.study.spec import StudyError, load_study
from swar_bench.study.status import run_rows
from tests.study.test_attempts import _checkpoint, _fit_setup
from tests.study.test_study_cli import BASE, _study

ONE_RUN = "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\nselection_seeds: 1\nseeds: 1\n"
RUN = "GRU_tiny_lr0.001_seed0"
FAST = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _records(spec, hashes: bool) -> None:
    """The fit and test records `run` writes for the one run of ``spec`` (passing the gate), with
    the config files' hashes as they are now when ``hashes``, else as earlier versions wrote them."""
    m = spec.mechanisms[0]
    records = Path(spec.records)
    records.mkdir(parents=True, exist_ok=True)
    fit = fit_args(spec, read_budget(spec, m), m, 1e-3, 0)
    test = commands.test_args(spec, m, 1e-3, 0)
    gate = {"n_writes": 32, "ar_valid": 0.9, "passkey_exact": 0.0, "passed": True}
    for kind, args, extra in (("fit", fit, {"score": 0.5, "gate": gate}), ("test", test, {})):
        record = {
            "kind": kind,
            "command": command_text(args),
            "code": provenance.code_version(),
            **extra,
        }
        if hashes:
            record["config_files"] = config_hashes(args)
        (records / f"{run_name(m, 1e-3, 0)}.{kind}.json").write_text(json.dumps(record))


def _states(spec) -> dict[str, tuple[str, str]]:
    return {entry: (state, why) for _, entry, state, why in run_rows(spec)}


def test_a_changed_config_file_makes_its_records_stale(tmp_path, capsys):
    """The reported input: the study's budget config edited (batch size 2 -> 4) after its run was
    recorded: status calls its fit stale naming the file, run stops in one line, and the
    report leaves the run out; `--rerun-stale` would run it again."""
    path = _study(tmp_path, ONE_RUN)
    spec = load_study(path)
    _records(spec, hashes=True)
    base = tmp_path / "base.yaml"
    assert _states(spec) == {f"fit {RUN}": ("done", ""), f"test {RUN}": ("done", "")}
    base.write_text(BASE.replace("batch_size: 2", "batch_size: 4"))
    assert main(["status", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [  # the test waits on the fit, as after any stale fit
        f"fit {RUN}  stale (config file {base} changed; run --rerun-stale to run it again)",
        "study: 1 stale (1 run planned now)",
    ]
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"swar-bench study run: error: record {tmp_path / 'records' / RUN}.fit.json is stale: config file {base} "
        "changed since its run read it; expected --rerun-stale to run it again with the file as it is now\n"
    )
    assert collect(spec)[0].scores == {}  # the report has no fit of it
    base.write_text(BASE)  # as it was: done again
    assert _states(spec)[f"fit {RUN}"] == ("done", "") and collect(spec)[0].scores == {1e-3: 0.5}


def test_records_without_hashes_stay_done_whatever_the_files_say(tmp_path):
    """Records of earlier versions keep no hashes: judged by command and code alone, as before."""
    spec = load_study(_study(tmp_path, ONE_RUN))
    _records(spec, hashes=False)
    (tmp_path / "base.yaml").write_text(BASE.replace("batch_size: 2", "batch_size: 4"))
    assert _states(spec) == {f"fit {RUN}": ("done", ""), f"test {RUN}": ("done", "")}
    assert collect(spec)[0].scores == {1e-3: 0.5}


def test_a_comment_or_layout_change_is_no_change(tmp_path):
    spec = load_study(_study(tmp_path, ONE_RUN))
    _records(spec, hashes=True)
    (tmp_path / "base.yaml").write_text(
        "# the budget\n" + BASE.replace("batch_size: 2", "batch_size:   2  # per step")
    )
    assert _states(spec)[f"fit {RUN}"] == ("done", "")


@FAST
@given(
    batch=st.integers(1, 4),
    eval_batch=st.integers(7, 9),
    comment=st.booleans(),
    legacy=st.booleans(),
)
def test_status_calls_a_run_stale_exactly_when_its_config_says_something_else(
    tmp_path_factory, batch, eval_batch, comment, legacy
):
    """Any edit of the budget config (a value or not, a comment or not) after the run was recorded:
    status calls the fit stale, naming the file, exactly when the record keeps hashes and a value
    changed; the report keeps the fit exactly when status calls it done."""
    tmp = tmp_path_factory.mktemp("s")
    spec = load_study(_study(tmp, ONE_RUN))
    _records(spec, hashes=not legacy)
    edited = BASE.replace("batch_size: 2", f"batch_size: {batch}").replace(
        "eval_batch_size: 8", f"eval_batch_size: {eval_batch}"
    )
    (tmp / "base.yaml").write_text(("# edited\n" if comment else "") + edited)
    changed = not legacy and (batch, eval_batch) != (2, 8)
    expected = (
        "stale",
        f"config file {tmp / 'base.yaml'} changed; run --rerun-stale to run it again",
    )
    assert _states(spec)[f"fit {RUN}"] == (expected if changed else ("done", ""))
    assert collect(spec)[0].scores == ({} if changed else {1e-3: 0.5})


def test_config_paths_and_unreadable_hashes():
    assert config_paths(
        ["fit", "--config", "a.yaml", "--config=b.yaml", "--config", "a.yaml", "--x=1"]
    ) == ["a.yaml", "b.yaml"]
    assert config_paths(["fit", "--config"]) == []
    assert config_change({"config_files": {"/no/such/file.yaml": "0" * 16}}) == (
        "config file /no/such/file.yaml changed"
    )
    assert config_change({"config_files": ["a.yaml"]}) == "its config_files cannot be read"
    assert config_change({"command": "swar-bench fit"}) is None and config_change(None) is None


MAPPINGS = st.dictionaries(
    st.sampled_from(["lr", "batch_size", "max_steps", "name"]),
    st.one_of(
        st.integers(-3, 3), st.sampled_from(["a", "b"]), st.lists(st.integers(0, 2), max_size=2)
    ),
    max_size=4,
)


@FAST
@given(before=MAPPINGS, after=MAPPINGS, comment=st.booleans(), legacy=st.booleans())
def test_a_record_is_stale_exactly_when_its_file_says_something_else(
    tmp_path_factory, before, after, comment, legacy
):
    """Any content before and after (written in any layout, with or without a comment): a record
    with hashes is stale exactly when the parsed contents differ; one without hashes never is."""
    tmp = tmp_path_factory.mktemp("h")
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(before, sort_keys=True))
    record = {} if legacy else {"config_files": config_hashes(["fit", "--config", str(path)])}
    path.write_text(
        ("# edited\n" if comment else "")
        + yaml.safe_dump(after, sort_keys=False, default_flow_style=True)
    )
    change = config_change(record)
    assert change == (None if legacy or before == after else f"config file {path} changed")
    assert (content_hash(path) == record.get("config_files", {}).get(str(path))) == (
        not legacy and before == after
    )


def test_the_runner_records_the_hashes_and_does_not_resume_an_attempt_of_another_content(
    tmp_path, monkeypatch
):
    """A fit's record and attempt file keep the hashes; a stopped attempt whose config file has
    changed since is not resumed (its checkpoint trained on the old config), one of an earlier
    version (no hashes in its attempt file) is, as before."""
    _, runner, m, command, seen = _fit_setup(tmp_path, monkeypatch)
    base = tmp_path / "base.yaml"
    run_dir = tmp_path / "runs" / "M0_lr0.003_seed0"
    old = {str(base): "0" * 16}
    Attempts(run_dir, command, runner.code["fingerprint"], config_files=old).begin()
    _checkpoint(run_dir / "checkpoints" / "last.ckpt", 4)
    record = runner.fit(m, 0.003, 0)
    assert not any("--ckpt_path" in a for a in seen["args"][0])
    assert record["config_files"] == {str(base): content_hash(base)}
    assert read_attempts(run_dir)["config_files"] == record["config_files"]
    # an attempt file of an earlier version: resumed
    (tmp_path / "records" / "M0_lr0.003_seed0.fit.json").unlink()
    Attempts(run_dir, command, runner.code["fingerprint"]).begin()
    assert (
        plan_attempt(
            run_dir, command, runner.code["fingerprint"], record["config_files"]
        ).resume_from
        is not None
    )


@pytest.mark.parametrize("edit", ["mechanism config", "budget config"])
def test_every_config_file_of_a_run_is_kept(tmp_path, edit):
    """A mechanism given by its config file: both files are hashed, and either one changing is named."""
    mech = tmp_path / "gru.yaml"
    mech.write_text(
        "model:\n  mechanism:\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: 1}\n"
    )
    spec = load_study(_study(tmp_path, ONE_RUN, f"  - name: G\n    config: {mech}\n"))
    m = spec.mechanisms[0]
    args = fit_args(spec, read_budget(spec, m), m, 1e-3, 0)
    record = {"config_files": config_hashes(args)}
    assert list(record["config_files"]) == [str(tmp_path / "base.yaml"), str(mech)]
    changed = mech if edit == "mechanism config" else tmp_path / "base.yaml"
    changed.write_text(
        changed.read_text()
        .replace("n_layers: 1", "n_layers: 2")
        .replace("batch_size: 2", "batch_size: 3")
    )
    assert config_change(record) == f"config file {changed} changed"


# ----------------------------------------------------------------- an MQAR study (task: mqar)


def _mqar(tmp_path):
    from swar_bench.study import mqar
    from tests.study.test_mqar_study import write_study

    study = mqar.load_mqar_study(write_study(tmp_path, learning_rates=[1.0e-2]))
    entry = study.entries[0]
    args = mqar.fit_args(study, entry, 1.0e-2)
    return mqar, study, entry, args, Path(entry.config)


def test_an_mqar_record_of_a_changed_config_is_stale(tmp_path):
    """The reported input in an MQAR study: its config edited after the run was recorded."""
    mqar, study, entry, args, config = _mqar(tmp_path)
    name = mqar.run_name(entry, 1.0e-2)
    (tmp_path / "records").mkdir()
    record = {
        "command": command_text(args),
        "code": provenance.code_version(),
        "accuracy": 0.5,
        "epochs": 1,
        "config_files": config_hashes(args),
    }
    (tmp_path / "records" / f"{name}.fit.json").write_text(json.dumps(record))
    assert mqar_report.status_lines(study)[0] == f"{name}: done, accuracy 0.5000 after 1 epoch"
    config.write_text(config.read_text().replace("max_epochs: 2", "max_epochs: 3"))
    assert mqar_report.status_lines(study) == [
        f"{name}: stale (config file {config} changed; run --rerun-stale to run it again)",
        "study: 1 stale (1 run planned now)",
    ]
    with pytest.raises(StudyError) as err:
        mqar.MQARRunner(study, log=lambda line: None).saved(name, command_text(args))
    assert str(err.value) == (
        f"record {tmp_path / 'records' / name}.fit.json is stale: config file {config} changed since its run "
        "read it; expected --rerun-stale to run it again with the file as it is now"
    )
    assert (
        mqar.MQARRunner(study, rerun_stale=True, log=lambda line: None).saved(
            name, command_text(args)
        )
        is None
    )
    del record["config_files"]  # a record of an earlier version: done, as before
    (tmp_path / "records" / f"{name}.fit.json").write_text(json.dumps(record))
    assert mqar_report.status_lines(study)[0].startswith(f"{name}: done")


@pytest.mark.parametrize("marker", ["same hashes", "other hashes", "no hashes"])
def test_an_mqar_run_resumes_only_with_the_config_it_was_stopped_with(
    tmp_path, monkeypatch, marker
):
    mqar, study, entry, args, config = _mqar(tmp_path)
    name = mqar.run_name(entry, 1.0e-2)
    last = tmp_path / "runs" / name / "checkpoints" / "last.ckpt"
    last.parent.mkdir(parents=True)
    last.write_bytes(b"a checkpoint")
    hashes = {"same hashes": config_hashes(args), "other hashes": {str(config): "0" * 16}}.get(
        marker
    )
    (tmp_path / "runs" / f"{name}.command").write_text(
        command_text(args) + "\n" + ("" if hashes is None else json.dumps(hashes) + "\n")
    )
    calls = []

    class Finished:  # a fit that has ended, exit 0
        pid = os.getpid()

        def wait(self):
            return 0

    def launch(argv, **kwargs):
        calls.append(argv)
        return contextlib.nullcontext(Finished())

    monkeypatch.setattr(mqar.children, "launch", launch)
    record = mqar.MQARRunner(study, log=lambda line: None).fit(entry, 1.0e-2)
    assert record["resumed"] == (marker != "other hashes")
    assert any(a.startswith("--ckpt_path=") for a in calls[0]) == (marker != "other hashes")
    assert record["config_files"] == config_hashes(args)
