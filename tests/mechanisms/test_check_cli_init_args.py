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


# ----------------------------------------------------------------- one spelling: --init_args (--init-args taken too)

SPELLINGS = ("--init_args", "--init-args")


def _study_error(capsys, argv) -> tuple[int, str]:
    from swar_bench.study.cli import main as study_main

    try:
        code = study_main(argv)
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err.strip()


def _parse_error(capsys, parse) -> str:
    with pytest.raises(SystemExit) as stop:
        parse()
    assert stop.value.code == 2
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize("typo", ["--init-arg", "--initargs", "--init_arg"])
def test_reported_misspelt_option_suggests_init_args_in_both_commands(capsys, typo):
    """The reported fault: the option was --init_args in check-mechanism and --init-args in
    `study run --add` (their help, docs and "did you mean" said each its own). Both now suggest
    the one spelling, --init_args, whichever spelling the typo is closest to."""
    from swar_bench.study.cli import _parser

    err = _parse_error(capsys, lambda: main(["GRU", typo, "{}"]))
    assert err == f"swar-bench check-mechanism: error: unknown option {typo} (did you mean --init_args?)"
    err = _parse_error(capsys, lambda: _parser().parse_args(["run", "S.yaml", "--add", "GRU", typo, "{}"]))
    assert err == f"swar-bench study run: error: unknown option {typo} (did you mean --init_args?)"


def test_both_commands_list_init_args_first(capsys):
    from swar_bench.mechanisms.check_cli import build_parser
    from swar_bench.study.cli import _parser

    run = next(a for a in _parser()._subparsers._group_actions[0].choices["run"]._actions if a.dest == "init_args")
    check = next(a for a in build_parser()._actions if a.dest == "init_args")
    assert run.option_strings == check.option_strings == list(SPELLINGS) and run.metavar == check.metavar == "JSON"


@pytest.mark.parametrize("option", SPELLINGS)
@pytest.mark.parametrize("name", [False, True])
def test_init_args_without_add_is_refused_naming_the_spelling_typed(tmp_path, capsys, option, name):
    from tests.study.test_study_cli import _study

    study = _study(tmp_path)
    code, err = _study_error(capsys, ["run", str(study), option, "{}", *(["--name", "X"] if name else [])])
    said = f"{option} and --name describe an --add layer; expected --add CLASS_PATH with them" if name else (
        f"{option} describes an --add layer; expected --add CLASS_PATH with it")
    assert (code, err) == (2, f"swar-bench study run: error: {said}")


@pytest.mark.parametrize("option", SPELLINGS)
def test_init_args_of_an_mqar_study_is_refused_naming_the_spelling_typed(tmp_path, capsys, option):
    from tests.study.test_mqar_study import write_study

    code, err = _study_error(capsys, ["run", str(write_study(tmp_path)), option, "{}"])
    said = f"swar-bench study run: error: {option}: an MQAR study runs its own entries; expected --only ENTRY[,ENTRY]"
    assert (code, err) == (2, said)


NAME_CHARS = "abcdefghijklmnopqrstuvwxyz_-"


@st.composite
def _one_edit(draw):
    """A spelling of the option with one letter of its name dropped, added or changed."""
    name = draw(st.sampled_from(SPELLINGS))[2:]
    i = draw(st.integers(0, len(name)))
    edit = draw(st.sampled_from(["drop", "add", "change"]))
    c = draw(st.sampled_from(NAME_CHARS))
    if edit == "drop":
        i = min(i, len(name) - 1)
        typed = name[:i] + name[i + 1:]
    elif edit == "add":
        typed = name[:i] + c + name[i:]
    else:
        i = min(i, len(name) - 1)
        typed = name[:i] + c + name[i + 1:]
    return "--" + typed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(typo=_one_edit())
def test_any_misspelt_init_args_option_suggests_init_args_in_both_commands(capsys, typo):
    """The kind: any one-letter typo of either spelling, in either command, is one line naming it
    as typed and the option meant in its one spelling."""
    from hypothesis import assume

    from swar_bench.study.cli import _parser

    assume(typo not in SPELLINGS and not typo.startswith("---") and not typo.endswith("-"))
    err = _parse_error(capsys, lambda: main(["GRU", typo, "{}"]))
    assert err == f"swar-bench check-mechanism: error: unknown option {typo} (did you mean --init_args?)"
    err = _parse_error(capsys, lambda: _parser().parse_args(["run", "S.yaml", "--add", "GRU", typo, "{}"]))
    assert err == f"swar-bench study run: error: unknown option {typo} (did you mean --init_args?)"
