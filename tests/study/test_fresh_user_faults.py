"""The fresh-user faults of `swar-bench study` (round 29): each reported input refused in one line
(exit 2) before anything runs or is written, and a property over its kind."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import runner as runner_module
from swar_bench.study.cli import main
from tests.study import test_config_files, test_curve_points  # noqa: F401 - imported before any @given runs
from tests.study.test_study_cli import _study

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _error(capsys, *argv: str) -> tuple[int, str]:
    """``swar-bench study ARGV`` in this process: (exit status, its stderr)."""
    status = main(list(argv))
    return status, capsys.readouterr().err


@pytest.fixture
def no_runs(monkeypatch):
    """Every ``Runner.run`` is recorded instead of run: a refusal must come before any."""
    ran = []
    monkeypatch.setattr(runner_module.Runner, "run", lambda self: ran.append(self.only) or 0)
    return ran


# ----------------------------------------------------------------- 1. --only that names nothing


@pytest.mark.parametrize("only", ["", " , "])
def test_an_empty_only_is_refused_not_read_as_the_whole_study(tmp_path, capsys, no_runs, only):
    status, err = _error(capsys, "run", str(_study(tmp_path)), "--only", only)
    assert status == 2 and no_runs == []
    assert err == (
        f"swar-bench study run: error: --only={only!r}: expected a comma-separated list of mechanism names "
        "(e.g. GRU_tiny)\n"
    )


def test_an_unknown_only_name_is_refused_with_the_closest_name(tmp_path, capsys, no_runs):
    status, err = _error(capsys, "run", str(_study(tmp_path)), "--only", "GRU_tiyn")
    assert status == 2 and no_runs == []
    assert err == (
        "swar-bench study run: error: --only: no mechanism 'GRU_tiyn' in the study (did you mean GRU_tiny?); "
        "expected some of GRU_tiny\n"
    )


@SETTINGS
@given(only=st.text(alphabet=" ,\t", max_size=8))
def test_every_only_without_a_name_is_one_line_and_runs_nothing(tmp_path_factory, capsys, no_runs, only):
    study = _study(tmp_path_factory.mktemp("s"))
    status, err = _error(capsys, "run", str(study), f"--only={only}")
    assert status == 2 and no_runs == [] and err.count("\n") == 1
    assert f"--only={only!r}: expected a comma-separated list of mechanism names" in err


# ----------------------------------------------------------------- 2. a site of another study at --out

FRONTIER_MARKER = (
    "written by `swar-bench study site` from the records of frontier; the next run replaces this whole folder\n"
)


def test_the_default_site_out_of_another_study_is_refused_and_kept(tmp_path, capsys, monkeypatch):
    """The reported fault: `study site S` with its default `--out site`, run where `site/` is the
    committed site of the frontier study, replaced it. Now refused in one line; the site stays."""
    study = _study(tmp_path)
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / ".swar-bench-site").write_text(FRONTIER_MARKER)
    (site / "index.html").write_text("frontier")
    status, err = _error(capsys, "site", str(study))
    assert status == 2
    assert err == (
        "swar-bench study site: error: --out site holds the site of study 'frontier' (its .swar-bench-site), "
        "not of 'tiny'; expected another folder for the site of 'tiny', e.g. --out site_tiny\n"
    )
    assert (site / "index.html").read_text() == "frontier"
    assert main(["site", str(study), "--out", "site_tiny"]) == 0  # the suggested folder is taken
    assert (tmp_path / "site_tiny" / "index.html").is_file()


NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,12}", fullmatch=True)


@SETTINGS
@given(ours=NAMES, theirs=NAMES)
def test_a_site_is_replaced_only_by_a_site_of_its_own_study(tmp_path_factory, ours, theirs):
    from swar_bench.study.site import MARKER, _check_out
    from swar_bench.study.spec import StudyError

    out = tmp_path_factory.mktemp("s") / "site"
    out.mkdir()
    (out / MARKER).write_text(FRONTIER_MARKER.replace("frontier", theirs))
    if ours == theirs:
        _check_out(out, ours)  # its own earlier site: replaced
        return
    with pytest.raises(StudyError) as err:
        _check_out(out, ours)
    line = str(err.value)
    assert "\n" not in line and f"site of study {theirs!r}" in line and f"not of {ours!r}" in line
    assert f"--out site_{ours}" in line


# ----------------------------------------------------------------- 3. a report over a record

RECORD = '{"record_version": 1, "command": "swar-bench fit ..."}\n'


def test_a_study_name_that_is_a_record_name_is_refused_and_the_record_kept(tmp_path, capsys):
    """The reported fault: `name: GRU_tiny_lr0.003_seed0.fit` made the default report's
    `<name>.json` the fit record `GRU_tiny_lr0.003_seed0.fit.json` and overwrote it."""
    study = _study(tmp_path)
    study.write_text(study.read_text().replace("name: tiny", "name: GRU_tiny_lr0.003_seed0.fit"))
    records = tmp_path / "records"
    records.mkdir()
    (records / "GRU_tiny_lr0.003_seed0.fit.json").write_text(RECORD)
    status, err = _error(capsys, "report", str(study))
    assert status == 2
    assert err == (
        f"swar-bench study report: error: {study}: name='GRU_tiny_lr0.003_seed0.fit' is invalid; expected letters, "
        "digits, '_' and '-' (no '.': the report's <name>.json goes beside the records <run>.fit.json, "
        "<run>.test.json)\n"
    )
    assert (records / "GRU_tiny_lr0.003_seed0.fit.json").read_text() == RECORD


def test_a_report_refuses_a_destination_that_is_a_record(tmp_path):
    """Whatever the name: the report never writes over a record (a JSON with record_version)."""
    from swar_bench.study.report import write_report
    from swar_bench.study.spec import StudyError, load_study

    spec = load_study(_study(tmp_path))
    records = tmp_path / "records"
    records.mkdir()
    (records / "tiny.json").write_text(RECORD)
    with pytest.raises(StudyError, match=r"tiny\.json is a record of the study; expected the report at a name"):
        write_report(spec, records)
    assert (records / "tiny.json").read_text() == RECORD and not (records / "tiny.md").exists()


@SETTINGS
@given(run=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_]{0,9}(_lr0\.00[1-9]_seed[0-9])?", fullmatch=True),
       kind=st.sampled_from(["fit", "test", "failed", "curve"]), tail=st.sampled_from(["", ".x", "-1"]))
def test_no_study_name_can_name_a_record(tmp_path_factory, run, kind, tail):
    """Every name that could reach a record's file (``<run>.<kind>``...) is refused; a name
    without a dot loads."""
    from swar_bench.study.records import RECORD_SUFFIXES
    from swar_bench.study.spec import StudyError, study_name

    name = f"{run}.{kind}{tail}"
    with pytest.raises(StudyError) as err:
        study_name(name, "s.yaml")
    assert "\n" not in str(err.value) and f"name={name!r} is invalid" in str(err.value)
    assert study_name(run.replace(".", "_"), "s.yaml") == run.replace(".", "_")
    assert not any(f"{run.replace('.', '_')}{ext}".endswith(RECORD_SUFFIXES) for ext in (".json", ".md"))


# ----------------------------------------------------------------- 4. a typo in the budget config

TYPO_LINE = (
    "swar-bench study {command}: error: {study}: config {base}: unknown key data.eval_exampels (did you mean "
    "data.eval_examples?); expected a key of swar-bench fit (swar-bench fit --help)\n"
)


@pytest.mark.parametrize("command", [["status"], ["run", "--rerun-stale"]])
def test_a_typo_in_the_budget_config_is_refused_before_anything_runs(tmp_path, capsys, no_runs, command):
    """The reported fault: `eval_exampels: 16` in the study's `config:` made status say "stale",
    and `run --rerun-stale` failed every fit (exit 2 from the fit)."""
    from tests.study.test_study_cli import BASE

    study = _study(tmp_path, base=BASE.replace("eval_examples: 8", "eval_exampels: 16"))
    status, err = _error(capsys, command[0], str(study), *command[1:])
    assert status == 2 and no_runs == []
    assert err == TYPO_LINE.format(command=command[0], study=study, base=tmp_path / "base.yaml")


def test_a_failed_rerun_stale_fit_keeps_the_old_records(tmp_path, capsys, monkeypatch):
    """The reported fault: `run --rerun-stale` deleted the old test record before its fit, which
    then failed. Now the old fit and test records go only when the new fit has succeeded."""
    import sys

    from tests.study.test_study_faults import ONE_RUN, RUN

    monkeypatch.setattr(runner_module, "SWAR_BENCH", [sys.executable, "-c", "import sys; sys.exit(1)"])
    study = _study(tmp_path, ONE_RUN)
    records = tmp_path / "records"
    records.mkdir()
    old = {kind: f'{{"record_version": 1, "command": "swar-bench {kind} (an older config)"}}\n'
           for kind in ("fit", "test")}
    for kind, text in old.items():
        (records / f"{RUN}.{kind}.json").write_text(text)
    assert main(["run", str(study), "--jobs", "1", "--rerun-stale"]) == 1
    assert {kind: (records / f"{RUN}.{kind}.json").read_text() for kind in old} == old
    assert (records / f"{RUN}.failed.json").is_file()


@SETTINGS
@given(group=st.sampled_from(["trainer", "model", "data"]), key=st.from_regex(r"[a-z][a-z_]{2,14}", fullmatch=True))
def test_every_unknown_key_of_a_budget_config_is_refused_naming_file_and_key(tmp_path_factory, group, key):
    from swar_bench.study.spec import StudyError, load_study
    from swar_bench.utils.option_table import known_options
    from tests.study.test_study_cli import BASE

    tmp = tmp_path_factory.mktemp("s")
    base = BASE.replace(f"\n{group}:\n", f"\n{group}:\n  {key}: 1\n") if group != "trainer" else BASE.replace(
        "trainer:\n", f"trainer:\n  {key}: 1\n")
    study = _study(tmp, base=base)
    if key in known_options("fit")[group]:
        return
    with pytest.raises(StudyError) as err:
        load_study(study)
    line = str(err.value)
    assert "\n" not in line and f"config {tmp / 'base.yaml'}: unknown key {group}.{key}" in line


# ----------------------------------------------------------------- 5. stale records are not "still running"


def test_a_stale_mechanism_is_left_out_as_stale_not_still_running(tmp_path, capsys):
    """The reported fault: after a config change the report listed the mechanism under "## Still
    running" ("choosing its learning rate (0 of 1 rate scored)") although nothing ran."""
    from swar_bench.study.spec import load_study
    from tests.study.test_config_files import ONE_RUN, _records
    from tests.study.test_study_cli import BASE

    path = _study(tmp_path, ONE_RUN)
    _records(load_study(path), hashes=True)
    base = tmp_path / "base.yaml"
    base.write_text(BASE.replace("batch_size: 2", "batch_size: 4"))
    assert main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "tiny.md").read_text()
    assert "## Still running" not in text
    assert (
        f"## Left out as stale\n\n- GRU_tiny: 1 record left out as stale (config file {base} changed); expected "
        f"`swar-bench study run {path} --only GRU_tiny --rerun-stale`\n"
    ) in text


@SETTINGS
@given(stale=st.lists(st.sampled_from(["config file a.yaml changed", "made by other code"]), max_size=3),
       complete=st.booleans())
def test_a_mechanism_is_left_out_as_stale_exactly_when_records_of_it_were(stale, complete):
    from swar_bench.study.progress import progress_text
    from swar_bench.study.report import MechanismResult
    from swar_bench.study.spec import MechanismSpec, StudySpec

    spec = StudySpec(name="s", config="c.yaml", records="/nonexistent", out="o", path="s.yaml",
                     mechanisms=(MechanismSpec(name="M", class_path="GRU"),))
    r = MechanismResult(spec.mechanisms[0], [1e-3], {}, None, complete, False, stale=list(stale))
    text = progress_text(spec, r)
    assert ("left out as stale" in text) == bool(stale)
    assert all(reason in text for reason in stale) and "\n" not in text
    assert text.startswith("not started") == (not stale)  # no score and no record: nothing ran yet


# ----------------------------------------------------------------- 6. curve_points and TBPTT chunks


def test_curve_points_with_a_batch_of_several_optimizer_steps_is_refused(tmp_path, capsys, no_runs):
    """The reported fault: tbptt_steps chunking with step_per_chunk (an optimizer step per chunk)
    gave `--trainer.val_check_interval=2` (in batches) for 4 points of 8 steps: a curve of 1 point."""
    from tests.study.test_curve_points import ONE_RUN
    from tests.study.test_study_cli import BASE

    base = BASE.replace("tbptt_steps: 512", "tbptt_steps: 16\n  step_per_chunk: true")
    study = _study(tmp_path, ONE_RUN + "curve_points: 4\n", base=base)
    for command in ("status", "run"):
        status, err = _error(capsys, command, str(study))
        assert status == 2 and no_runs == []
        assert err == (
            f"swar-bench study {command}: error: {study}: curve_points=4 needs one optimizer step per training batch, but "
            f"model.tbptt_steps=16 of {tmp_path / 'base.yaml'} cuts every n32 training sequence (at least 108 "
            "tokens) into chunks of one optimizer step each (model.step_per_chunk), and a fit validates every so "
            "many batches; expected model.tbptt_steps above the longest training sequence, model.step_per_chunk: "
            "false, or no curve_points\n"
        )


def test_a_real_tiny_fit_has_curve_points_points(tmp_path):
    """A real fit of 8 steps with curve_points 4 (one chunk per batch): 4 validations on its curve."""
    import csv

    from tests.study.test_curve_points import ONE_RUN

    study = _study(tmp_path, ONE_RUN + "curve_points: 4\ngate: {ar_valid: 1.0, passkey_exact: 1.0}\n")
    assert main(["run", str(study), "--jobs", "1"]) == 0
    with open(tmp_path / "records" / "GRU_tiny_lr0.001_seed0.curve.csv") as handle:
        steps = sorted({int(row["step"]) for row in csv.DictReader(handle)})
    assert len(steps) == 4, steps


@SETTINGS
@given(n=st.sampled_from([32, 64, 128]), tbptt=st.integers(1, 600), per_chunk=st.booleans())
def test_curve_points_is_refused_exactly_when_every_batch_takes_several_steps(tmp_path_factory, n, tbptt, per_chunk):
    from swar_bench.study.commands import read_budget, shortest_sequence
    from swar_bench.study.spec import StudyError, load_study
    from tests.study.test_curve_points import ONE_RUN
    from tests.study.test_study_cli import BASE

    base = BASE.replace("tbptt_steps: 512", f"tbptt_steps: {tbptt}\n  step_per_chunk: {str(per_chunk).lower()}")
    base = base.replace("train_configs: [32]", f"train_configs: [{n}]").replace("val_configs: [32, 64]",
                                                                            f"val_configs: [{n}, 256]")
    spec = load_study(_study(tmp_path_factory.mktemp("c"), ONE_RUN + "curve_points: 4\n", base=base))
    refused = per_chunk and tbptt < shortest_sequence(n)
    try:
        read_budget(spec, spec.mechanisms[0])
    except StudyError as err:
        assert refused and "\n" not in str(err) and f"model.tbptt_steps={tbptt} " in str(err)
    else:
        assert not refused
    assert shortest_sequence(n) == 12 + 3 * n  # docs/TASK.md: 12 + 3N + 3 n_queries tokens


# ----------------------------------------------------------------- 7. small faults of the study file and options

MQAR_STUDY = """task: {task}
name: m
records: {tmp}/records
out: {tmp}/runs
entries:
  - {{name: Attention_T64_d64, config: configs/mqar/figure2_t64.yaml, d_model: 64}}
"""


def test_a_misspelt_task_is_named_not_its_entries(tmp_path, capsys, monkeypatch):
    """The reported input: `task: mqra` was read as a passkey study: "unknown key 'entries'"."""
    from tests.study.test_study_cli import ROOT

    monkeypatch.chdir(ROOT)
    study = tmp_path / "m.yaml"
    study.write_text(MQAR_STUDY.format(task="mqra", tmp=tmp_path))
    status, err = _error(capsys, "status", str(study))
    assert status == 2
    assert err == (
        f"swar-bench study status: error: {study}: task='mqra' is unknown (did you mean mqar?); expected task: mqar "
        "(an MQAR study), or no task (a study of the passkey task)\n"
    )


@SETTINGS
@given(task=st.one_of(st.text(min_size=1, max_size=8).filter(lambda t: t != "mqar"), st.integers(), st.none()))
def test_every_task_but_mqar_is_refused_naming_it(tmp_path_factory, task):
    from swar_bench.study.mqar import task_problem

    study = tmp_path_factory.mktemp("t") / "s.yaml"
    study.write_text(yaml_dump({"task": task, "name": "m"}))
    line = task_problem(study)
    assert line is not None and "\n" not in line and f"task={task!r} is unknown" in line


def yaml_dump(value) -> str:
    import yaml

    return yaml.safe_dump(value)


@pytest.mark.parametrize(("key", "where", "close"), [("sead", "", "seed"), ("d_modle", ": entries[0] (Attention_T64_d64)", "d_model")])
def test_an_unknown_mqar_key_gets_the_closest_key(tmp_path, monkeypatch, key, where, close):
    """The reported inputs: `sead` (top level) and `d_modle` (an entry) were named without a suggestion."""
    from swar_bench.study.mqar import ENTRY_KEYS, STUDY_KEYS, load_mqar_study
    from swar_bench.study.spec import StudyError
    from tests.study.test_study_cli import ROOT

    monkeypatch.chdir(ROOT)
    text = MQAR_STUDY.format(task="mqar", tmp=tmp_path)
    text = text + "sead: 1\n" if key == "sead" else text.replace("d_model: 64", "d_modle: 64")
    study = tmp_path / "m.yaml"
    study.write_text(text)
    keys = STUDY_KEYS if key == "sead" else ENTRY_KEYS
    with pytest.raises(StudyError) as err:
        load_mqar_study(study)
    assert str(err.value) == (
        f"{study}{where}: unknown key {key} (did you mean {close}?); expected some of {', '.join(sorted(keys))}"
    )


@SETTINGS
@given(key=st.sampled_from(sorted({"task", "name", "records", "out", "learning_rates", "seed", "entries"})),
       at=st.integers(0, 3), typo=st.sampled_from(["drop", "swap", "double"]))
def test_every_near_miss_of_an_mqar_key_is_suggested(key, at, typo):
    from swar_bench.study.mqar import STUDY_KEYS, _unknown
    from swar_bench.study.spec import StudyError

    i = min(at, len(key) - 2)
    wrong = {"drop": key[:i] + key[i + 1:], "swap": key[:i] + key[i + 1] + key[i] + key[i + 2:],
             "double": key[:i] + key[i] + key[i:]}[typo]
    if wrong in STUDY_KEYS:
        return
    with pytest.raises(StudyError) as err:
        _unknown({wrong, "name"}, STUDY_KEYS, "s.yaml")
    assert "\n" not in str(err.value) and f"unknown key {wrong} (did you mean " in str(err.value)


def test_a_key_given_twice_in_a_study_file_is_refused(tmp_path, capsys, no_runs):
    """The reported input: `seeds` twice in a study file was accepted, the last value winning."""
    study = _study(tmp_path, "seeds: 2\nselection_seeds: 1\nseeds: 3\n")
    for command in ("status", "run"):
        status, err = _error(capsys, command, str(study))
        assert status == 2 and no_runs == []
        assert err == (
            f"swar-bench study {command}: error: study file {str(study)!r}: key 'seeds' appears twice (lines 6 and 8); "
            "expected each key once (YAML would keep the last without a word)\n"
        )


@SETTINGS
@given(keys=st.lists(st.from_regex(r"k[a-z]{0,4}", fullmatch=True), min_size=1, max_size=6),
       nested=st.booleans(), flow=st.booleans())
def test_a_study_file_is_refused_exactly_when_a_mapping_repeats_a_key(tmp_path_factory, keys, nested, flow):
    from swar_bench.study.paths import study_file_problem

    body = ("{" + ", ".join(f"{k}: {i}" for i, k in enumerate(keys)) + "}\n") if flow else "".join(
        f"{'  ' if nested else ''}{k}: {i}\n" for i, k in enumerate(keys))
    path = tmp_path_factory.mktemp("y") / "s.yaml"
    path.write_text(("outer:\n" if nested and not flow else "") + body)
    problem = study_file_problem(path)
    twice = [k for k in keys if keys.count(k) > 1]
    if not twice:
        assert problem is None
        return
    # the first key repeated in the file's order is named (keys ka, k, k, ka name k)
    assert problem is not None and "\n" not in problem
    first = next(k for i, k in enumerate(keys) if k in keys[:i])
    assert f"key {first!r} appears twice" in problem


def test_an_add_name_that_is_taken_says_so(tmp_path, capsys):
    """The reported input: `--add GRU --name GRU_tiny` with GRU_tiny in the study said "expected
    --name" though --name was given."""
    status, err = _error(capsys, "run", str(_study(tmp_path)), "--add", "GRU", "--name", "GRU_tiny")
    assert status == 2
    assert err == (
        "swar-bench study run: error: --name='GRU_tiny' is taken by another mechanism of the study; expected another "
        "name (e.g. --name GRU_tiny_2)\n"
    )


@SETTINGS
@given(name=NAMES, given_name=st.booleans())
def test_every_taken_add_name_is_named_as_typed(tmp_path_factory, name, given_name):
    import dataclasses

    from swar_bench.study.cli import add_layer
    from swar_bench.study.spec import MechanismSpec, StudyError, load_study

    spec = load_study(_study(tmp_path_factory.mktemp("a")))
    taken = name if given_name else "GRU"
    spec = dataclasses.replace(spec, mechanisms=(MechanismSpec(name=taken, class_path="LSTM"),))
    with pytest.raises(StudyError) as err:
        add_layer(spec, "GRU", None, name if given_name else None)
    line = str(err.value)
    assert "\n" not in line and f"{taken!r} is taken" in line and "expected another name" in line
    assert line.startswith("--name=" if given_name else "--add: its class name")


def test_a_failed_fit_again_for_a_missing_checkpoint_keeps_the_fit_record(tmp_path, monkeypatch):
    """The same kind: a valid fit record whose checkpoint is not on this machine is trained again
    for its test; when that fit fails, the record stays as it was (it was deleted first)."""
    import sys

    from swar_bench.study.spec import load_study
    from tests.study.test_config_files import ONE_RUN, RUN, _records

    monkeypatch.setattr(runner_module, "SWAR_BENCH", [sys.executable, "-c", "import sys; sys.exit(1)"])
    study = _study(tmp_path, ONE_RUN)
    _records(load_study(study), hashes=True)
    (tmp_path / "records" / f"{RUN}.test.json").unlink()
    before = (tmp_path / "records" / f"{RUN}.fit.json").read_text()
    assert main(["run", str(study), "--jobs", "1"]) == 1
    assert (tmp_path / "records" / f"{RUN}.fit.json").read_text() == before


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rc=st.integers(1, 125), kinds=st.sets(st.sampled_from(["fit", "test"]), min_size=1), stale=st.booleans())
def test_no_failed_fit_removes_an_old_record(tmp_path_factory, monkeypatch, rc, kinds, stale):
    """The kind: whatever old records a run has (of its command, or of an older one with
    --rerun-stale), a fit that fails leaves every one of them as it was."""
    import sys

    from swar_bench.study.spec import load_study
    from tests.study.test_config_files import ONE_RUN, RUN, _records

    monkeypatch.setattr(runner_module, "SWAR_BENCH", [sys.executable, "-c", f"import sys; sys.exit({rc})"])
    tmp = tmp_path_factory.mktemp("r")
    study = _study(tmp, ONE_RUN)
    _records(load_study(study), hashes=True)
    records = tmp / "records"
    for kind in {"fit", "test"} - kinds:
        (records / f"{RUN}.{kind}.json").unlink()
    if stale:
        (tmp / "base.yaml").write_text((tmp / "base.yaml").read_text().replace("batch_size: 2", "batch_size: 4"))
    before = {kind: (records / f"{RUN}.{kind}.json").read_text() for kind in kinds}
    main(["run", str(study), "--jobs", "1", *(["--rerun-stale"] if stale else [])])
    assert {kind: (records / f"{RUN}.{kind}.json").read_text() for kind in kinds} == before


# ----------------------------------------------------------------- 6. a typo in a class's init_args

TENSORBOARD_ARGS = (
    "comment, default_hp_metric, filename_suffix, flush_secs, log_graph, max_queue, name, prefix, "
    "purge_step, save_dir, sub_dir, version"
)


def test_a_typo_in_the_budget_configs_logger_is_refused_before_anything_runs(tmp_path, capsys, no_runs):
    """The reported fault: `save_dirr: runs` under the budget config's `trainer.logger.init_args`
    passed `study status` (only top-level and mapping keys were checked); every fit then failed on
    it. Now status (and run) refuse it in one line, as `fit` does."""
    from tests.study.test_study_cli import BASE

    study = _study(tmp_path, base=BASE.replace("{save_dir: runs,", "{save_dirr: runs,"))
    status, err = _error(capsys, "status", str(study))
    assert status == 2 and no_runs == []
    assert err == (
        f"swar-bench study status: error: {study}: config {tmp_path / 'base.yaml'}: unknown key "
        "trainer.logger.init_args.save_dirr (did you mean trainer.logger.init_args.save_dir?); expected the "
        f"arguments of lightning.pytorch.loggers.TensorBoardLogger ({TENSORBOARD_ARGS})\n"
    )


CALLBACK = "lightning.pytorch.callbacks.EarlyStopping"


@SETTINGS
@given(data=st.data(), where=st.sampled_from(["logger", "callback"]), misspell=st.booleans())
def test_every_class_argument_of_a_budget_config_is_checked_as_fit_checks_it(tmp_path_factory, data, where, misspell):
    """Any argument of the budget config's logger or of a callback, with one letter doubled, is
    refused at load naming its dotted place; the argument as it is loads."""
    from swar_bench.config_errors import class_arguments
    from swar_bench.study.spec import StudyError, load_study
    from tests.study.test_study_cli import BASE

    path = "lightning.pytorch.loggers.TensorBoardLogger" if where == "logger" else CALLBACK
    names = class_arguments(path, follow_kwargs=True)
    name = data.draw(st.sampled_from([n for n in names if n not in ("save_dir", "name", "monitor")]))  # set already
    i = data.draw(st.integers(0, len(name) - 1))
    key = name[:i] + name[i] + name[i:] if misspell else name
    if where == "logger":
        base = BASE.replace("{save_dir: runs, name: tiny}", f"{{save_dir: runs, name: tiny, {key}: 1}}")
        place = "trainer.logger.init_args"
    else:
        base = BASE.replace("  logger:\n", f"  callbacks:\n    - class_path: {CALLBACK}\n"
                            f"      init_args: {{monitor: val/loss, {key}: 1}}\n  logger:\n")
        place = "trainer.callbacks[0].init_args"
    tmp = tmp_path_factory.mktemp("s")
    study = _study(tmp, base=base)
    if not misspell:
        load_study(study)
        return
    with pytest.raises(StudyError) as err:
        load_study(study)
    line = str(err.value)
    assert "\n" not in line and f"config {tmp / 'base.yaml'}: unknown key {place}.{key} (did you mean " in line


# ----------------------------------------------------------------- 7. a bad value only the fit finds

REFUSED = "swar-bench: error: --config=base.yaml: model.lr=fast is invalid; expected a positive finite learning rate"


def test_a_bad_value_in_the_budget_config_stops_the_study_at_the_first_refusal(tmp_path, capsys):
    """The reported fault: `lr: fast` in the budget config passed `status` (a value, not a key);
    `run` then started every selection fit, each refused with exit 2, chose a rate from the
    refusals, extended the grid to 1e-4 and trained seed 1 there. Now the first refusal (a real
    fit's) stops the study in one line quoting the fit's own, and nothing else starts."""
    from tests.study.test_study_cli import BASE

    study = _study(tmp_path, "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [1.0e-4], above: []}\n"
                   "selection_seeds: 1\nseeds: 2\n", base=BASE.replace("lr: 3.0e-3", "lr: fast"))
    assert main(["run", str(study), "--jobs", "1"]) == 2
    base = tmp_path / "base.yaml"
    said = capsys.readouterr()
    assert said.out == ""  # a refusal and the study's stop are errors: on stderr
    assert said.err.splitlines() == [
        (f"study: fit GRU_tiny_lr0.001_seed0 refused its command (exit 2): --config={base}: model.lr=fast is invalid; expected a positive finite learning rate; "
        "no other run starts: fix the study file or its config files and run again"),
        (f"study: stopped (exit 2: a run refused its command; fix what it names first); `swar-bench study run {study}` "
        "continues from the records"),
    ]
    assert sorted(p.name for p in (tmp_path / "records").glob("*.json")) == ["GRU_tiny_lr0.001_seed0.failed.json"]
    assert main(["status", str(study)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "study: 1 failed, 1 to do (2 runs planned now)"


@SETTINGS
@given(status=st.sampled_from([1, 2]), jobs=st.integers(1, 3), rates=st.integers(1, 3), seeds=st.integers(1, 2))
def test_no_rate_is_chosen_and_nothing_more_starts_from_failed_fits(tmp_path_factory, monkeypatch, status, jobs,
                                                                    rates, seeds):
    """Whatever the grid, seeds and jobs: fits that all fail (exit 1) choose no rate (no extension
    of the grid, no further seed, no test, no retry); a refusal (exit 2) also stops every fit not
    yet started, so at most ``jobs`` ran, and the study exits 2."""
    import sys

    tmp = tmp_path_factory.mktemp("f")
    grid = [1.0e-3, 3.0e-3, 1.0e-2][:rates]
    fake = f"import sys; print({REFUSED!r} if {status} == 2 else 'boom'); sys.exit({status})"
    monkeypatch.setattr(runner_module, "SWAR_BENCH", [sys.executable, "-c", fake])
    study = _study(tmp, f"learning_rates: {grid}\nextra_learning_rates: {{below: [1.0e-4], above: [3.0e-2]}}\n"
                   f"selection_seeds: {seeds}\nseeds: 3\n")
    assert main(["run", str(study), "--jobs", str(jobs)]) == status
    started = sorted(p.name.removesuffix(".fit.log") for p in (tmp / "runs").glob("*.log"))
    selection = {f"GRU_tiny_lr{lr:g}_seed{s}" for lr in grid for s in range(seeds)}
    assert set(started) <= selection  # no extension rate, no other seed, no retry, no test
    failed = sorted(p.name.removesuffix(".failed.json") for p in (tmp / "records").glob("*.failed.json"))
    assert failed == started
    if status == 2:
        assert 1 <= len(started) <= jobs
        if jobs == 1:  # the runs start in the protocol's order: the first rate's first seed (swar_bench.study.slots)
            assert started == [f"GRU_tiny_lr{grid[0]:g}_seed0"]
    else:
        assert set(started) == selection
