"""`swar-bench study run --launcher slurm` without a cluster: the submission planning against a
fake queue (what is submitted, when, and what again), the refusals, the sbatch script submitit
writes from the study's `slurm:` section, the queue in `status`, and a requeued task's resume.

The real cluster test is `make test-slurm` (scripts/slurm/study_test.sh)."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import launchers
from swar_bench.study.cli import main
from swar_bench.study.launchers import (
    SlurmLauncher,
    Task,
    plan,
    queue_state,
    sbatch_parameters,
    write_marker,
)
from swar_bench.study.records import read_json, write_json
from swar_bench.study.runner import Runner, run_name
from swar_bench.study.slurm_spec import SLURM_KEYS, SlurmSpec, slurm_spec
from swar_bench.study.spec import StudyError, load_study
from swar_bench.utils import slurm_commands
from swar_bench.utils.argparsing import NumberArg

BASE = """trainer:
  accelerator: cpu
  max_steps: 8
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: runs, name: tiny}
data:
  train_configs: [32]
  val_configs: [32, 64]
  test_configs: [32, 64]
"""


def _study(tmp: Path, extra: str = "", mechanisms: int = 1, borrow: bool = False) -> Path:
    """A study of ``mechanisms`` GRUs M0, M1, ...; with ``borrow`` an arm that runs at M0's rate."""
    (tmp / "base.yaml").write_text(BASE)
    mechs = "".join(f"  - name: M{i}\n    class_path: GRU\n    init_args: {{d_model: {8 + i}}}\n" for i in range(mechanisms))
    if borrow:
        mechs += "  - name: Arm\n    class_path: GRU\n    init_args: {d_model: 7}\n    learning_rate_from: M0\n"
    path = tmp / "study.yaml"
    path.write_text(f"name: tiny\nconfig: {tmp / 'base.yaml'}\nrecords: {tmp / 'records'}\nout: {tmp / 'runs'}\nreadout_n: 64\n"
                    f"{extra}mechanisms:\n{mechs}")
    return path


def _outcome(salt: int, pass_rate: float):
    """A deterministic fake result per run: ``(score, passed)``."""

    def outcome(kind: str, name: str) -> tuple[float, bool]:
        rng = random.Random(f"{salt}:{name}")
        return rng.random(), rng.random() < pass_rate

    return outcome


def _fit_record(command: str, code: dict, score: float, passed: bool) -> dict:
    value = 1.0 if passed else 0.0
    return {"kind": "fit", "command": command, "code": code, "score": score,
            "gate": {"ar_valid": value, "passkey_exact": value, "passed": passed}}


class FakeQueue:
    """A queue that submits arrays, lists their tasks RUNNING, and on ``finish`` ends them all: a
    task writes its record (fit: the fake outcome), unless its run is in ``cancel`` (it ends
    CANCELLED without one, the first time it is submitted)."""

    def __init__(self, outcome, cancel: set[str] = frozenset(), finish_on_wait: bool = True):
        self.outcome, self.cancel = outcome, set(cancel)
        self.arrays: list[list[str]] = []
        self.running: dict[str, Task] = {}
        self.states: dict[str, str] = {}
        self.finish_on_wait = finish_on_wait
        self.launcher: SlurmLauncher | None = None

    def attach(self, launcher: SlurmLauncher) -> SlurmLauncher:
        launcher._submit, launcher.states = self.submit, lambda: dict(self.states)
        launcher.wait_for_change = self.wait
        self.launcher = launcher
        return launcher

    def submit(self, tasks: list[Task]) -> list[str]:
        records = self.launcher.records
        for task in tasks:  # decidable: a test's fit is done
            assert task.kind == "fit" or (records / f"{task.name}.fit.json").is_file(), f"{task} before its fit"
        array = len(self.arrays) + 1
        self.arrays.append([str(t) for t in tasks])
        ids = [f"{array}_{i}" for i in range(len(tasks))]
        for job, task in zip(ids, tasks):
            self.running[job], self.states[job] = task, "RUNNING"
        return ids

    def finish(self) -> None:
        records = self.launcher.records
        for job, task in list(self.running.items()):
            del self.running[job]
            if task.name in self.cancel:
                self.cancel.discard(task.name)
                self.states[job] = "CANCELLED"
                continue
            command = self.launcher.commands[task.key]
            if task.kind == "fit":
                score, passed = self.outcome(task.kind, task.name)
                write_json(records / f"{task.name}.fit.json", _fit_record(command, self.launcher.code, score, passed))
            else:
                write_json(records / f"{task.name}.test.json", {"kind": "test", "command": command,
                                                                "code": self.launcher.code})
            self.states[job] = "COMPLETED"

    def wait(self) -> None:
        assert self.finish_on_wait, "the launcher waited with wait=False"
        self.finish()


class LocalReference(Runner):
    """The local protocol with the same fake results, run synchronously: the runs it makes."""

    def __init__(self, spec, outcome):
        super().__init__(spec, jobs=4, log=lambda line: None)
        self.outcome, self.ran, self.commands = outcome, [], {}

    def _record(self, name, kind, command):
        self.commands[(kind, name)] = command
        return super()._record(name, kind, command)

    def _launch(self, kind, m, lr, seed, retry):
        name = run_name(m, lr, seed, retry)
        with self.lock:
            self.ran.append(f"{kind} {name}")
        command = self.commands[(kind, name)]
        if kind == "fit":
            score, passed = self.outcome(kind, name)
            write_json(self.records / f"{name}.fit.json", _fit_record(command, self.code, score, passed))
        else:
            write_json(self.records / f"{name}.test.json", {"kind": "test", "command": command, "code": self.code})
        return read_json(self.records / f"{name}.{kind}.json")


def _launcher(spec, queue: FakeQueue, **kwargs) -> SlurmLauncher:
    logs: list[str] = []  # every line, in order
    errors: list[str] = []  # the lines of the error channel (stderr)
    launcher = SlurmLauncher(spec, SlurmSpec(), log=logs.append,
                             log_error=lambda line: (logs.append(line), errors.append(line)), **kwargs)
    launcher.lines, launcher.errors = logs, errors
    return queue.attach(launcher)


# ---------------------------------------------------------------------------------------- planning


def test_the_protocol_is_submitted_step_by_step_as_arrays(tmp_path):
    """Selection fits of every grid rate (one array), then the other seeds at the chosen rate,
    then the tests of the seeds that passed the gate; each run once; a second run submits nothing."""
    spec = load_study(_study(tmp_path, "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 3\n"))
    results = {"M0_lr0.001_seed0": (0.2, True), "M0_lr0.003_seed0": (0.6, True), "M0_lr0.003_seed1": (0.5, False),
               "M0_lr0.003_seed2": (0.5, True)}
    queue = FakeQueue(lambda kind, name: results[name])
    launcher = _launcher(spec, queue)
    assert launcher.run() == 0
    assert queue.arrays == [
        ["fit M0_lr0.001_seed0", "fit M0_lr0.003_seed0"],
        ["fit M0_lr0.003_seed1", "fit M0_lr0.003_seed2"],
        ["test M0_lr0.003_seed0", "test M0_lr0.003_seed2"],
    ]
    assert launcher.lines[-1] == "study: every run of the protocol is done"
    assert not list((tmp_path / "runs").glob("*.slurm"))  # every marker went with its task

    again = FakeQueue(lambda kind, name: results[name])
    assert _launcher(spec, again).run() == 0 and again.arrays == []


def test_a_cancelled_run_counts_as_failed_then_the_next_run_submits_only_it(tmp_path):
    """A task that ends without its record: a failure record naming the job and state, the rest of
    the protocol goes on as with a failed local run (exit 1); the next run submits that fit, then
    its test, and nothing else."""
    spec = load_study(_study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 2\n", mechanisms=2))
    outcome = _outcome(0, 1.0)
    queue = FakeQueue(outcome, cancel={"M1_lr0.003_seed0"})
    first = _launcher(spec, queue)
    assert first.run() == 1
    records = tmp_path / "records"
    failure = json.loads((records / "M1_lr0.003_seed0.failed.json").read_text())
    assert failure["slurm_job"] == "1_1" and failure["slurm_state"] == "CANCELLED" and failure["kind"] == "fit"
    assert "--model.lr=0.003" in failure["command"]
    assert "study: fit M1_lr0.003_seed0 ended CANCELLED without a record (job 1_1); see" in "\n".join(first.errors)
    assert "study: 1 run(s) failed: fit M1_lr0.003_seed0;" in first.lines[-1] == first.errors[-1]
    assert not [ln for ln in first.lines if ln not in first.errors and ("failed" in ln or "without a record" in ln)]
    assert sorted(p.name for p in records.glob("*.test.json")) == [
        "M0_lr0.003_seed0.test.json", "M0_lr0.003_seed1.test.json", "M1_lr0.003_seed1.test.json"]

    second = FakeQueue(outcome)
    assert _launcher(spec, second).run() == 0
    assert second.arrays == [["fit M1_lr0.003_seed0"], ["test M1_lr0.003_seed0"]]
    assert not (records / "M1_lr0.003_seed0.failed.json").exists()


def test_no_wait_submits_what_is_decidable_and_never_twice(tmp_path):
    """``--no-wait``: each run submits the runs decidable now and exits 0 saying what to run next;
    a run while they are queued submits nothing; once they ended the next step goes."""
    spec = load_study(_study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 2\n"))
    queue = FakeQueue(_outcome(1, 1.0), finish_on_wait=False)
    first = _launcher(spec, queue, wait=False)
    assert first.run() == 0
    assert queue.arrays == [["fit M0_lr0.003_seed0"]]
    assert "1 run(s) queued or running; once they have ended, `swar-bench study run" in first.lines[-1]
    assert "--launcher slurm` submits the next step" in first.lines[-1]
    assert queue_state(tmp_path / "runs", "fit", "M0_lr0.003_seed0", queue.states) == "running"

    assert _launcher(spec, queue, wait=False).run() == 0 and len(queue.arrays) == 1  # still running: nothing new
    queue.states["1_0"] = "PENDING"  # requeued: waits again
    assert queue_state(tmp_path / "runs", "fit", "M0_lr0.003_seed0", queue.states) == "queued"
    assert _launcher(spec, queue, wait=False).run() == 0 and len(queue.arrays) == 1
    queue.states["1_0"] = "RUNNING"
    queue.finish()
    assert _launcher(spec, queue, wait=False).run() == 0
    assert queue.arrays[1:] == [["fit M0_lr0.003_seed1"]]
    queue.finish()
    assert _launcher(spec, queue, wait=False).run() == 0
    queue.finish()
    last = _launcher(spec, queue, wait=False)
    assert last.run() == 0 and last.lines[-1] == "study: every run of the protocol is done"
    assert queue.arrays[2:] == [["test M0_lr0.003_seed0", "test M0_lr0.003_seed1"]]


def test_a_task_that_ended_while_no_run_watched_is_submitted_again(tmp_path):
    """The marker of a task that left the queue without its record (its `run` was stopped): the
    next run writes its failure record and submits it again in the same run."""
    spec = load_study(_study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 1\n"))
    (tmp_path / "runs").mkdir()
    write_marker(tmp_path / "runs", Task("fit", "M0", 3e-3, 0), "7_0")
    queue = FakeQueue(_outcome(2, 1.0))
    queue.states["7_0"] = "TIMEOUT"
    launcher = _launcher(spec, queue)
    assert launcher.run() == 0
    assert "study: fit M0_lr0.003_seed0: its task (job 7_0) ended TIMEOUT without a record; submitting it again" \
        in launcher.errors
    assert queue.arrays == [["fit M0_lr0.003_seed0"], ["test M0_lr0.003_seed0"]]


def test_a_non_learner_gets_its_longer_retry_then_its_test(tmp_path):
    spec = load_study(_study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 2\n"))
    queue = FakeQueue(lambda kind, name: (0.1, name.endswith("_retry")))
    assert _launcher(spec, queue).run() == 0
    assert queue.arrays == [["fit M0_lr0.003_seed0"], ["fit M0_lr0.003_seed1"], ["fit M0_lr0.003_seed0_retry"],
                            ["test M0_lr0.003_seed0_retry"]]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(salt=st.integers(0, 2**32 - 1), pass_rate=st.sampled_from([0.0, 0.5, 1.0]), seeds=st.integers(1, 3),
       selection=st.integers(1, 3), mechanisms=st.integers(1, 2), extend=st.booleans(), borrow=st.booleans())
def test_slurm_submits_exactly_the_runs_of_the_local_protocol(tmp_path_factory, salt, pass_rate, seeds, selection,
                                                             mechanisms, extend, borrow):
    """Whatever the results (scores, gate, edge extensions, non-learners, an arm at another
    mechanism's rate), the SLURM launcher submits each run the local protocol makes, once, each
    after the runs it depends on (the fake queue refuses a test before its fit), and no other."""
    selection = min(selection, seeds)
    extra = "{below: [1.0e-4], above: [1.0e-2]}" if extend else "{below: [], above: []}"
    text = (f"learning_rates: [3.0e-4, 3.0e-3]\nextra_learning_rates: {extra}\nselection_seeds: {selection}\n"
            f"seeds: {seeds}\ngate: {{ar_valid: 0.5, passkey_exact: 0.9}}\n")
    slurm_dir, local_dir = tmp_path_factory.mktemp("slurm"), tmp_path_factory.mktemp("local")
    outcome = _outcome(salt, pass_rate)
    queue = FakeQueue(outcome)
    assert _launcher(load_study(_study(slurm_dir, text, mechanisms, borrow)), queue).run() == 0
    submitted = [run for array in queue.arrays for run in array]
    local = LocalReference(load_study(_study(local_dir, text, mechanisms, borrow)), outcome)
    assert local.run() == 0
    assert len(submitted) == len(set(submitted)) and sorted(submitted) == sorted(local.ran)


def test_plan_of_a_fresh_study_is_its_selection_fits(tmp_path):
    spec = load_study(_study(tmp_path, "learning_rates: [1.0e-3, 3.0e-3]\nselection_seeds: 2\nseeds: 3\n"))
    tasks, commands = plan(spec)
    assert [str(t) for t in tasks] == ["fit M0_lr0.001_seed0", "fit M0_lr0.001_seed1", "fit M0_lr0.003_seed0",
                                       "fit M0_lr0.003_seed1"]
    assert all(commands[t.key].startswith("swar-bench fit --config") for t in tasks)


# ---------------------------------------------------------------------------------------- refusals


def test_slurm_launcher_without_sbatch_is_refused_in_one_line_before_anything(tmp_path, monkeypatch, capsys):
    study = _study(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["run", str(study), "--launcher", "slurm"]) == 2
    err = capsys.readouterr().err
    assert err == ("swar-bench study run: error: --launcher slurm: SLURM's sbatch was not found on PATH; expected a SLURM "
                   "login node where sbatch and squeue answer (or --launcher local)\n")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "records").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--partition", "gpu"], "--partition is a SLURM option; expected --launcher slurm with it"),
    (["--no-wait"], "--no-wait is a SLURM option; expected --launcher slurm with it"),
    # reported: `study run s.yaml --poll-s 0` started training (its default hid that it was given);
    # 0 is now refused as a value (test_a_slurm_option_value_out_of_range_is_refused_as_typed)
    (["--poll-s", "30"], "--poll-s is a SLURM option; expected --launcher slurm with it"),
    (["--gpus-per-task", "0"], "--gpus-per-task is a SLURM option; expected --launcher slurm with it"),
])
def test_slurm_options_need_the_slurm_launcher(tmp_path, capsys, args, message):
    assert main(["run", str(_study(tmp_path)), *args]) == 2
    assert capsys.readouterr().err == f"swar-bench study run: error: {message}\n"


def _slurm_only_options() -> list[argparse.Action]:
    """The options of `study run` that only the SLURM launcher reads (their help says "slurm:")."""
    from swar_bench.study.launchers import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return [a for a in parser._actions if (a.help or "").startswith("slurm:")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_slurm_option_without_the_slurm_launcher_is_refused_naming_it(tmp_path, capsys, data):
    """The kind: each option only the SLURM launcher reads, with any value its type takes (0 and
    its default included), given to the local launcher: refused in one line naming it, nothing run."""
    action = data.draw(st.sampled_from(_slurm_only_options()), label="option")
    flag = action.option_strings[0]
    if action.nargs == 0:
        value = []
    elif isinstance(action.type, NumberArg):  # a value it takes (0 included where it does): not refused as a value
        value = [str(data.draw(st.integers(-5, 100).filter(lambda v: action.type.accepts(action.type.kind(v))),
                               label="value"))]
    else:
        value = [data.draw(st.sampled_from(["gpu", "account=x", "exclusive", "30"]), label="value")]
    study = _study(tmp_path)
    assert main(["run", str(study), flag, *value]) == 2
    assert capsys.readouterr().err == f"swar-bench study run: error: {flag} is a SLURM option; expected --launcher slurm with it\n"
    assert not (tmp_path / "runs").exists() and not (tmp_path / "records").exists()


def test_the_reported_poll_s_0_is_refused_as_typed(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:  # the parser's refusal, as argparse ends
        main(["run", str(_study(tmp_path)), "--poll-s", "0"])
    assert exit.value.code == 2
    assert capsys.readouterr().err == "swar-bench study run: error: --poll-s=0: expected a positive number of seconds\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), slurm=st.booleans())
def test_a_slurm_option_value_out_of_range_is_refused_as_typed(tmp_path, capsys, data, slurm):
    """The kind: a numeric SLURM option given a word or a number it does not take is refused in
    one line, the value as typed, with either launcher, before anything runs."""
    action = data.draw(st.sampled_from([a for a in _slurm_only_options() if isinstance(a.type, NumberArg)]), label="option")
    word = data.draw(st.one_of(st.sampled_from(["abc", "nan", "inf", "-0", "1e3x", "1.5", ""]),
                               st.integers(-5, 5).map(str)).filter(lambda w: not _takes(action.type, w)), label="value")
    argv = ["run", str(_study(tmp_path)), *(["--launcher", "slurm"] if slurm else []), f"{action.option_strings[0]}={word}"]
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert capsys.readouterr().err == (f"swar-bench study run: error: {action.option_strings[0]}={word}: "
                                       f"expected {action.type.expected}\n")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "records").exists()


def _takes(number: NumberArg, word: str) -> bool:
    try:
        number(word)
    except ValueError:
        return False
    return True


def test_slurm_section_unknown_key_is_named_with_a_suggestion(tmp_path):
    with pytest.raises(StudyError, match=r"slurm: unknown key 'gpus_per_node' \(did you mean 'gpus_per_task'\?\)"):
        load_study(_study(tmp_path, "slurm: {gpus_per_node: 1}\n"))


@settings(max_examples=25, deadline=None)
@given(key=st.from_regex(r"[a-z_]{3,16}", fullmatch=True).filter(lambda k: k not in SLURM_KEYS))
def test_every_unknown_slurm_key_is_one_line_naming_it(key):
    with pytest.raises(StudyError) as err:
        slurm_spec({key: 1}, "study.yaml: slurm")
    assert f"unknown key {key!r}" in str(err.value) and "\n" not in str(err.value)


def test_slurm_section_that_is_not_a_mapping_is_one_line(tmp_path):
    with pytest.raises(StudyError, match=r"study.yaml: slurm=\[\] is invalid; expected a mapping of additional_"):
        load_study(_study(tmp_path, "slurm: []\n"))


@pytest.mark.parametrize(("raw", "message"), [
    ({"time_min": 0}, r"slurm: time_min=0 is invalid; expected an integer >= 1"),
    ({"gpus_per_task": -1}, r"gpus_per_task=-1 is invalid; expected an integer >= 0"),
    ({"mem_gb": "lots"}, r"mem_gb='lots' is invalid; expected a positive number of GB"),
    ({"partition": "a b"}, r"partition='a b' is invalid; expected a partition name"),
    ({"additional_parameters": {"signal": "USR2@10"}}, r"additional_parameters.signal is set by the launcher"),
    ({"time_min": 1, "signal_delay_s": 60}, r"signal_delay_s=60 is not below time_min=1 minutes"),
])
def test_bad_slurm_values_are_one_line(raw, message):
    with pytest.raises(StudyError, match=message) as err:
        slurm_spec(raw, "study.yaml: slurm")
    assert "\n" not in str(err.value)


def test_command_line_overrides_the_study_and_reaches_sbatch(tmp_path):
    """The study's `slurm:` section, the command line on top, and the sbatch script submitit
    writes from them: resources, --requeue, SIGUSR1 before the time limit, the array."""
    submitit_slurm = pytest.importorskip("submitit.slurm.slurm")
    from swar_bench.study.cli import _parser

    spec = load_study(_study(tmp_path, "slurm: {partition: gpu, time_min: 120, cpus_per_task: 8, gpus_per_task: 1, "
                                       "mem_gb: 32, signal_delay_s: 120, array_parallelism: 2, "
                                       "additional_parameters: {qos: low}}\n"))
    args = _parser().parse_args(["run", "s.yaml", "--launcher", "slurm", "--time-min", "30", "--cpus-per-task", "4",
                                 "--slurm-param", "account=proj", "--slurm-param", "exclusive"])
    slurm = launchers.slurm_options(spec, args)
    assert (slurm.partition, slurm.time_min, slurm.cpus_per_task, slurm.gpus_per_task, slurm.mem_gb) == \
        ("gpu", 30, 4, 1, 32.0)
    assert slurm.additional_parameters == {"qos": "low", "account": "proj", "exclusive": True}
    text = submitit_slurm._make_sbatch_string(command="python -m x", folder=tmp_path / "%j", map_count=3,
                                              **sbatch_parameters(spec, slurm))
    lines = set(text.splitlines())
    for line in ("#SBATCH --partition=gpu", "#SBATCH --time=30", "#SBATCH --cpus-per-task=4",
                 "#SBATCH --gpus-per-task=1", "#SBATCH --mem=32768M", "#SBATCH --signal=USR1@120",
                 "#SBATCH --requeue", "#SBATCH --qos=low", "#SBATCH --account=proj", "#SBATCH --exclusive",
                 "#SBATCH --array=0-2%2", "#SBATCH --job-name=study_tiny", "#SBATCH --ntasks-per-node=1"):
        assert line in lines, line
    assert not any("USR2" in line for line in lines)

    bad = _parser().parse_args(["run", "s.yaml", "--launcher", "slurm", "--slurm-param", "=x"])
    with pytest.raises(StudyError, match=r"--slurm-param='=x' is invalid; expected OPTION=VALUE"):
        launchers.slurm_options(spec, bad)


# ---------------------------------------------------------------------------------------- status


def test_status_reads_the_queue(tmp_path, monkeypatch):
    from swar_bench.study import status

    spec = load_study(_study(tmp_path, "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
                                       "selection_seeds: 1\nseeds: 1\n"))
    (tmp_path / "runs").mkdir()
    write_marker(tmp_path / "runs", Task("fit", "M0", 3e-3, 0), "5_0")
    for state, shown in (("PENDING", "queued"), ("RUNNING", "running"), ("COMPLETED", "to do")):
        monkeypatch.setattr(status, "squeue_states", lambda state=state: {"5_0": state})
        assert ("M0", "fit M0_lr0.003_seed0", shown) in status.run_states(spec)

    def no_squeue():
        raise StudyError("squeue is not on PATH")

    monkeypatch.setattr(status, "squeue_states", no_squeue)  # the records off the cluster: trust the marker
    assert ("M0", "fit M0_lr0.003_seed0", "running") in status.run_states(spec)


def test_squeue_states_parses_array_tasks(monkeypatch):
    import subprocess

    def fake_run(command, **kwargs):
        assert command[:4] == ["squeue", "--noheader", "--array", "--states=all"]
        return subprocess.CompletedProcess(command, 0, "12_0|RUNNING\n12_1|PENDING\n13|CANCELLED by 0\n", "")

    monkeypatch.setattr(slurm_commands.subprocess, "run", fake_run)
    assert launchers.squeue_states("me") == {"12_0": "RUNNING", "12_1": "PENDING", "13": "CANCELLED"}


# ---------------------------------------------------------------------------------------- inside a task


def _checkpoint(path: Path, step: int) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"global_step": step, "state_dict": {}}, path)


def test_a_requeued_or_resubmitted_fit_resumes_from_its_newest_checkpoint(tmp_path, monkeypatch):
    """Inside a task a fit resumes as a local one does (same command and code: its attempt file),
    from the checkpoint with the most progress by name, the requeue's hpc_ckpt among them; the
    stopped attempt's log is kept."""
    from swar_bench.study.attempts import Attempts, read_attempts
    from swar_bench.study.commands import command_text, fit_args

    spec = load_study(_study(tmp_path))
    m = spec.mechanism("M0")
    run_dir = tmp_path / "runs" / "M0_lr0.003_seed0"
    ckpts = run_dir / "checkpoints"
    log = tmp_path / "runs" / "M0_lr0.003_seed0.fit.log"
    seen = []

    def execute(self, args, log_path, attempt=None):
        seen.append(args)
        attempt.begin()
        _checkpoint(ckpts / "last.ckpt", 32)
        attempt.end(1.0)
        return 0, 1.0

    monkeypatch.setattr(Runner, "_execute", execute)
    for restart in (1, 0):  # a requeue (SLURM_RESTART_COUNT 1), a new submission by a later run
        seen.clear()
        runner = launchers._TaskRunner(spec, restart=restart)
        command = command_text(fit_args(spec, runner.budgets["M0"], m, 0.003, 0))
        (tmp_path / "records" / "M0_lr0.003_seed0.fit.json").unlink(missing_ok=True)
        Attempts(run_dir, command, runner.code["fingerprint"]).forget()
        Attempts(run_dir, command, runner.code["fingerprint"]).begin()  # the stopped attempt
        _checkpoint(ckpts / "last.ckpt", 20)
        _checkpoint(ckpts / "hpc_ckpt_1.ckpt", 24)
        log.write_text("the interrupted attempt\n")
        record = runner.fit(m, 0.003, 0)
        assert seen[0][-1] == f"--ckpt_path={ckpts / 'hpc_ckpt_1.ckpt'}" and record["resumed_from_step"] == [24]
        assert record["command"] == command and (ckpts / "last.ckpt").is_file()
        assert (log.parent / "M0_lr0.003_seed0.fit.log.0").read_text() == "the interrupted attempt\n"
        assert len(read_attempts(run_dir)["attempts"]) == 2

    seen.clear()
    (tmp_path / "records" / "M0_lr0.003_seed0.fit.json").unlink()
    other = launchers._TaskRunner(spec, restart=1)
    other.code = {**other.code, "fingerprint": "0" * 16}  # submitted by other training code
    record = other.fit(m, 0.003, 0)
    assert not any("--ckpt_path" in a for a in seen[0]) and "resumed_from_step" not in record  # afresh
    assert not (ckpts / "hpc_ckpt_1.ckpt").exists() and not log.with_name(log.name + ".1").exists()


def test_pending_is_falsy_and_never_passes_the_gate(tmp_path):
    runner = Runner(load_study(_study(tmp_path)), jobs=1, log=lambda line: None)
    assert not launchers.PENDING and not runner.passed(launchers.PENDING)
