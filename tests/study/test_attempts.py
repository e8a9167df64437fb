"""The attempt file of a study's fit: when the next `study run` resumes it and when it starts afresh,
what the record says of its attempts, and the curve of a fit logged over several attempts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.study import provenance
from swar_bench.study.attempts import ATTEMPT_FILE, Attempts, plan_attempt, read_attempts
from swar_bench.study.commands import command_text, fit_args
from swar_bench.study.records import scalar_history
from swar_bench.study.runner import Runner
from swar_bench.study.spec import load_study
from tests.study.test_launchers import _study

FP = provenance.fingerprint()
OTHER = "0123456789abcdef" if FP != "0123456789abcdef" else "fedcba9876543210"


def _checkpoint(path: Path, step: int) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"global_step": step, "state_dict": {}}, path)


@settings(max_examples=60, deadline=None)
@given(
    saved=st.sampled_from(["none", "garbage", "same", "other command", "other code"]),
    checkpoint=st.sampled_from(["none", "cut short", "readable"]),
)
def test_a_fit_resumes_only_with_the_same_command_code_and_a_readable_checkpoint(
    tmp_path_factory, saved, checkpoint
):
    run_dir = tmp_path_factory.mktemp("run")
    if saved == "garbage":
        (run_dir / ATTEMPT_FILE).write_text("{not json")
    elif saved != "none":
        command = "swar-bench fit --x=2" if saved == "other command" else "swar-bench fit --x=1"
        Attempts(run_dir, command, OTHER if saved == "other code" else FP).begin()
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    if checkpoint == "readable":
        _checkpoint(ckpt, 12)
    elif checkpoint == "cut short":
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        ckpt.write_bytes(b"PK\x03\x04 cut short")
    plan = plan_attempt(run_dir, "swar-bench fit --x=1", FP)
    resumes = saved == "same" and checkpoint == "readable"
    assert (plan.resume_from is not None) == resumes
    if resumes:
        assert plan.resume_from == (str(ckpt), 12) and len(plan.history) == 1
    else:
        assert plan.history == []


def test_an_attempt_ended_without_notice_counts_until_its_checkpoint(tmp_path):
    first = Attempts(tmp_path, "swar-bench fit", FP)
    first.begin()
    saved = read_attempts(tmp_path)
    saved["attempts"][0]["started"] = time.time() - 100
    (tmp_path / ATTEMPT_FILE).write_text(json.dumps(saved))
    ckpt = tmp_path / "checkpoints" / "last.ckpt"
    _checkpoint(ckpt, 5)
    os.utime(ckpt, (time.time() - 40, time.time() - 40))  # written 60 s after the start
    plan = plan_attempt(tmp_path, "swar-bench fit", FP)
    assert (
        plan.history[0]["wall_s"] == pytest.approx(60, abs=1)
        and plan.history[0]["wall_s_until_checkpoint"]
    )
    plan.begin()
    plan.end(30.0)
    assert plan.wall_s == pytest.approx(90, abs=1) and plan.resumed_from_steps == [5]
    assert read_attempts(tmp_path)["attempts"][1] == {**plan.history[1], "wall_s": 30.0}


# ---------------------------------------------------------------------------------------- Runner.fit


def _fit_setup(tmp_path: Path, monkeypatch, rc: int = 0):
    spec = load_study(_study(tmp_path))
    runner = Runner(spec, jobs=1, log=lambda line: seen["log"].append(line))
    m = spec.mechanism("M0")
    args = fit_args(spec, runner.budgets["M0"], m, 0.003, 0)
    seen: dict[str, list] = {"args": [], "log": []}

    def execute(self, run_args, log_path, attempt=None):
        seen["args"].append(run_args)
        attempt.begin()
        _checkpoint(tmp_path / "runs" / "M0_lr0.003_seed0" / "checkpoints" / "last.ckpt", 8)
        attempt.end(2.0)
        return rc, 2.0

    monkeypatch.setattr(Runner, "_execute", execute)
    seen["fit_args"] = args
    return spec, runner, m, command_text(args), seen


def test_the_runner_resumes_a_stopped_fit_and_records_its_attempts(tmp_path, monkeypatch):
    _, runner, m, command, seen = _fit_setup(tmp_path, monkeypatch)
    run_dir = tmp_path / "runs" / "M0_lr0.003_seed0"
    stopped = Attempts(run_dir, command, runner.code["fingerprint"])
    stopped.begin()
    stopped.end(5.0)
    _checkpoint(run_dir / "checkpoints" / "last.ckpt", 4)
    (tmp_path / "records").mkdir()
    # the test of an earlier checkpoint
    (tmp_path / "records" / "M0_lr0.003_seed0.test.json").write_text("{}")
    record = runner.fit(m, 0.003, 0)
    assert seen["args"] == [[*seen["fit_args"], "--ckpt_path=last"]]
    assert seen["log"][0] == "study: fit M0_lr0.003_seed0: resuming from step 4"
    assert record["command"] == command and "--ckpt_path" not in record["command"]
    assert record["resumed_from_step"] == [4] and record["wall_s"] == 7.0
    assert not (tmp_path / "records" / "M0_lr0.003_seed0.test.json").exists()


@pytest.mark.parametrize("change", ["command", "code"])
def test_the_runner_starts_afresh_after_a_change_of_command_or_code(tmp_path, monkeypatch, change):
    _, runner, m, command, seen = _fit_setup(tmp_path, monkeypatch)
    run_dir = tmp_path / "runs" / "M0_lr0.003_seed0"
    Attempts(
        run_dir,
        command + " --other" if change == "command" else command,
        OTHER if change == "code" else runner.code["fingerprint"],
    ).begin()
    _checkpoint(run_dir / "checkpoints" / "last.ckpt", 4)
    (run_dir / "checkpoints" / "stale.ckpt").write_text("x")
    record = runner.fit(m, 0.003, 0)
    assert not any("--ckpt_path" in a for a in seen["args"][0]) and not any(
        "resuming" in x for x in seen["log"]
    )
    assert not (run_dir / "checkpoints" / "stale.ckpt").exists()  # the run folder was emptied first
    assert "resumed_from_step" not in record and record["wall_s"] == 2.0
    assert (
        read_attempts(run_dir)["command"] == command
        and len(read_attempts(run_dir)["attempts"]) == 1
    )


def test_a_failed_fit_is_not_resumed(tmp_path, monkeypatch):
    _, runner, m, command, _ = _fit_setup(tmp_path, monkeypatch, rc=1)
    assert runner.fit(m, 0.003, 0) is None
    assert read_attempts(tmp_path / "runs" / "M0_lr0.003_seed0") is None
    assert (
        plan_attempt(
            tmp_path / "runs" / "M0_lr0.003_seed0", command, runner.code["fingerprint"]
        ).resume_from
        is None
    )


# ---------------------------------------------------------------------------------------- the curve


def _events(folder: Path, values: dict[int, float]) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    for step, value in values.items():
        writer.add_scalar("val/acc/ar_valid/n32", value, step)
    writer.close()


def test_the_curve_of_a_resumed_fit_keeps_each_step_once_with_its_latest_value(tmp_path):
    """Attempts log into version_0, 1, 2, ..., 10: a step logged again after a resume takes the later
    value, and version_10 is later than version_2."""
    # 11 was logged after the checkpoint at 8, and again by the resumed attempt
    _events(tmp_path / "version_0", {3: 0.1, 7: 0.2, 11: 0.9})
    _events(tmp_path / "version_1", {11: 0.3})
    for v in range(2, 11):
        _events(tmp_path / f"version_{v}", {11 + 4 * (v - 1): v / 100, 15: v / 100})
    rows = scalar_history(tmp_path)
    steps = [step for step, _, _ in rows]
    assert steps == sorted(set(steps))  # each step once
    values = {step: value for step, _, value in rows}
    assert values[3] == pytest.approx(0.1) and values[11] == pytest.approx(0.3)
    assert values[15] == pytest.approx(0.10)  # version_10's, written last
