"""A fresh user's faults of `swar-bench study`: status missed the retry and called records of
another command done; a misspelt init arg and a retry_steps_factor of 1 were accepted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import commands, provenance
from swar_bench.study.cli import main
from swar_bench.study.commands import command_text, fit_args, read_budget, run_name
from swar_bench.study.runner import Runner
from swar_bench.study.spec import StudyError, load_study
from swar_bench.study.status import print_status, run_rows, run_states
from tests.study.test_study_cli import ROOT, _study

GRU1 = "  - name: GRU1\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: 1}\n"
ONE_RATE = "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\nselection_seeds: 1\n"
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _fit_record(spec, seed: int, passed: bool | None, retry: bool = False, command: str | None = None) -> None:
    """A fit record as `run` writes it (the fields status and the plan read); ``passed`` None: none."""
    if passed is None:
        return
    m = spec.mechanisms[0]
    name = run_name(m, 1e-3, seed, retry)
    records = Path(spec.records)
    records.mkdir(parents=True, exist_ok=True)
    command = command or command_text(fit_args(spec, read_budget(spec, m), m, 1e-3, seed, retry))
    gate = {"n_writes": 32, "ar_valid": 0.9 if passed else 0.1, "passkey_exact": 0.0, "passed": passed}
    record = {"kind": "fit", "lr": 1e-3, "seed": seed, "retry": retry, "command": command,
              "code": provenance.code_version(), "score": 0.4, "gate": gate}
    (records / f"{name}.fit.json").write_text(json.dumps(record))


def _test_record(spec, seed: int, retry: bool = False) -> None:
    m = spec.mechanisms[0]
    record = {"kind": "test", "command": command_text(commands.test_args(spec, m, 1e-3, seed, retry)),
              "code": provenance.code_version()}
    (Path(spec.records) / f"{run_name(m, 1e-3, seed, retry)}.test.json").write_text(json.dumps(record))


# ----------------------------------------------------------------- 1. the retry is listed


def test_status_lists_the_retry_a_real_run_made(tmp_path, capsys):
    """The reported input: three seeds at one rate, none passed the gate, the retry recorded (it did
    not pass either): 4 rows, `4 done`, the retry among them."""
    spec = load_study(_study(tmp_path, ONE_RATE + "seeds: 3\n", GRU1))
    for seed in range(3):
        _fit_record(spec, seed, passed=False)
    assert ("GRU1", "fit GRU1_lr0.001_seed0_retry", "to do") in run_states(spec)  # decided: it will run
    _fit_record(spec, 0, passed=False, retry=True)
    assert print_status(spec) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "study: 4 done (4 runs planned now)"
    assert out[-2] == "fit GRU1_lr0.001_seed0_retry  done"


def test_a_retry_is_not_listed_before_the_fits_that_decide_it_are_recorded(tmp_path):
    spec = load_study(_study(tmp_path, ONE_RATE + "seeds: 3\n", GRU1))
    _fit_record(spec, 0, passed=False)
    _fit_record(spec, 1, passed=False)
    assert [e for _, e, _ in run_states(spec)] == [f"fit GRU1_lr0.001_seed{s}" for s in range(3)]


@FAST
@given(outcomes=st.lists(st.sampled_from([None, False, True]), min_size=1, max_size=4),
       retry=st.sampled_from([None, False, True]))
def test_the_retry_is_listed_exactly_when_run_would_make_it(tmp_path_factory, outcomes, retry):
    """Any gate results of the seeds (None: not recorded yet) and of the retry: the retry fit is
    listed iff every seed is recorded and none passed; its test iff the retry passed too; every
    record `run` would use is listed `done`."""
    if outcomes[0] is None:
        outcomes[0] = False  # the selection fit: without it the plan ends at the rate choice
    tmp = tmp_path_factory.mktemp("retry")
    spec = load_study(_study(tmp, ONE_RATE + f"seeds: {len(outcomes)}\n", GRU1))
    for seed, passed in enumerate(outcomes):
        _fit_record(spec, seed, passed)
    _fit_record(spec, 0, retry, retry=True)
    states = {e: s for _, e, s in run_states(spec)}
    needed = all(o is not None for o in outcomes) and not any(outcomes)
    assert ("fit GRU1_lr0.001_seed0_retry" in states) == needed
    assert ("test GRU1_lr0.001_seed0_retry" in states) == (needed and retry is True)
    if needed and retry is not None:
        assert states["fit GRU1_lr0.001_seed0_retry"] == "done"
    for seed, passed in enumerate(outcomes):
        assert states[f"fit GRU1_lr0.001_seed{seed}"] == ("to do" if passed is None else "done")


# ----------------------------------------------------------------- 2. run's rule for "done"


def test_status_does_not_call_a_record_of_another_command_done(tmp_path, capsys):
    """The reported input: records made with n_layers 1, the study now says n_layers 2: `run`
    trains them again, so status says `to do` and which argument changed."""
    study = _study(tmp_path, ONE_RATE + "seeds: 2\n", GRU1)
    spec = load_study(study)
    _fit_record(spec, 0, passed=False)
    _fit_record(spec, 1, passed=False)
    study.write_text(study.read_text().replace("n_layers: 1", "n_layers: 2"))
    assert print_status(load_study(study)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        ("fit GRU1_lr0.001_seed0  to do (recorded with --model.mechanism.init_args.n_layers=1, now "
         "--model.mechanism.init_args.n_layers=2)"),
        "study: 1 to do (1 run planned now)",
    ]


@FAST
@given(d_models=st.lists(st.sampled_from([8, 9]), min_size=2, max_size=3), other_code=st.booleans())
def test_status_is_done_exactly_when_run_would_reuse_the_record(tmp_path_factory, d_models, other_code):
    """Records made with d_model 8 or 9 (of this code or other code), the study says 8: each row is
    `done` iff `Runner._record` reuses it, `stale` iff `run` stops on it, else `to do`."""
    tmp = tmp_path_factory.mktemp("rule")
    spec = load_study(_study(tmp, ONE_RATE + f"seeds: {len(d_models)}\n", GRU1))
    m = spec.mechanisms[0]
    for seed, d in enumerate(d_models):
        command = command_text(fit_args(spec, read_budget(spec, m), m, 1e-3, seed)).replace(
            "d_model=8", f"d_model={d}")
        _fit_record(spec, seed, passed=True, command=command)
        _test_record(spec, seed)
    if other_code:
        path = Path(spec.records) / "GRU1_lr0.001_seed0.fit.json"
        record = json.loads(path.read_text())
        record["code"] = {"commit": "0" * 40, "dirty": False, "fingerprint": "0" * 16}
        path.write_text(json.dumps(record))
    runner = Runner(spec, jobs=1, dry_run=True, log=lambda line: None)
    for _, entry, state, why in run_rows(spec):
        kind, name = entry.split(" ", 1)
        seed = int(name.split("seed")[1].split("_")[0])
        args = fit_args(spec, read_budget(spec, m), m, 1e-3, seed) if kind == "fit" else commands.test_args(spec, m, 1e-3, seed)
        try:
            reused = runner._record(name, kind, command_text(args)) is not None
        except StudyError:
            assert state == "stale" and "fingerprint 0000000000000000" in why
            continue
        assert (state == "done") == reused and state in ("done", "to do")
        assert ("recorded with" in why) == (kind == "fit" and d_models[seed] != 8)


# ----------------------------------------------------------------- 3. init args checked on load


REPORTED_LINE = ("mechanisms[0] (GRU1): init_args.n_layer is not an argument of swar_bench.mechanisms.GRU "
                 "(did you mean n_layers?); expected one of vocab_size, d_model, n_layers, mlp_ratio")


@pytest.mark.parametrize("command", ["run", "status", "report", "site"])
@pytest.mark.parametrize("entry", ["class_path: GRU", "config: configs/mechanisms/gru.yaml"])
def test_a_misspelt_init_arg_is_refused_by_every_command_before_anything_runs(tmp_path, capsys, command, entry):
    study = _study(tmp_path, ONE_RATE + "seeds: 2\n", f"  - name: GRU1\n    {entry}\n    init_args: {{n_layer: 1}}\n")
    out = ["--out", str(tmp_path / "out")] if command in ("report", "site") else []
    assert main([command, str(study), *out]) == 2
    err = capsys.readouterr().err
    assert err == f"swar-bench study {command}: error: {study}: {REPORTED_LINE}\n"
    assert not any((tmp_path / d).exists() for d in ("runs", "records", "out"))


def test_a_misspelt_init_arg_of_the_mechanism_config_is_refused_naming_the_file(tmp_path):
    (tmp_path / "mech.yaml").write_text("model:\n  mechanism:\n    class_path: GRU\n    init_args: {d_modle: 8}\n")
    with pytest.raises(StudyError) as err:
        load_study(_study(tmp_path, "", f"  - name: A\n    config: {tmp_path / 'mech.yaml'}\n"))
    assert str(err.value).endswith(
        f"(A): config {tmp_path / 'mech.yaml'}: model.mechanism.init_args.d_modle is not an argument of "
        "swar_bench.mechanisms.GRU (did you mean d_model?); expected one of vocab_size, d_model, n_layers, mlp_ratio")


def test_a_class_that_takes_kwargs_is_not_checked(tmp_path, monkeypatch):
    (tmp_path / "kwlayers.py").write_text(
        "from swar_bench.mechanisms import GRU\n\n\nclass Open(GRU):\n"
        "    def __init__(self, **kwargs):\n        super().__init__(**kwargs)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kwlayers", raising=False)
    spec = load_study(_study(tmp_path, "", "  - {name: A, class_path: kwlayers.Open, init_args: {anything: 1}}\n"))
    assert spec.mechanisms[0].init_args == {"anything": 1}


@settings(max_examples=30, deadline=None)
@given(key=st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_an_init_arg_is_accepted_iff_the_class_takes_it(tmp_path_factory, key):
    tmp = tmp_path_factory.mktemp("args")
    mech = f"  - {{name: A, class_path: GRU, init_args: {{{key}: 8}}}}\n"
    if key in ("vocab_size", "d_model", "n_layers", "mlp_ratio"):
        assert load_study(_study(tmp, "", mech)).mechanisms[0].init_args == {key: 8}
        return
    with pytest.raises(StudyError) as err:
        load_study(_study(tmp, "", mech))
    line = str(err.value)
    assert f"init_args.{key} is not an argument of swar_bench.mechanisms.GRU" in line and "\n" not in line
    assert line.endswith("expected one of vocab_size, d_model, n_layers, mlp_ratio")


# ----------------------------------------------------------------- 4. a retry that trains longer


def test_a_retry_steps_factor_of_1_is_refused_in_one_line(tmp_path, capsys):
    study = _study(tmp_path, "retry_steps_factor: 1\n", GRU1)
    assert main(["status", str(study)]) == 2
    assert capsys.readouterr().err == (
        f"swar-bench study status: error: {study}: retry_steps_factor=1 is invalid; expected an integer > 1 (the retry "
        "of a non-learner trains retry_steps_factor times the steps of its seed-0 fit; 1 would repeat that fit)\n")


@settings(max_examples=30, deadline=None)
@given(factor=st.one_of(st.integers(-3, 6), st.floats(0, 4), st.booleans(), st.sampled_from(["3", "1"])))
def test_a_retry_steps_factor_is_accepted_iff_the_retry_trains_longer(tmp_path_factory, factor):
    """Accepted factors make the retry's command train more steps (with the seed and rate of the
    seed-0 fit); every other value is refused in one line naming it. The text of an integer is
    that integer (``"3"``), as ``swar-bench fit`` reads it."""
    tmp = tmp_path_factory.mktemp("factor")
    study = _study(tmp, f"retry_steps_factor: {json.dumps(factor)}\n", GRU1)
    factor = int(factor) if isinstance(factor, str) else factor
    ok = isinstance(factor, int) and not isinstance(factor, bool) and factor > 1
    if not ok:
        with pytest.raises(StudyError, match=r"retry_steps_factor=.* is invalid; expected an integer > 1"):
            load_study(study)
        return
    spec = load_study(study)
    m = spec.mechanisms[0]
    budget = read_budget(spec, m)
    retry = fit_args(spec, budget, m, 1e-3, 0, retry=True)
    assert f"--trainer.max_steps={budget.max_steps * factor}" in retry
    assert f"--model.max_steps={budget.max_steps * factor}" in retry
    assert budget.max_steps * factor > budget.max_steps


def test_the_retry_of_the_curriculum_study_spends_three_times_the_flops():
    """Its budget configs stop by FLOPs (FlopBudget, LengthCurriculum): more steps alone would stop
    the retry at the same 4.6e12 FLOPs; the retry's command triples the FLOP budget too."""
    spec = load_study(ROOT / "configs" / "studies" / "curriculum.yaml")
    for m in spec.mechanisms:
        fit = fit_args(spec, read_budget(spec, m), m, 1e-3, 0)
        retry = fit_args(spec, read_budget(spec, m), m, 1e-3, 0, retry=True)
        assert not any(a.startswith("--trainer.callbacks") for a in fit)
        callbacks = json.loads(retry[-1].removeprefix("--trainer.callbacks="))
        assert [c["init_args"]["budget_flops"] for c in callbacks if c["init_args"].get("budget_flops")] == [3 * 4.6e12]


@settings(max_examples=25, deadline=None)
@given(factor=st.integers(2, 6), flops=st.floats(1e6, 1e15), curriculum=st.booleans(), text=st.booleans())
def test_a_retry_of_a_flop_budgeted_run_spends_factor_times_the_flops(tmp_path_factory, factor, flops, curriculum, text):
    tmp = tmp_path_factory.mktemp("flops")
    study = _study(tmp, f"retry_steps_factor: {factor}\n", GRU1)
    name = "LengthCurriculum" if curriculum else "FlopBudget"
    value = f'"{flops!r}"' if text else repr(flops)  # a YAML string such as "4.6e12" is a number to fit
    base = (tmp / "base.yaml").read_text().replace(
        "  logger:", f"  callbacks:\n    - class_path: swar_bench.callbacks.{name}\n"
        f"      init_args: {{budget_flops: {value}}}\n  logger:")
    (tmp / "base.yaml").write_text(base)
    spec = load_study(study)
    m = spec.mechanisms[0]
    retry = fit_args(spec, read_budget(spec, m), m, 1e-3, 0, retry=True)
    callbacks = json.loads(retry[-1].removeprefix("--trainer.callbacks="))
    assert callbacks == [{"class_path": f"swar_bench.callbacks.{name}", "init_args": {"budget_flops": flops * factor}}]


def test_fits_that_failed_get_no_retry(tmp_path):
    # reported: `init_args: {n_layers: two}` failed every fit (exit 2), then ran a "retry" with
    # three times the steps that failed the same way: a retry is for fits that trained and did
    # not learn
    bad = "  - name: GRU1\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: two}\n"
    study = _study(tmp_path, ONE_RATE + "seeds: 2\n", bad)
    from tests.study.test_study_cli import _swar_bench

    # (a refusal, exit 2, now also stops the study: no run starts after it, the running one finishes)
    run = _swar_bench("study", "run", str(study))
    assert run.returncode == 2, run.stdout + run.stderr
    failed = sorted(p.name for p in (tmp_path / "records").glob("*.failed.json"))
    assert failed and set(failed) <= {"GRU1_lr0.001_seed0.failed.json", "GRU1_lr0.001_seed1.failed.json"}, failed
    assert "_retry" not in run.stdout + run.stderr and "refused its command (exit 2)" in run.stderr
