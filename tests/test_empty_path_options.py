"""An empty path is refused by every path-valued option of the swar-bench commands: one line
naming the option, exit 2, and nothing written (an empty path would otherwise mean the current
folder). The reported cases were ``referee --out ""`` (result.json and the PNG written into the
current folder), ``fit --trainer.logger.init_args.save_dir=""`` (./quickstart/GatedDeltaNet/version_0)
and ``predict --predictions.output_dir ""`` (predictions_rank0.pt in the current folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.utils.argparsing import ArgumentParser, PathArg

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
REFEREE = str(ROOT / "configs" / "referee" / "quick.yaml")
TINY = ["--trainer.max_steps=2"]

FOLDER = "expected a folder path"
CKPT = "expected a checkpoint file written by swar-bench fit (e.g. <run>/checkpoints/last.ckpt), last or hpc"
CONFIG = "expected the path of a YAML file of options such as configs/quickstart.yaml"
RESULT = "expected the path of a referee result JSON (result.json)"

# (words before the option, the option, the line printed): every path option of every command
CASES = [
    (["referee", "--config", REFEREE], "--out",
     "swar-bench referee: error: --out='' is empty; expected a folder (new or existing) this user can write to"),
    (["fit", "--config", QUICKSTART, *TINY], "--trainer.logger.init_args.save_dir",
     f"swar-bench: error: --trainer.logger.init_args.save_dir='': {FOLDER}"),
    (["fit", "--config", QUICKSTART, *TINY], "--trainer.default_root_dir",
     f"swar-bench: error: --trainer.default_root_dir='': {FOLDER}"),
    (["fit", "--config", QUICKSTART, *TINY], "--checkpoint.dirpath", f"swar-bench: error: --checkpoint.dirpath='': {FOLDER}"),
    (["fit", "--config", QUICKSTART, *TINY], "--ckpt_path", f"swar-bench: error: --ckpt_path='': {CKPT}"),
    (["predict", "--config", QUICKSTART], "--predictions.output_dir",
     f"swar-bench: error: --predictions.output_dir='': {FOLDER}"),
    (["test", "--config", QUICKSTART], "--accuracy.out_dir", f"swar-bench: error: --accuracy.out_dir='': {FOLDER}"),
    (["test", "--config", QUICKSTART], "--calibration.out_dir", f"swar-bench: error: --calibration.out_dir='': {FOLDER}"),
    (["fit"], "--config", f"swar-bench: error: --config='': {CONFIG}"),
    (["demo"], "--config", "swar-bench demo: error: --config='': expected the path of a LightningCLI config file"),
    (["check-mechanism", "GRU"], "--config", "swar-bench check-mechanism: error: --config='': expected the path of a YAML file"),
    (["data", "generate", "--configs", "n32"], "--out", "swar-bench data generate: error: --out='': expected a folder path"),
    (["data", "vocab"], "--out", "swar-bench data vocab: error: --out='': expected a file path"),
    (["data", "stats", "--configs", "n32"], "--report", "swar-bench data stats: error: --report='': expected a file path"),
    (["referee", "verdict", "--challenger", "{result}"], "--baseline",
     f"swar-bench referee verdict: error: --baseline='': {RESULT}"),
    (["referee", "verdict", "--baseline", "{result}"], "--challenger",
     f"swar-bench referee verdict: error: --challenger='': {RESULT}"),
    (["referee", "verdict", "--baseline", "{result}", "--challenger", "{result}"], "--json",
     "swar-bench referee verdict: error: --json='': expected a JSON file path"),
    (["referee", "compare", "{result}"], "--plot",
     ("swar-bench referee compare: error: --plot='' is empty; expected a .png, .pdf or .svg file path (new or existing file) "
      "in a folder this user can write to")),
]


def _run(capsys, argv):
    try:
        code = swar_main(argv)
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty current folder (an empty path would have meant it), and a result file elsewhere."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    result = tmp_path / "result.json"
    result.write_text(json.dumps({}))
    return cwd, str(result)


@pytest.mark.parametrize(
    "argv, line",
    [
        (["referee", "--config", REFEREE, "--out", ""], CASES[0][2]),
        (["fit", "--config", QUICKSTART, *TINY, "--trainer.logger.init_args.save_dir="], CASES[1][2]),
        (["predict", "--config", QUICKSTART, "--predictions.output_dir", ""], CASES[5][2]),
        (["test", "--config", QUICKSTART, "--accuracy.out_dir", ""], CASES[6][2]),
        (["test", "--config", QUICKSTART, "--calibration.out_dir", ""], CASES[7][2]),
    ],
)
def test_the_reported_empty_paths_are_one_line_and_write_nothing(capsys, workdir, argv, line):
    cwd, _ = workdir
    assert _run(capsys, argv) == (2, [line])
    assert list(cwd.iterdir()) == []


@settings(max_examples=len(CASES) * 2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(CASES), spaced=st.booleans())
def test_any_path_option_given_an_empty_value_is_one_line_naming_it(capsys, workdir, case, spaced):
    cwd, result = workdir
    before, option, line = case
    before = [result if word == "{result}" else word for word in before]
    given_empty = [option, ""] if spaced else [f"{option}="]
    assert _run(capsys, [*before, *given_empty]) == (2, [line])
    assert list(cwd.iterdir()) == []


@given(value=st.text(max_size=6).filter(lambda v: not v.startswith("-")), positional=st.booleans())
def test_path_arg_refuses_exactly_the_empty_value(value, positional):
    parser = ArgumentParser(prog="x")
    parser.add_argument("path" if positional else "--path", type=PathArg("a folder path", Path))
    argv = [value] if positional else [f"--path={value}"]
    if value:
        assert parser.parse_args(argv).path == Path(value)
    else:
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(argv)
        assert stop.value.code == 2
