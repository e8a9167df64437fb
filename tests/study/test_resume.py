"""A study's fit stopped part-way resumes from its checkpoint instead of starting again, for real:
the record and the curve are those of the same fit run without a stop."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from swar_bench.study.attempts import ATTEMPT_FILE

ROOT = Path(__file__).resolve().parents[2]

BASE = """seed_everything: 0
trainer:
  accelerator: cpu
  devices: 1
  max_steps: 64
  check_val_every_n_epoch: null
  num_sanity_val_steps: 0
  log_every_n_steps: 8
  enable_progress_bar: false
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args: {save_dir: runs, name: tiny}
model:
  lr: 3.0e-3
  warmup_steps: 1
  max_steps: 64
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
RUN = "GRU_tiny_lr0.003_seed0"


def _study(tmp_path: Path) -> Path:
    (tmp_path / "base.yaml").write_text(BASE)
    path = tmp_path / "study.yaml"
    path.write_text(
        f"name: tiny\nconfig: {tmp_path / 'base.yaml'}\nrecords: {tmp_path / 'records'}\nout: {tmp_path / 'runs'}\n"
        "readout_n: 64\nlearning_rates: [3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
        "selection_seeds: 1\nseeds: 1\ncurve_points: 4\ngate: {ar_valid: 0.0}\n"
        "mechanisms:\n  - name: GRU_tiny\n    class_path: GRU\n    init_args: {d_model: 8, n_layers: 1}\n"
    )
    return path


def _run(study: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swar_bench.cli", "study", "run", str(study), "--jobs", "1"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=900)


def _stopped_after_first_checkpoint(study: Path, ckpt: Path) -> subprocess.CompletedProcess:
    """``study run``, stopped with SIGINT (Ctrl-C) once the fit's first checkpoint is there."""
    proc = subprocess.Popen([sys.executable, "-m", "swar_bench.cli", "study", "run", str(study), "--jobs", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while not ckpt.is_file():  # the event itself, polled while the process lives
            try:
                proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"study run ended (exit {proc.returncode}) before {ckpt} appeared: "
                                 f"{proc.stdout.read()}")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def test_a_stopped_fit_resumes_and_its_record_and_curve_are_those_of_an_unstopped_one(tmp_path):
    study = _study(tmp_path)
    records, runs = tmp_path / "records", tmp_path / "runs"
    whole = _run(study)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "resuming" not in whole.stdout
    expected = json.loads((records / f"{RUN}.fit.json").read_text())
    expected_curve = (records / f"{RUN}.curve.csv").read_text()
    assert len(expected_curve.splitlines()) > 2 and "resumed_from_step" not in expected
    shutil.rmtree(records)
    shutil.rmtree(runs)

    stopped = _stopped_after_first_checkpoint(study, runs / RUN / "checkpoints" / "last.ckpt")
    assert stopped.returncode == 130, stopped.stdout
    assert not (records / f"{RUN}.fit.json").exists(), "the fit ended before the stop reached it"
    attempts = json.loads((runs / RUN / ATTEMPT_FILE).read_text())
    assert attempts["command"] == expected["command"] and attempts["fingerprint"] == expected["code"]["fingerprint"]
    assert len(attempts["attempts"]) == 1 and attempts["attempts"][0]["wall_s"] > 0

    resumed = _run(study)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = [line for line in resumed.stdout.splitlines() if "resuming from step" in line]
    assert len(lines) == 1 and lines[0].startswith(f"study: fit {RUN}: resuming from step "), resumed.stdout
    step = int(lines[0].rsplit(" ", 1)[1])
    assert 0 < step < 64
    record = json.loads((records / f"{RUN}.fit.json").read_text())
    assert record["resumed_from_step"] == [step]
    assert record["wall_s"] >= attempts["attempts"][0]["wall_s"]
    assert "--ckpt_path" not in record["command"]
    differ = {"wall_s", "resumed_from_step"}
    assert {k: v for k, v in record.items() if k not in differ} == {
        k: v for k, v in expected.items() if k not in differ
    }
    curve = (records / f"{RUN}.curve.csv").read_text()
    assert curve == expected_curve  # no step lost or logged twice, every value the unstopped one's
    assert len(list((runs / RUN).glob("version_*"))) == 2  # the resumed attempt logged beside the first
    assert (records / f"{RUN}.test.json").is_file()
