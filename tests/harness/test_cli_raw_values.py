"""Values the parser refused with its own text (issue "raw parser text"): a value that is no list
given to a list option (``--data.train_configs=n32``: "Expected collections.abc.Sequence. Got
value: n32") now gets one line naming the option, the value and what was expected, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench import cli
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import one_error_line

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")




# --- a value that is no list, given to a list option ----------------------------------------------


def test_the_reported_scalar_train_configs_says_a_list_was_expected(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fit", "--config", QUICKSTART, "--data.train_configs=n32"]) == 2
    assert one_error_line(capsys) == (
        "swar-bench: error: --data.train_configs=n32: expected a list, e.g. --data.train_configs=[n32]"
    )
    assert not list(tmp_path.iterdir())


def test_a_scalar_in_a_config_file_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text("data:\n  val_configs: 32\n")
    assert main(["fit", "--config", QUICKSTART, "--config", str(config)]) == 2
    assert one_error_line(capsys) == (
        f"swar-bench: error: --config={config}: data.val_configs=32: expected a list, e.g. data.val_configs: [32]"
    )


LIST_OPTIONS = [
    "data.train_configs",
    "data.val_configs",
    "data.test_configs",
    "accuracy.n_writes_values",
    "calibration.n_writes_values",
    "model.betas",
]
YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"}
SCALARS = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda w: w not in YAML_WORDS),
    st.integers(0, 99999).map(str),
    st.floats(0.001, 1000, allow_nan=False).map(lambda x: f"{x:.3f}"),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(option=st.sampled_from(LIST_OPTIONS), value=SCALARS)
def test_any_scalar_given_to_a_list_option_is_one_line(capsys, tmp_path_factory, option, value):
    """The kind: any scalar (a word, an integer, a number) given on the command line to any option
    that takes a list: exit 2, one line ``--OPTION=VALUE: expected a list, e.g. --OPTION=[...]``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        capsys.readouterr()
        assert main(["fit", "--config", QUICKSTART, f"--{option}={value}"]) == 2
    line = one_error_line(capsys)
    assert line.startswith(
        f"swar-bench: error: --{option}={value}: expected a list, e.g. --{option}=["
    )
    assert line.endswith("]") and "Expected" not in line


# --- a class name that names no class, given to a class option (--trainer.callbacks+=NoSuch) ------

def _public_subclasses(module_name: str, base: type) -> list[str]:
    """The public subclasses of ``base`` that the installed package's ``__all__`` exports: the
    list follows the installed Lightning, which adds and drops callbacks between releases."""
    import importlib

    module = importlib.import_module(module_name)
    found = (getattr(module, name, None) for name in module.__all__)
    return [c.__name__ for c in found if isinstance(c, type) and c is not base and issubclass(c, base)]


def _callbacks() -> str:
    from lightning.pytorch.callbacks import Callback

    ours = ["AnswerTypeAccuracy", "Calibration", "FlopBudget", "LengthCurriculum", "MQARAccuracy"]
    theirs = _public_subclasses("lightning.pytorch.callbacks", Callback)
    assert {"EarlyStopping", "ModelCheckpoint", "LearningRateMonitor"} <= set(theirs)
    return ", ".join(sorted({*ours, *theirs}))


def _loggers() -> list[str]:
    from lightning.pytorch.loggers import Logger

    return sorted(_public_subclasses("lightning.pytorch.loggers", Logger))


CALLBACKS = _callbacks()


def test_the_reported_unknown_callback_lists_the_callbacks(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fit", "--config", QUICKSTART, "--trainer.callbacks+=NoSuch"]) == 2
    assert one_error_line(capsys) == (
        "swar-bench: error: unknown Callback class 'NoSuch' for --trainer.callbacks; expected a Callback class name "
        f"or path, e.g. one of {CALLBACKS}"
    )


def test_an_unknown_callback_in_a_config_file_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text("trainer:\n  callbacks:\n    - class_path: EarlyStoping\n")
    assert main(["fit", "--config", QUICKSTART, "--config", str(config)]) == 2
    assert one_error_line(capsys) == (
        f"swar-bench: error: --config={config}: unknown Callback class 'EarlyStoping' for trainer.callbacks (did you "
        f"mean EarlyStopping?); expected a Callback class name or path, e.g. one of {CALLBACKS}"
    )


CLASS_OPTIONS = [
    ("--trainer.callbacks+", "Callback", CALLBACKS.split(", ")),
    ("--trainer.callbacks", "Callback", CALLBACKS.split(", ")),
    (
        "--trainer.logger",
        "Logger",
        _loggers(),
    ),
]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), chosen=st.sampled_from(CLASS_OPTIONS), dotted=st.booleans())
def test_any_unknown_class_name_is_one_line_with_the_classes_taken(
    capsys, tmp_path_factory, data, chosen, dotted
):
    """The kind: any misspelt class name (one letter doubled, or a letter replaced by ``Q``), bare
    or as a dotted path, given to a class option: exit 2, one line ``unknown <Base> class 'NAME'
    for --OPTION``, a suggestion only of a class the option takes, and every class it takes."""
    flag, kind, choices = chosen
    meant = data.draw(st.sampled_from(choices))
    i = data.draw(st.integers(0, len(meant) - 1))
    typo = data.draw(
        st.sampled_from([meant[:i] + meant[i] + meant[i:], meant[:i] + "Q" + meant[i + 1 :]])
    )
    if typo in choices:
        return
    name = f"lightning.pytorch.callbacks.{typo}" if dotted else typo
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        capsys.readouterr()
        assert main(["fit", "--config", QUICKSTART, f"{flag}={name}"]) == 2
    line = one_error_line(capsys)
    option = flag.rstrip("+")
    assert line.startswith(f"swar-bench: error: unknown {kind} class {name!r} for {option}")
    assert line.endswith(
        f"; expected a {kind} class name or path, e.g. one of {', '.join(choices)}"
    )
    if "(did you mean " in line:
        assert line.split("(did you mean ")[1].split("?)")[0] in choices
