"""scripts/results.py refuses bad options in one line, before any run starts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "results.py"


def _results():
    spec = importlib.util.spec_from_file_location("results_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--jobs", "0"], "--jobs=0 is invalid; expected an integer >= 1"),
        (["--steps", "0"], "--steps=0 is invalid; expected an integer >= 1"),
        (["--lrs=-1e-3"], "--lrs='-1e-3' is invalid; expected positive learning rates"),
        (["--test-configs", "32,33"], "--test-configs='32,33': '33' is not an allowed N"),
        (["--mechanisms", "Transformer"], "unknown mechanism 'Transformer'"),
        (["--config", "configs/nope.yaml"], "--config='configs/nope.yaml' does not exist"),
        (["--tag", "a/b"], "--tag='a/b' is invalid"),
        (["--docs", "README.md"], "the folder cannot be created (/"),
        (["--docs", "/proc/x"], "--docs=/proc/x: the folder cannot be created"),
        (["--mechanisms", ""], "--mechanisms='' names no mechanism"),
    ],
)
def test_bad_options_stop_before_any_run(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        _results().main([*argv, "--out", str(tmp_path / "runs")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]
    assert not (tmp_path / "runs").exists()


def test_tag_names_the_outputs(tmp_path):
    results = _results()
    text = results.markdown({}, [32], [], {"lrs": [1e-3]}, prefix="results_passkey")
    assert "figures/results_passkey_ar_valid.png" in text and "figures/results_ar_valid.png" not in text
