"""The demo trains and tests the passkey task; a config of another task is refused before anything
runs (fault: `demo --config configs/mqar/figure2_t64.yaml --trainer.max_steps=1` trained, then ended
in `RuntimeError: AnswerTypeAccuracy has no results yet`, exit 1, leaving a run folder with an MQAR
table and no config.yaml)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main

ROOT = Path(__file__).resolve().parents[2]
MQAR = str(ROOT / "configs" / "mqar" / "figure2_t64.yaml")


def _line(config: str) -> str:
    return (f"swar-bench demo: error: --config={config}: data.task=mqar; the demo trains and tests the passkey_swar "
            "task (its answer-kind tables, its n32 target); expected a passkey_swar config such as "
            f"configs/quickstart.yaml, or swar-bench fit --config {config} for mqar")


def test_the_reported_mqar_config_is_refused_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--threads", "1", "--config", MQAR, "--trainer.max_steps=1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == _line(MQAR) and "Traceback" not in "\n".join(err)
    assert list(tmp_path.iterdir()) == []  # no run folder


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.sampled_from(["figure2_t64.yaml", "figure2_t128.yaml"]), steps=st.integers(1, 50),
       threads=st.integers(1, 2), target=st.sampled_from([0.5, 0.9, 1.0]))
def test_any_config_of_another_task_is_refused_and_leaves_nothing(tmp_path_factory, capsys, monkeypatch, config, steps,
                                                                  threads, target):
    """The kind: a config whose data.task is not passkey_swar (each MQAR recipe), with any budget,
    threads and target: one line, exit 2, no folder. (The quickstart switched to MQAR on the command
    line is refused earlier, by its passkey-only keys.)"""
    folder = tmp_path_factory.mktemp("d")
    monkeypatch.chdir(folder)
    path = str(ROOT / "configs" / "mqar" / config)
    argv = ["demo", "--threads", str(threads), "--target", str(target), "--config", path, f"--trainer.max_steps={steps}"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == _line(path)
    assert list(folder.iterdir()) == []
