"""`swar-bench study`: the study file's refusals, and a real tiny study run end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.study import provenance
from swar_bench.study.config_files import content_hash
from swar_bench.study.spec import MECHANISM_KEYS, TOP_KEYS, StudyError, load_study

ROOT = Path(__file__).resolve().parents[2]

BASE = """seed_everything: 0
trainer:
  accelerator: cpu
  devices: 1
  max_steps: 8
  check_val_every_n_epoch: null
  num_sanity_val_steps: 0
  log_every_n_steps: 4
  enable_progress_bar: false
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: runs, name: tiny}
model:
  lr: 3.0e-3
  warmup_steps: 1
  max_steps: 8
  tbptt_steps: 512
data:
  source: generate
  train_configs: [32]
  val_configs: [32, 64]
  test_configs: [32, 64]
  batch_size: 2
  eval_batch_size: 8
  examples_per_epoch: 1000
  eval_examples: 8
"""


def _study(tmp_path: Path, extra: str = "", mechanisms: str | None = None, base: str = BASE) -> Path:
    """A study file of one tiny GRU (or ``mechanisms``) on the budget config ``base`` (written to
    ``tmp_path/base.yaml``), with ``extra`` top-level keys; records and runs under ``tmp_path``."""
    (tmp_path / "base.yaml").write_text(base)
    mechanisms = mechanisms or (
        "  - name: GRU_tiny\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: 1}\n"
    )
    path = tmp_path / "study.yaml"
    path.write_text(
        f"name: tiny\nconfig: {tmp_path / 'base.yaml'}\nrecords: {tmp_path / 'records'}\nout: {tmp_path / 'runs'}\nreadout_n: 64\n"
        f"{extra}mechanisms:\n{mechanisms}"
    )
    return path


def same_code(made: dict, expected: dict) -> bool:
    """Whether the ``code`` of a record is ``expected``'s training code: its fingerprint and dirty
    flag, not its commit (one may land in the checkout while a test runs)."""
    return {k: made.get(k) for k in ("fingerprint", "dirty")} == {
        k: expected.get(k) for k in ("fingerprint", "dirty")
    }


def test_same_code_ignores_only_the_commit():
    code = {"commit": "a" * 40, "dirty": False, "fingerprint": "f" * 16}
    assert same_code(code, {**code, "commit": "b" * 40})
    assert not same_code(code, {**code, "dirty": True})
    assert not same_code(code, {**code, "fingerprint": "0" * 16})


def test_unknown_key_is_named_with_a_suggestion(tmp_path):
    with pytest.raises(
        StudyError, match=r"unknown key 'learning_rate' \(did you mean 'learning_rates'\?\)"
    ):
        load_study(_study(tmp_path, "learning_rate: [1.0e-3]\n"))


@settings(max_examples=30, deadline=None)
@given(
    key=st.from_regex(r"[a-z_]{3,16}", fullmatch=True).filter(
        lambda k: k not in TOP_KEYS | MECHANISM_KEYS
    )
)
def test_every_unknown_key_is_one_line_naming_it(tmp_path_factory, key):
    tmp = tmp_path_factory.mktemp("s")
    for extra, mechs in (
        (f"{key}: 1\n", None),
        ("", f"  - name: A\n    class_path: GRU\n    {key}: 1\n"),
    ):
        with pytest.raises(StudyError) as err:
            load_study(_study(tmp, extra, mechs))
        assert f"unknown key {key!r}" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("learning_rates: []\n", r"learning_rates=\[\] is invalid"),
        ("learning_rates: [0.001, -1]\n", r"learning_rates\[1\]=-1 is invalid; expected a positive learning rate"),
        ("learning_rates: [0.001, 1e-3]\n", "expected a list of distinct positive learning rates"),
        ("seeds: 0\n", "seeds=0 is invalid"),
        ("selection_seeds: 3\nseeds: 2\n", "selection_seeds=3"),
        ("gate: {ar_valid: 2}\n", r"gate.ar_valid=2 is invalid; expected a number in \[0, 1\]"),
        ("seeds: 11\n", "exceed the 1,000,000 indices"),
    ],
)
def test_bad_values_are_one_line(tmp_path, extra, message):
    with pytest.raises(StudyError, match=message):
        load_study(_study(tmp_path, extra))


def test_missing_mechanism_config_is_named(tmp_path):
    with pytest.raises(StudyError, match=r"\(A\): config='nope.yaml' does not exist"):
        load_study(_study(tmp_path, "", "  - name: A\n    config: nope.yaml\n"))


def _swar_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swar_bench.cli", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _in_process(capsys, monkeypatch, *args: str) -> subprocess.CompletedProcess:
    """``swar-bench ARGS`` run by this process (the same ``main``; no interpreter to start), for the
    commands of an end-to-end test that start no fit: status, report, a run with nothing to do or
    refused."""
    from swar_bench.cli import main

    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


def test_a_tiny_study_runs_records_and_resumes(tmp_path, capsys, monkeypatch):
    """Two learning rates on one selection seed, two seeds, gate 0 (everything is tested): every fit and
    test leaves a record with provenance and a curve; a second run trains nothing; a record of other
    code stops the run in one line."""
    study = _study(
        tmp_path,
        "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
        "selection_seeds: 1\nseeds: 2\ncurve_points: 2\ngate: {ar_valid: 0.0}\n",
    )
    first = _swar_bench("study", "run", str(study))
    assert first.returncode == 0, first.stdout + first.stderr
    records = tmp_path / "records"
    fit_score = {
        lr: json.loads((records / f"GRU_tiny_lr{lr:g}_seed0.fit.json").read_text())["score"]
        for lr in (1e-3, 3e-3)
    }
    chosen = max(fit_score, key=lambda lr: (fit_score[lr], -lr))  # ties go to the smaller rate
    fits = {p.name for p in records.glob("*.fit.json")}
    assert fits == {
        "GRU_tiny_lr0.001_seed0.fit.json",
        "GRU_tiny_lr0.003_seed0.fit.json",
        f"GRU_tiny_lr{chosen:g}_seed1.fit.json",
    }
    seed1 = json.loads((records / f"GRU_tiny_lr{chosen:g}_seed1.fit.json").read_text())
    assert same_code(seed1["code"], provenance.code_version())
    assert seed1["config_files"] == {str(tmp_path / "base.yaml"): content_hash(tmp_path / "base.yaml")}
    assert {"torch", "lightning", "device", "python"} <= set(seed1["environment"])
    assert "--data.train_index_start=100000" in seed1["command"] and seed1["tokens"] > 0
    assert seed1["gate"]["n_writes"] == 32 and seed1["final_step"] == 7
    curve = (records / seed1["curve"]).read_text().splitlines()
    assert curve[0] == "step,n_writes,answer_type,accuracy" and {
        r.split(",")[0] for r in curve[1:]
    } == {"3", "7"}
    tests = sorted(p.name for p in records.glob("*.test.json"))
    assert tests == sorted(
        [f"GRU_tiny_lr{chosen:g}_seed0.test.json", f"GRU_tiny_lr{chosen:g}_seed1.test.json"]
    )
    test = json.loads((records / tests[0]).read_text())
    assert {row[0] for row in test["accuracy"]} == {32, 64}
    assert any(row[1] == ">16384" or row[0] == 64 for row in test["accuracy_by_key_age"])

    again = _in_process(capsys, monkeypatch, "study", "run", str(study))
    assert (
        again.returncode == 0
        and "study: fit" not in again.stdout
        and "study: test" not in again.stdout
    )
    status = _in_process(capsys, monkeypatch, "study", "status", str(study))
    assert status.returncode == 0 and "study: 5 done (5 runs planned now)" in status.stdout

    report = _in_process(capsys, monkeypatch, "study", "report", str(study), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report" / "tiny.md").read_text()
    assert "| GRU_tiny | 2 |" in page and (tmp_path / "report" / "figures" / "tiny_curves.png").stat().st_size > 0

    path = records / tests[0]
    record = json.loads(path.read_text())
    record["code"] = {"commit": "0" * 40, "dirty": False, "fingerprint": "other"}
    path.write_text(json.dumps(record))
    stale = _in_process(capsys, monkeypatch, "study", "run", str(study))
    assert stale.returncode == 2 and stale.stderr.count("\n") == 1
    assert "was made by other code" in stale.stderr and "--rerun-stale" in stale.stderr


def test_status_says_running_while_a_process_holds_the_marker(tmp_path):
    """The runner leaves ``<out>/<run>.running`` (host, pid) while a fit runs; status reads it, and
    a marker whose process is gone is not "running"."""
    import os
    import socket

    from swar_bench.study.runner import running_marker
    from swar_bench.study.status import run_states

    spec = load_study(_study(tmp_path, "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 1\n"))
    (tmp_path / "runs").mkdir()
    marker = running_marker(tmp_path / "runs", "GRU_tiny_lr0.001_seed0")
    marker.write_text(f"{socket.gethostname()} {os.getpid()}\n")
    assert ("GRU_tiny", "fit GRU_tiny_lr0.001_seed0", "running") in run_states(spec)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True,
                          text=True).stdout.strip()
    marker.write_text(f"{socket.gethostname()} {dead}\n")
    assert ("GRU_tiny", "fit GRU_tiny_lr0.001_seed0", "to do") in run_states(spec)


LAYERS = '''from swar_bench.mechanisms import GRU


class Forgetful(GRU):
    """Resets its state at every call: streaming differs from one forward."""

    def forward(self, input_ids, state):
        return super().forward(input_ids, self.init_state(input_ids.shape[0]))


class MyGRU(GRU):
    """A conforming outside layer."""
'''


def _swar_bench_with(path: Path, *args: str) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "swar_bench.cli", *args], check=False, cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env=env)


def test_add_puts_an_outside_layer_beside_the_committed_baselines(tmp_path, capsys, monkeypatch, request):
    """`run --add` refuses a layer that fails check-mechanism (naming the check, nothing trained or
    written), trains and tests only a conforming layer, and `report` places it beside the baseline;
    a baseline record of other code stops `--add` in one line naming it."""
    (tmp_path / "mylayers.py").write_text(LAYERS)
    study = _study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                             "selection_seeds: 1\nseeds: 1\ngate: {ar_valid: 0.0}\n")
    assert _swar_bench("study", "run", str(study)).returncode == 0
    records = tmp_path / "records"
    baseline = {p.name: p.stat().st_mtime_ns for p in records.glob("*.json")}
    assert set(baseline) == {"GRU_tiny_lr0.003_seed0.fit.json", "GRU_tiny_lr0.003_seed0.test.json"}

    monkeypatch.syspath_prepend(str(tmp_path))  # mylayers, for the commands run in this process
    sys.modules.pop("mylayers", None)
    request.addfinalizer(lambda: sys.modules.pop("mylayers", None))  # no other test sees this module
    bad = _in_process(capsys, monkeypatch, "study", "run", str(study), "--add", "mylayers.Forgetful",
                           "--init-args", '{"vocab_size": 40, "d_model": 8, "n_layers": 1}')
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "fails check-mechanism (streaming, random splits:" in bad.stderr
    assert not (records / "added").exists() and "study: fit" not in bad.stdout

    good = _swar_bench_with(tmp_path, "study", "run", str(study), "--add", "mylayers.MyGRU",
                            "--init-args", '{"vocab_size": 40, "d_model": 8, "n_layers": 1}')
    assert good.returncode == 0, good.stdout + good.stderr
    assert {p.name for p in records.glob("MyGRU_*.json")} == {"MyGRU_lr0.003_seed0.fit.json",
                                                              "MyGRU_lr0.003_seed0.test.json"}
    assert {p.name: p.stat().st_mtime_ns for p in records.glob("GRU_tiny*.json")} == baseline  # not retrained
    assert json.loads((records / "added" / "MyGRU.json").read_text())["class_path"] == "mylayers.MyGRU"
    assert _in_process(capsys, monkeypatch, "study", "report", str(study)).returncode == 0
    frontier = (records / "tiny.md").read_text().split("## The frontier at n64")[1].split("##")[0]
    assert "| GRU_tiny | 1 |" in frontier and "| MyGRU | 1 |" in frontier
    status = _in_process(capsys, monkeypatch, "study", "status", str(study))
    assert "study: 4 done (4 runs planned now)" in status.stdout

    path = records / "GRU_tiny_lr0.003_seed0.fit.json"
    record = json.loads(path.read_text())
    record["code"] = {"commit": "0" * 40, "dirty": False, "fingerprint": "other"}
    path.write_text(json.dumps(record))
    stale = _in_process(capsys, monkeypatch, "study", "run", str(study), "--add", "mylayers.MyGRU",
                             "--init-args", '{"vocab_size": 40, "d_model": 8, "n_layers": 1}')
    assert stale.returncode == 2 and stale.stderr.count("\n") == 1
    assert "stale baseline records (of other code, or of a config file changed since): GRU_tiny (" in stale.stderr
    assert "--rerun-stale" in stale.stderr


def test_arms_with_their_own_budget_run_at_the_rate_of_their_source(tmp_path, capsys, monkeypatch):
    """A length-curriculum comparison: arm `Long` trains on its own budget config (`base`: other N,
    a FLOP-style cap far above its schedule horizon) at the rate arm `Short` chose
    (`learning_rate_from`), with no grid of its own; validation follows the schedule horizon."""
    long_base = BASE.replace("max_steps: 8\n  check_val", "max_steps: 12\n  check_val").replace(
        "train_configs: [32]", "train_configs: [32, 64]").replace("val_configs: [32]", "val_configs: [32, 64]")
    assert long_base.count("max_steps: 8") == 1  # model.max_steps, the schedule's horizon
    (tmp_path / "long.yaml").write_text(long_base)
    arms = ("  - name: Short\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: 1}\n"
            f"  - name: Long\n    class_path: GRU\n    init_args: {{d_model: 8, n_layers: 1}}\n    base: {tmp_path / 'long.yaml'}\n"
            "    learning_rate_from: Short\n")
    study = _study(tmp_path, "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                             "selection_seeds: 1\nseeds: 1\ncurve_points: 2\ngate: {ar_valid: 0.0}\n", arms)
    waiting = _in_process(capsys, monkeypatch, "study", "status", str(study))
    assert waiting.returncode == 0 and "Long" not in waiting.stdout  # nothing planned before Short chose
    run = _swar_bench("study", "run", str(study))
    assert run.returncode == 0, run.stdout + run.stderr
    records = tmp_path / "records"
    scores = {lr: json.loads((records / f"Short_lr{lr:g}_seed0.fit.json").read_text())["score"] for lr in (1e-3, 3e-3)}
    chosen = max(scores, key=lambda lr: (scores[lr], -lr))
    assert {p.name for p in records.glob("Long_*.fit.json")} == {f"Long_lr{chosen:g}_seed0.fit.json"}
    long_fit = json.loads((records / f"Long_lr{chosen:g}_seed0.fit.json").read_text())
    assert f"--config {tmp_path / 'long.yaml'}" in long_fit["command"]
    assert "--trainer.val_check_interval=4" in long_fit["command"] and long_fit["final_step"] == 11
    assert {r.split(",")[0] for r in (records / long_fit["curve"]).read_text().splitlines()[1:]} == {"3", "7", "11"}
    assert set(long_fit["validation"]) >= {"ar_valid/n32", "ar_valid/n64"}
    with pytest.raises(StudyError, match="learning_rate_from='Nobody' is invalid"):
        load_study(_study(tmp_path, "", arms.replace("learning_rate_from: Short", "learning_rate_from: Nobody")))


@pytest.mark.parametrize(
    ("base", "extra", "mechanisms", "message"),
    [
        ("trainer: [\n", "", None, r"base.yaml cannot be read as YAML \(ParserError\)"),
        ("- 1\n- 2\n", "", None, "base.yaml is not a YAML mapping"),
        (BASE.replace("val_configs: [32, 64]", "val_configs: [32]"), "", None, r"has no N above 32, where stale keys"),
        (BASE, "readout_n: 100\n", None, r"readout_n=100 is not among data.test_configs \[32, 64\]"),
        (BASE, "", "  - {name: A, class_path: GRUU}\n", r"class_path=GRUU: unknown mechanism"),
        (BASE, "", "  - {name: A, class_path: GRU, config: configs/mechanisms/gru.yaml}\n",
         "gives both config and class_path"),
    ],
)
def test_a_study_that_cannot_run_is_refused_before_anything_runs(tmp_path, base, extra, mechanisms, message):
    """The fresh-user faults: a budget config that is not YAML (or not a mapping), no validation N
    with stale keys (the selection score would be undefined), a read-out N that is never tested, a
    misspelt class path, a mechanism given two ways: one line each, when the study is loaded."""
    from swar_bench.study.runner import read_budget

    path = _study(tmp_path, extra.replace("readout_n: 100\n", ""), mechanisms)
    if "readout_n: 100" in extra:
        path.write_text(path.read_text().replace("readout_n: 64", "readout_n: 100"))
    (tmp_path / "base.yaml").write_text(base)
    with pytest.raises(StudyError, match=message) as err:
        read_budget(load_study(path))
    assert "\n" not in str(err.value)


def test_records_that_are_a_file_and_report_out_that_is_a_file_are_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    study = _study(tmp_path)
    study.write_text(study.read_text().replace(f"records: {tmp_path / 'records'}", f"records: {tmp_path / 'afile'}"))
    with pytest.raises(StudyError, match=r"records='.*afile' is a file; expected a folder"):
        load_study(study)
    study = _study(tmp_path)
    for out, message in ((str(tmp_path / "afile"), "is a file; expected a folder"), ("", "--out='': expected a folder")):
        done = _swar_bench("study", "report", str(study), f"--out={out}")
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
