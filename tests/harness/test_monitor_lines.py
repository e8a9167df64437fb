"""A callback ``monitor`` naming no metric the run logs (``EarlyStopping``, ``ModelCheckpoint``) is
one line naming the value and the metrics the run logs, exit 2, and the run folder it started,
which holds no checkpoint, is removed: not Lightning's RuntimeError mid-run and a leftover folder."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

from swar_bench.harness.monitors import monitor_line
from swar_bench.lightning_cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


@pytest.mark.parametrize("callback", ["EarlyStopping", "ModelCheckpoint"])
def test_the_reported_monitor_is_one_line_and_leaves_no_run_folder(capsys, tmp_path, monkeypatch, callback):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "tiny.yaml"
    config.write_text(QUICKSTART.read_text().replace("d_model: 64", "d_model: 16")
                      .replace("save_dir: runs", f"save_dir: {tmp_path / 'runs'}"))
    code = main(["fit", "--config", str(config), "--trainer.max_steps=2", "--trainer.val_check_interval=1",
                 f"--trainer.callbacks+={callback}", "--trainer.callbacks.monitor=no_such_metric"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    err = [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]
    assert code == 2
    assert len(err) == 1 and err[0].startswith(
        f"swar-bench: error: --trainer.callbacks.monitor=no_such_metric: {callback} monitors a metric this run does "
        "not log; expected one of the metrics it logs: train/loss, train/n_writes, lr, val/loss, ")
    assert not (tmp_path / "runs").exists()


METRIC = st.text(alphabet="abcxyz/_019 -.", min_size=1, max_size=12).map(str.strip).filter(bool)


def _refusal(callback: str, monitor: str, logged: list[str]) -> BaseException:
    """Lightning's own refusal of ``monitor`` when the run logged ``logged``."""
    logs = dict.fromkeys(logged, 0.0)
    try:
        if callback == "EarlyStopping":
            EarlyStopping(monitor=monitor)._validate_condition_metric(logs)
        else:
            trainer = SimpleNamespace(fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(
                val_loop=SimpleNamespace(_has_run=True))))
            ModelCheckpoint(monitor=monitor)._save_topk_checkpoint(trainer, logs)
    except Exception as err:  # noqa: BLE001 - the refusal is what is looked at
        return err
    raise AssertionError("not refused")


@settings(max_examples=60, deadline=None)
@given(callback=st.sampled_from(["EarlyStopping", "ModelCheckpoint"]), monitor=METRIC,
       logged=st.lists(METRIC.filter(lambda m: "," not in m), min_size=1, max_size=6, unique=True), typed=st.booleans())
def test_any_unlogged_monitor_is_one_line_naming_it_and_the_logged_metrics(callback, monitor, logged, typed):
    logged = [m for m in logged if m != monitor] or ["val/loss"]
    argv = ["fit", f"--trainer.callbacks+={callback}", f"--trainer.callbacks.monitor={monitor}"] if typed else ["fit"]
    line = monitor_line(_refusal(callback, monitor, logged), argv)
    assert line is not None and "\n" not in line
    where = f"--trainer.callbacks.monitor={monitor}" if typed else f"{callback}(monitor={monitor!r})"
    assert line == (f"{where}: {callback} monitors a metric this run does not log; expected one of the metrics it "
                    f"logs: {', '.join(logged)}")
