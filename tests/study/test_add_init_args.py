"""`study run --add CLASS --init-args JSON`: a key that names no parameter of the layer's
constructor is refused in one line with the key meant, before the layer is built or checked, as
`fit` and `check-mechanism` refuse it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study.cli import add_layer
from swar_bench.study.spec import StudyError, load_study
from swar_bench.utils.argparsing import Spelled
from tests.study.test_study_cli import _study

GRU_ARGS = ["vocab_size", "d_model", "n_layers", "mlp_ratio"]


def _spelled(text: str, option: str) -> Spelled:
    value = Spelled(text)
    value.option = option
    return value


def test_a_misspelt_init_arg_of_an_added_layer_is_one_line_with_the_key_meant(tmp_path):
    spec = load_study(_study(tmp_path))
    with pytest.raises(StudyError) as err:
        add_layer(spec, "swar_bench.mechanisms.GRU", _spelled('{"vocab_size": 40, "d_modle": 8}', "--init_args"), None)
    assert str(err.value) == (
        "--init_args: d_modle is not an argument of swar_bench.mechanisms.GRU (did you mean d_model?); "
        "expected one of vocab_size, d_model, n_layers, mlp_ratio"
    )
    assert not (tmp_path / "records" / "added").exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(GRU_ARGS), cut=st.integers(0, 20), option=st.sampled_from(["--init-args", "--init_args"]))
def test_any_init_arg_one_letter_off_is_named_with_the_spelling_typed(tmp_path, key, cut, option):
    typo = key[: cut % len(key)] + key[cut % len(key) + 1 :]  # one letter dropped
    spec = load_study(_study(tmp_path))
    with pytest.raises(StudyError) as err:
        add_layer(spec, "swar_bench.mechanisms.GRU", _spelled(json.dumps({typo: 8}), option), None)
    line = str(err.value)
    assert line.startswith(f"{option}: {typo} is not an argument of swar_bench.mechanisms.GRU")
    assert "\n" not in line and line.endswith("expected one of vocab_size, d_model, n_layers, mlp_ratio")
