"""``check-mechanism --init_args`` / ``--init-args`` (both spellings, as ``study run --add``): a key
that is no constructor parameter is refused in one line with "did you mean" before the class is
built, naming the option as typed or the ``--config`` file that set it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms.check_cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARGS = "expected one of vocab_size, d_model, n_layers, mlp_ratio"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield
    sys.modules.pop("my_layer", None)


def _err(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err.strip()


@pytest.mark.parametrize("option", ["--init_args", "--init-args"])
def test_reported_misspelt_init_arg(capsys, option):
    code, err = _err(capsys, ["my_layer.EMAModel", option, '{"vocab_size": 40, "d_modle": 64}'])
    assert code == 2
    assert err == (
        f"swar-bench check-mechanism: error: {option}: d_modle is not an argument of my_layer.EMAModel "
        f"(did you mean d_model?); {ARGS}"
    )


@pytest.mark.parametrize("option", ["--init_args", "--init-args"])
def test_a_bad_init_args_value_is_named_as_typed(capsys, option):
    code, err = _err(capsys, ["GRU", option, "[1]"])
    assert (code, err) == (2, f"""swar-bench check-mechanism: error: {option}=[1]: expected a JSON object such as '{{"d_model": 32, "n_layers": 1}}'""")


def test_a_misspelt_init_arg_of_a_config_file_names_the_file(capsys, tmp_path):
    config = tmp_path / "ema.yaml"
    config.write_text("model:\n  mechanism:\n    class_path: my_layer.EMAModel\n    init_args:\n      d_modle: 64\n")
    code, err = _err(capsys, ["--config", str(config)])
    assert code == 2
    assert err == (
        f"swar-bench check-mechanism: error: --config={config}: model.mechanism.init_args: d_modle is not an argument "
        f"of my_layer.EMAModel (did you mean d_model?); {ARGS}"
    )


def test_study_run_takes_both_spellings():
    from swar_bench.study.cli import _parser

    for option in ("--init-args", "--init_args"):
        args = _parser().parse_args(["run", "S.yaml", "--add", "my_layer.EMAModel", option, "{}"])
        assert args.init_args == "{}" and args.init_args.option == option


KEYS = ("vocab_size", "d_model", "n_layers", "mlp_ratio")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), cut=st.integers(0, 6), option=st.sampled_from(["--init_args", "--init-args"]))
def test_any_misspelt_key_is_refused_before_building(capsys, key, cut, option):
    """Any key of the constructor with one letter dropped: exit 2, one line naming the option as
    typed, the key, and the constructor's parameters (not the ``(**{...}) failed:`` of a build)."""
    i = cut % len(key)
    typo = key[:i] + key[i + 1:]
    code, err = _err(capsys, ["my_layer.EMAModel", option, f'{{"{typo}": 8}}'])
    assert code == 2 and "failed:" not in err
    assert err.startswith(f"swar-bench check-mechanism: error: {option}: {typo} is not an argument of my_layer.EMAModel")
    assert err.endswith(ARGS) and "\n" not in err
