"""A misspelt argument of a class-typed option on the command line (``--trainer.logger.init_args.save_dirr``)
was refused with jsonargparse's "Expected one of ... Got value: NestedArg(...)", blamed on the
``--config`` file that set the logger. Now one line names the option as typed, the argument meant
and the class's arguments, as the same typo in a ``--config`` file and the misspelt keys of other
nested options are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench import cli
from swar_bench.config_errors import class_arguments
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import one_error_line

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")
TENSORBOARD = "lightning.pytorch.loggers.TensorBoardLogger"




def test_the_reported_logger_typo_names_the_option_and_the_argument_meant(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    argv = ["fit", "--config", QUICKSTART, "--trainer.logger.init_args.save_dirr=x"]
    line = (
        "swar-bench: error: unknown option --trainer.logger.init_args.save_dirr (did you mean "
        f"--trainer.logger.init_args.save_dir?); expected an argument of {TENSORBOARD}: comment, default_hp_metric, "
        "filename_suffix, flush_secs, log_graph, max_queue, name, prefix, purge_step, save_dir, sub_dir, version"
    )
    assert cli.main(argv) == 2
    assert one_error_line(capsys) == line
    assert not list(tmp_path.iterdir())  # refused before anything is written


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--trainer.logger.init_args.log_graph=abc"],
            f"--trainer.logger.init_args.log_graph=abc: expected true or false (an argument of {TENSORBOARD})",
        ),
        (
            ["--trainer.callbacks+=EarlyStopping", "--trainer.callbacks.init_args.patience=abc"],
            (
                "--trainer.callbacks.init_args.patience=abc: expected an integer (an argument of "
                "lightning.pytorch.callbacks.EarlyStopping)"
            ),
        ),
        (
            ["--trainer.logger=false", "--trainer.logger.init_args.save_dir=x"],
            (
                "--trainer.logger.init_args.save_dir: an argument given while --trainer.logger names no class; "
                "expected --trainer.logger=CLASS_PATH before its arguments"
            ),
        ),
    ],
)
def test_other_refusals_of_a_class_argument_name_the_option_as_typed(
    capsys, tmp_path, monkeypatch, argv, line
):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, *argv]) == 2
    assert one_error_line(capsys) == f"swar-bench: error: {line}"


CLASSES = [
    ("trainer.logger", TENSORBOARD, []),
    ("trainer.logger", "lightning.pytorch.loggers.CSVLogger", ["--trainer.logger=CSVLogger"]),
    (
        "trainer.profiler",
        "lightning.pytorch.profilers.SimpleProfiler",
        ["--trainer.profiler=SimpleProfiler"],
    ),
    (
        "trainer.callbacks",
        "lightning.pytorch.callbacks.EarlyStopping",
        ["--trainer.callbacks+=EarlyStopping"],
    ),
]


@settings(
    max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), chosen=st.sampled_from(CLASSES), init_args=st.booleans())
def test_any_misspelt_class_argument_is_one_line_with_the_argument_meant(
    capsys, tmp_path_factory, data, chosen, init_args
):
    """The kind: any argument of a logger, profiler or callback given on the command line with
    one letter doubled, spelt with or without ``init_args``: exit 2, one line ``unknown option
    --<as typed> (did you mean --<an argument of that class>?); expected an argument of <class>:
    <its arguments>``, never the ``--config`` file."""
    option, class_path, before = chosen
    accepted = class_arguments(class_path, follow_kwargs=True)
    name = data.draw(st.sampled_from(accepted))
    i = data.draw(st.integers(0, len(name) - 1))
    typo = name[:i] + name[i] + name[i:]
    flag = f"--{option}.{'init_args.' if init_args else ''}{typo}"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        capsys.readouterr()
        assert main(["fit", "--config", QUICKSTART, *before, f"{flag}=1"]) == 2
    line = one_error_line(capsys)
    listed = f"; expected an argument of {class_path}: {', '.join(accepted)}"
    assert line.startswith(f"swar-bench: error: unknown option {flag} (did you mean --{option}.")
    assert line.endswith(listed) and "--config" not in line
    meant = line.split("(did you mean ")[1].split("?)")[0]
    assert meant.rsplit(".", 1)[-1] in accepted


TYPED_ARGS = [  # (option, its class given, argument, what its type expects)
    ("trainer.logger", [], "max_queue", "an integer"),  # unannotated: checked by harness.class_values
    ("trainer.logger", [], "log_graph", "true or false"),
    ("trainer.logger", ["--trainer.logger=CSVLogger"], "flush_logs_every_n_steps", "an integer"),
    ("trainer.callbacks", ["--trainer.callbacks+=EarlyStopping"], "patience", "an integer"),
    ("trainer.callbacks", ["--trainer.callbacks+=EarlyStopping"], "min_delta", "a finite number"),
    ("trainer.callbacks", ["--trainer.callbacks+=EarlyStopping"], "strict", "true or false"),
    ("trainer.callbacks", ["--trainer.callbacks+=ModelCheckpoint"], "every_n_epochs", "null or an integer"),
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arg=st.sampled_from(TYPED_ARGS), word=st.text(alphabet="abcxyz", min_size=1, max_size=6),
       long_form=st.booleans(), spaced=st.booleans())
def test_any_word_for_a_typed_class_argument_is_said_as_other_options_say_it(capsys, tmp_path, monkeypatch, arg,
                                                                            word, long_form, spaced):
    """The kind: a word for an int, float or bool argument of a class given to a class-typed option,
    in either spelling of the option: one line naming the option and the value as typed and what
    the type expects (the lines said jsonargparse's "Expected bool. Got value: abc")."""
    monkeypatch.chdir(tmp_path)
    option, chosen, name, expected = arg
    if word in ("yes", "no", "on", "off", "y", "n", "true", "false", "null"):
        return  # YAML reads these as booleans or null
    flag = f"--{option}.{'init_args.' if long_form else ''}{name}"
    given = [flag, word] if spaced else [f"{flag}={word}"]
    assert main(["fit", "--config", QUICKSTART, "--trainer.fast_dev_run=true", *chosen, *given]) == 2
    class_path = "lightning.pytorch." + {"trainer.logger": "loggers.", "trainer.callbacks": "callbacks."}[option]
    assert one_error_line(capsys) == (
        f"swar-bench: error: {flag}={word}: expected {expected} (an argument of {class_path}"
        f"{(chosen[0].split('=')[-1] if chosen else 'TensorBoardLogger')})")
