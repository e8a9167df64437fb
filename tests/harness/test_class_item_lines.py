"""An init arg refused inside a class given to a class-typed option as a whole value (an inline
JSON list on the command line, a ``--config`` file's mapping) or as ``--option.ARG=V`` of a Union
type is one line naming the init arg, its value and what was expected (and the file), not
jsonargparse's "Expected one of list[...Callback] ..." dump."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.cli_lines import fit_error

CHECKPOINT = "lightning.pytorch.callbacks.ModelCheckpoint"
TENSORBOARD = "lightning.pytorch.loggers.TensorBoardLogger"




def test_the_reported_typo_in_a_json_callbacks_list_is_named(capsys):
    line = fit_error(capsys, *['--trainer.callbacks=[{"class_path": "EarlyStopping", "init_args": {"monitr": "x"}}]'])
    assert line.startswith("swar-bench: error: --trainer.callbacks: unknown init arg 'monitr' of "
                           "lightning.pytorch.callbacks.EarlyStopping (did you mean monitor?); expected one of monitor, ")


def test_the_reported_word_for_an_optional_int_is_named(capsys):
    line = fit_error(capsys, *["--trainer.callbacks+=ModelCheckpoint", "--trainer.callbacks.every_n_train_steps=abc"])
    assert line == ("swar-bench: error: --trainer.callbacks.every_n_train_steps=abc: expected null or an integer "
                    f"(an argument of {CHECKPOINT})")


def test_the_reported_config_file_values_name_the_file_and_key(capsys, tmp_path):
    logger = tmp_path / "lg.yaml"
    logger.write_text(f"trainer:\n  logger:\n    class_path: {TENSORBOARD}\n    init_args:\n      save_dir: {tmp_path}\n"
                      "      log_graph: maybe\n")
    assert fit_error(capsys, *["--config", str(logger)]) == (
        f"swar-bench: error: --config={logger}: trainer.logger.init_args.log_graph=maybe: expected true or false "
        f"(an argument of {TENSORBOARD})")
    checkpoint = tmp_path / "mc.yaml"
    checkpoint.write_text("trainer:\n  callbacks:\n  - class_path: ModelCheckpoint\n    init_args:\n"
                          "      every_n_train_steps: abc\n")
    assert fit_error(capsys, *["--config", str(checkpoint)]) == (
        f"swar-bench: error: --config={checkpoint}: trainer.callbacks.init_args.every_n_train_steps=abc: expected null "
        f"or an integer (an argument of {CHECKPOINT})")


INT_ARGS = ["every_n_train_steps", "every_n_epochs", "save_top_k"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arg=st.sampled_from(INT_ARGS), value=st.text(alphabet="abcxyz", min_size=1, max_size=6),
       route=st.sampled_from(["file", "json", "nested"]))
def test_any_word_for_an_int_callback_arg_is_one_line_naming_it(capsys, tmp_path, arg, value, route):
    if route == "file":
        path = tmp_path / "cb.yaml"
        path.write_text(f"trainer:\n  callbacks:\n  - class_path: ModelCheckpoint\n    init_args:\n      {arg}: {value}\n")
        argv, where = ["--config", str(path)], f"--config={path}: trainer.callbacks.init_args.{arg}"
    elif route == "json":
        argv = [f'--trainer.callbacks=[{{"class_path": "ModelCheckpoint", "init_args": {{"{arg}": "{value}"}}}}]']
        where = f"--trainer.callbacks.init_args.{arg}"
    else:
        argv, where = ["--trainer.callbacks+=ModelCheckpoint", f"--trainer.callbacks.{arg}={value}"], f"--trainer.callbacks.{arg}"
    line = fit_error(capsys, *argv)
    assert line.startswith(f"swar-bench: error: {where}={value}: expected ")
    assert line.endswith((f": expected null or an integer (an argument of {CHECKPOINT})", f": expected an integer (an argument of {CHECKPOINT})"))
