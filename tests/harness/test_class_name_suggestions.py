"""A class name for a class-typed option gets a "did you mean" only when a name is a small edit
away (``NoSuchLogger`` is not ``CSVLogger``), and an unclosed list (``[LearningRateMonitor``) is
named as such."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.cli_lines import fit_error

LOGGERS = ["CSVLogger", "CometLogger", "MLFlowLogger", "TensorBoardLogger", "WandbLogger"]




def test_the_reported_far_logger_name_gets_no_suggestion(capsys):
    assert fit_error(capsys, "--trainer.logger=NoSuchLogger") == (
        "swar-bench: error: unknown Logger class 'NoSuchLogger' for --trainer.logger; expected a Logger class name or "
        f"path, e.g. one of {', '.join(LOGGERS)}")


def test_the_reported_unclosed_list_is_named(capsys):
    assert fit_error(capsys, "--trainer.callbacks=[LearningRateMonitor") == (
        "swar-bench: error: unclosed list '[LearningRateMonitor' for --trainer.callbacks; expected a list closed by ], "
        "e.g. --trainer.callbacks=[LearningRateMonitor], or a Callback class name or path")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), name=st.sampled_from(LOGGERS), unclosed=st.booleans())
def test_any_logger_name_one_letter_off_is_suggested(capsys, data, name, unclosed):
    i = data.draw(st.integers(1, len(name) - 1))
    typo = name[:i] + name[i + 1:]
    if unclosed:
        line = fit_error(capsys, f"--trainer.callbacks=[{typo}")
        assert line.startswith(f"swar-bench: error: unclosed list '[{typo}' for --trainer.callbacks; expected a list "
                               "closed by ], e.g. --trainer.callbacks=[")
        return
    line = fit_error(capsys, f"--trainer.logger={typo}")
    assert line.startswith(f"swar-bench: error: unknown Logger class '{typo}' for --trainer.logger (did you mean {name}?)")
