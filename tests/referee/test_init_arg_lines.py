"""A mechanism whose constructor refuses an init arg is named with the option that set it (fault:
`referee --config quick.yaml --mechanism.init_args.d_model -8` said "could not build the mechanism
swar_bench.mechanisms.GRU: d_model must be a positive integer, got -8", naming no option, and
`check-mechanism GRU --init_args '{"d_model": -8}'` likewise)."""

from __future__ import annotations

import json
import shlex

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.mechanisms.check_cli import main as check_main
from swar_bench.referee.cli import main
from tests.referee.test_option_lines import QUICK, _line

BUILD = "could not build the mechanism swar_bench.mechanisms.GRU"
GRU_INTS = ("vocab_size", "d_model", "n_layers", "mlp_ratio")


def _check_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench check-mechanism")]
    assert len(lines) == 1, captured.err
    return lines[0]


def test_the_reported_referee_init_arg_names_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert swar_main(["referee", "--config", str(QUICK), "--mechanism.init_args.d_model", "-8"]) == 2
    assert _line(capsys) == (f"swar-bench referee: error: --mechanism.init_args.d_model=-8: {BUILD}: d_model must be a "
                             "positive integer, got -8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("mechanism: {class_path: GRU, init_args: {d_model: -8}}\n")
    assert swar_main(["referee", "--config", str(QUICK), "--config", str(bad)]) == 2
    assert _line(capsys) == (f"swar-bench referee: error: --config={bad}: mechanism.init_args.d_model=-8: {BUILD}: "
                             "d_model must be a positive integer, got -8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_the_reported_check_mechanism_init_arg_names_the_option(tmp_path, capsys):
    assert check_main(["GRU", "--init_args", '{"d_model": -8}']) == 2
    assert _check_line(capsys) == (
        """swar-bench check-mechanism: error: --init_args='{"d_model": -8}': d_model=-8: swar_bench.mechanisms.GRU"""
        """(**{'d_model': -8}) failed: d_model must be a positive integer, got -8""")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {mechanism: {class_path: GRU, init_args: {d_model: -8}}}\n")
    assert check_main(["--config", str(bad)]) == 2
    assert _check_line(capsys) == (
        f"swar-bench check-mechanism: error: --config={bad}: model.mechanism.init_args.d_model=-8: "
        "swar_bench.mechanisms.GRU(**{'d_model': -8}) failed: d_model must be a positive integer, got -8")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arg=st.sampled_from(GRU_INTS), value=st.integers(-(2**20), 0),
       where=st.sampled_from(["--option=value", "--option value", "--config file"]))
def test_any_refused_init_arg_is_named_where_it_was_set(tmp_path_factory, capsys, arg, value, where):
    """Any init arg of the mechanism its constructor refuses, set on the command line (either form)
    or in a --config file: the option as typed (or the file and its key) leads the line."""
    root = tmp_path_factory.mktemp("run")
    argv = ["--config", str(QUICK), "--out", str(root / "out")]
    if where == "--config file":
        bad = root / "bad.yaml"
        bad.write_text(yaml.safe_dump({"mechanism": {"class_path": "GRU", "init_args": {arg: value}}}))
        argv += ["--config", str(bad)]
        lead = f"--config={bad}: mechanism.init_args.{arg}={value}"
    else:
        argv += [f"--mechanism.init_args.{arg}={value}"] if where == "--option=value" else [f"--mechanism.init_args.{arg}", str(value)]
        lead = f"--mechanism.init_args.{arg}={value}"
    assert main(argv) == 2
    assert _line(capsys) == f"swar-bench referee: error: {lead}: {BUILD}: {arg} must be a positive integer, got {value}"
    assert not (root / "out").exists()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arg=st.sampled_from(GRU_INTS), value=st.integers(-(2**20), 0), in_file=st.booleans(),
       spelled=st.sampled_from(["--init_args", "--init-args"]))
def test_any_refused_init_arg_of_check_mechanism_is_named_where_it_was_set(tmp_path_factory, capsys, arg, value, in_file, spelled):
    root = tmp_path_factory.mktemp("run")
    if in_file:
        bad = root / "bad.yaml"
        bad.write_text(yaml.safe_dump({"class_path": "GRU", "init_args": {arg: value}}))
        argv, lead = ["--config", str(bad)], f"--config={bad}: init_args.{arg}={value}"
    else:
        typed = json.dumps({arg: value})
        argv, lead = ["GRU", spelled, typed], f"{spelled}={shlex.quote(typed)}: {arg}={value}"
    assert check_main(argv) == 2
    assert _check_line(capsys) == (f"swar-bench check-mechanism: error: {lead}: swar_bench.mechanisms.GRU(**{{{arg!r}: "
                                   f"{value}}}) failed: {arg} must be a positive integer, got {value}")
