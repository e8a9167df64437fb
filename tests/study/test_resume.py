"""A study's fit stopped part-way resumes from its checkpoint instead of starting again, for real:
the record and the curve are those of the same fit run without a stop."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swar_bench.runtime.slurm import checkpoint_progress
from swar_bench.study.attempts import ATTEMPT_FILE
from swar_bench.study.records import curve_csv, curve_rows, scalar_history
from tests.study.test_study_cli import BASE as TINY_BASE
from tests.study.test_study_cli import _study as _tiny_study
from tests.study.test_study_cli import same_code

ROOT = Path(__file__).resolve().parents[2]

BASE = TINY_BASE.replace("max_steps: 8", "max_steps: 64").replace(
    "log_every_n_steps: 4", "log_every_n_steps: 8"
)
"""The tiny study's budget config, trained for 64 steps (4 validations: 4 checkpoints to stop between)."""
RUN = "GRU_tiny_lr0.003_seed0"


def _study(tmp_path: Path) -> Path:
    return _tiny_study(
        tmp_path,
        "learning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
        "selection_seeds: 1\nseeds: 1\ncurve_points: 4\ngate: {ar_valid: 0.0}\n",
        base=BASE,
    )


def _run(study: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swar_bench.cli", "study", "run", str(study), "--jobs", "1"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _stopped(study: Path, ready, stop) -> subprocess.CompletedProcess:
    """``study run`` (its own process group), stopped by ``stop(proc)`` once ``ready()`` holds."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "swar_bench.cli", "study", "run", str(study), "--jobs", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        while not ready():  # the event itself, polled while the process lives
            try:
                proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(
                f"study run ended (exit {proc.returncode}) before the stop: {proc.stdout.read()}"
            )
        stop(proc)
        out, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


@pytest.fixture(scope="module")
def unstopped(tmp_path_factory):
    """The study run without a stop: ``(study, fit record, curve CSV)``; its records and run folders
    are then removed, so a stopped run of the same study runs the same commands."""
    tmp = tmp_path_factory.mktemp("resume")
    study = _study(tmp)
    whole = _run(study)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "resuming" not in whole.stdout
    record = json.loads((tmp / "records" / f"{RUN}.fit.json").read_text())
    curve = (tmp / "records" / f"{RUN}.curve.csv").read_text()
    steps = {line.split(",")[0] for line in curve.splitlines()[1:]}
    assert steps == {"15", "31", "47", "63"} and "resumed_from_step" not in record  # 4 validations
    return study, record, curve


def _clear(study: Path) -> tuple[Path, Path]:
    records, runs = study.parent / "records", study.parent / "runs"
    shutil.rmtree(records, ignore_errors=True)
    shutil.rmtree(runs, ignore_errors=True)
    return records, runs


def _resumed_as_unstopped(study: Path, expected: dict, expected_curve: str, step: int) -> dict:
    """Run the study again: the fit resumes from ``step`` and its record and curve are the unstopped
    run's (but for its wall time and the steps it resumed from)."""
    records, runs = study.parent / "records", study.parent / "runs"
    resumed = _run(study)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = [line for line in resumed.stdout.splitlines() if "resuming" in line]
    assert lines == [f"study: fit {RUN}: resuming from step {step}"], resumed.stdout
    record = json.loads((records / f"{RUN}.fit.json").read_text())
    assert record["resumed_from_step"] == [step] and "--ckpt_path" not in record["command"]
    # code: compared without its commit, as one may land in the checkout while the test runs
    differ = {"wall_s", "resumed_from_step", "code"}
    assert {k: v for k, v in record.items() if k not in differ} == {
        k: v for k, v in expected.items() if k not in differ
    }
    assert same_code(record["code"], expected["code"])
    # no step lost or logged twice, every value the unstopped run's
    assert (records / f"{RUN}.curve.csv").read_text() == expected_curve
    # the resumed attempt logged beside the first
    assert len(list((runs / RUN).glob("version_*"))) == 2
    assert (records / f"{RUN}.test.json").is_file()
    return record


def test_a_fit_stopped_with_ctrl_c_resumes_as_if_never_stopped(unstopped):
    study, expected, expected_curve = unstopped
    records, runs = _clear(study)
    ckpt = runs / RUN / "checkpoints" / "last.ckpt"
    stopped = _stopped(study, ckpt.is_file, lambda proc: proc.send_signal(signal.SIGINT))
    assert stopped.returncode == 130, stopped.stdout
    assert not (records / f"{RUN}.fit.json").exists(), "the fit ended before the stop reached it"
    attempts = json.loads((runs / RUN / ATTEMPT_FILE).read_text())
    assert (
        attempts["command"] == expected["command"]
        and attempts["fingerprint"] == expected["code"]["fingerprint"]
    )
    assert len(attempts["attempts"]) == 1 and attempts["attempts"][0]["wall_s"] > 0
    step = checkpoint_progress(ckpt)[0]
    record = _resumed_as_unstopped(study, expected, expected_curve, step)
    assert record["wall_s"] >= attempts["attempts"][0]["wall_s"]


def test_a_fit_of_a_stopped_machine_resumes_and_logs_its_lost_steps_once(unstopped):
    """The machine stops (every process killed) after the second validation, and its checkpoint is
    lost with it: the fit resumes from the first checkpoint, validates again at the steps the
    stopped attempt had logged, and the curve keeps each step once, with the values of an
    unstopped run."""
    study, expected, expected_curve = unstopped
    _, runs = _clear(study)
    folder = runs / RUN / "checkpoints"
    first = runs / "first.ckpt"

    def second_checkpoint() -> bool:
        if not first.is_file() and (folder / "last.ckpt").is_file():
            # a checkpoint file is written whole, then renamed: the copy is one checkpoint
            shutil.copyfile(folder / "last.ckpt", first)
        # Lightning's step checkpoint, epoch=E-step=S.ckpt, is saved before last.ckpt
        steps = [
            int(m.group(1))
            for p in folder.glob("*.ckpt")
            if (m := re.search(r"-step=(\d+)\.ckpt$", p.name))
        ]
        return first.is_file() and max(steps, default=0) > 16

    stopped = _stopped(study, second_checkpoint, lambda proc: os.killpg(proc.pid, signal.SIGKILL))
    assert stopped.returncode == -signal.SIGKILL
    for ckpt in folder.glob("*.ckpt"):  # the second save never reached the disk
        ckpt.unlink()
    shutil.copyfile(first, folder / "last.ckpt")
    step = checkpoint_progress(first)[0]
    assert step == 16
    logged = {
        int(line.split(",")[0])
        for line in curve_csv(curve_rows(scalar_history(runs / RUN))).splitlines()[1:]
    }
    assert max(logged) >= step, "the stopped attempt logged a validation after its kept checkpoint"
    attempts = json.loads((runs / RUN / ATTEMPT_FILE).read_text())
    assert attempts["attempts"][0]["wall_s"] is None  # ended without notice
    record = _resumed_as_unstopped(study, expected, expected_curve, step)
    assert record["wall_s"] > 0
