"""An init arg of a logger (or callback) that jsonargparse passes unchecked, an argument with no
annotation typed ``Union[int, Untyped]`` from its default (``TensorBoardLogger``'s ``max_queue``,
``flush_secs``), is refused as a typed one is (``--trainer.logger.max_queue=ten: expected an integer``), and a logger's
count or period that is not positive too, in one line before anything runs."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonargparse import Namespace

from swar_bench.harness.class_values import argument_types, class_arg_problem, expected_type
from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")
TENSORBOARD = "lightning.pytorch.loggers.TensorBoardLogger"
CSV = "lightning.pytorch.loggers.CSVLogger"


def _lines(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def test_the_reported_max_queue_word_is_one_line(capsys):
    # reported: passed the parser, then TypeError in SummaryWriter (exit 0 under fast_dev_run)
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.fast_dev_run=true",
                                "--trainer.logger.init_args.max_queue=ten"])
    assert code == 2
    assert err == [f"swar-bench: error: --trainer.logger.init_args.max_queue=ten: expected an integer (an argument of {TENSORBOARD})"]
    # the option as typed, its short form included (the line named the long form and said "Expected int")
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.fast_dev_run=true", "--trainer.logger.max_queue=abc"])
    assert (code, err) == (2, [f"swar-bench: error: --trainer.logger.max_queue=abc: expected an integer (an argument of {TENSORBOARD})"])


def test_the_reported_negative_flush_secs_in_a_config_file_names_the_file(capsys, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(f"trainer:\n  logger:\n    class_path: {TENSORBOARD}\n    init_args:\n      save_dir: {tmp_path}\n"
                      "      flush_secs: -5\n")
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--config", str(config)])
    assert code == 2
    assert err == [(f"swar-bench: error: --config={config}: trainer.logger.init_args.flush_secs=-5: expected "
                   f"a positive integer (an argument of {TENSORBOARD})")]


def _int_args(path):
    return [(path, name) for name, (hint, default) in argument_types(path).items()
            if expected_type(hint) is int and isinstance(default, int) and default > 0]


INT_ARGS = _int_args(TENSORBOARD) + _int_args(CSV)


def test_the_int_args_are_found():
    assert {name for _, name in INT_ARGS} == {"max_queue", "flush_secs", "flush_logs_every_n_steps"}


def _cfg(path, name, value):
    return Namespace(trainer=Namespace(logger=Namespace(class_path=path, init_args=Namespace(**{name: value})),
                                       callbacks=None))


@settings(max_examples=60, deadline=None)
@given(arg=st.sampled_from(INT_ARGS), value=st.one_of(
    st.text(alphabet="abten.-", min_size=1, max_size=6), st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda x: x != int(x)), st.booleans(), st.integers(max_value=0)))
def test_any_bad_int_logger_arg_is_one_line_naming_it(arg, value):
    path, name = arg
    line = class_arg_problem(_cfg(path, name, value), [])
    assert line is not None and "\n" not in line
    shown = {True: "true", False: "false"}.get(value, value) if isinstance(value, bool) else value
    assert line.startswith(f"--trainer.logger.init_args.{name}={shown}: expected ")
    assert line.endswith((f": expected an integer (an argument of {path})", f": expected a positive integer (an argument of {path})"))


@settings(max_examples=30, deadline=None)
@given(arg=st.sampled_from(INT_ARGS), value=st.integers(min_value=1, max_value=10**6))
def test_any_positive_int_logger_arg_passes(arg, value):
    path, name = arg
    assert class_arg_problem(_cfg(path, name, value), []) is None
