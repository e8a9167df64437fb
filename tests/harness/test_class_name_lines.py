"""A class name given to a class-typed option (``--trainer.callbacks``, ``--trainer.logger``,
``--trainer.plugins``, or such a key of a ``--config`` file) that names no class is one line
naming it, whatever characters it holds: braces in it are never read as a format string."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")


def _lines(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


LOGGERS = "CSVLogger, CometLogger, MLFlowLogger, TensorBoardLogger, WandbLogger"


def test_the_reported_logger_name_with_a_brace_is_one_line(capsys):
    # reported: ValueError: unexpected '{' in field name (the line was built with str.format)
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.fast_dev_run=true", "--trainer.logger={NoSuch"])
    assert code == 2
    assert err == [("swar-bench: error: unclosed mapping '{NoSuch' for --trainer.logger; expected a mapping closed by }, "
                    'e.g. --trainer.logger={"class_path": "CSVLogger"}, or a Logger class name or path')]


def test_the_reported_plugin_name_with_a_field_is_one_line(capsys):
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.plugins=No{0}Such"])
    assert code == 2
    assert len(err) == 1 and err[0].startswith("swar-bench: error: unknown Precision, ClusterEnvironment, "
                                               "CheckpointIO or LayerSync class 'No{0}Such' for --trainer.plugins;")


def test_the_reported_callback_name_with_a_brace_in_a_config_file_names_the_file(capsys, tmp_path):
    config = tmp_path / "cb.yaml"
    config.write_text('trainer:\n  callbacks: [{class_path: "No{Such"}]\n')
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--config", str(config)])
    assert code == 2
    assert len(err) == 1 and err[0].startswith(
        f"swar-bench: error: --config={config}: unknown Callback class 'No{{Such' for trainer.callbacks; expected a "
        "Callback class name or path, e.g. one of ")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(["callbacks", "logger", "plugins"]),
       name=st.text(alphabet="ab{}0()-", min_size=1, max_size=8))
def test_any_class_name_with_braces_is_one_line_naming_it(capsys, option, name):
    typed = f"No{name}"
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, f"--trainer.{option}={typed}"])
    assert code == 2
    assert len(err) == 1 and f"class {typed!r} for --trainer.{option}" in err[0]
