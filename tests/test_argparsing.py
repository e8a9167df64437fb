"""``--option=--`` is a one-line usage error in every argparse command, never a traceback.

Python 3.11's argparse drops a ``--`` given after ``=`` and hands the command an empty list; the
reported case was ``swar-bench data show --config=--`` (AttributeError: 'list' object has no
attribute 'strip')."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.utils.argparsing import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]


def _study(argv):
    from swar_bench.study.cli import main

    return main(argv)


def _data(argv):
    from swar_bench.tasks.cli import main

    return main(argv)


def _check(argv):
    from swar_bench.mechanisms.check_cli import main

    return main(argv)


def _demo_parse(argv):
    from swar_bench.demo import _parse

    return _parse(argv)


# (entry point, the words before the option, the option): every option takes one value
CASES = [
    (_data, ["show"], "--config"),
    (_data, ["show", "--config", "n32"], "--index"),
    (_data, ["stats"], "--configs"),
    (_data, ["generate"], "--out"),
    (_data, ["verify"], "--configs"),
    (_check, ["GRU"], "--config"),
    (_demo_parse, [], "--config"),
    (_demo_parse, [], "--max-minutes"),
    (_study, ["run", "configs/studies/frontier.yaml"], "--jobs"),
    (_study, ["run", "configs/studies/frontier.yaml"], "--add"),
    (_study, ["report", "configs/studies/frontier.yaml"], "--out"),
]


def _exit_code(entry, argv):
    try:
        return entry(argv)
    except SystemExit as stop:
        return stop.code


def test_the_reported_data_show_config_dashes_is_one_line(capsys):
    assert _exit_code(_data, ["show", "--config=--"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "swar-bench data show: error: argument --config: expected one value; got '--'"
    )


@settings(max_examples=len(CASES) * 2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(CASES))
def test_any_option_given_dashes_is_a_usage_error_naming_it(capsys, case):
    entry, before, option = case
    assert _exit_code(entry, [*before, f"{option}=--"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"error: argument {option}: expected one value; got '--'")


@given(value=st.text(min_size=1, max_size=6).filter(lambda v: v != "--" and not v.startswith("-")))
def test_any_other_value_passes_through_unchanged(value):
    parser = ArgumentParser(prog="x")
    parser.add_argument("--config")
    assert parser.parse_args([f"--config={value}"]).config == value


def test_a_bare_double_dash_still_ends_the_options():
    parser = ArgumentParser(prog="x")
    parser.add_argument("--flag", action="store_true")
    parser.add_argument("rest", nargs="*")
    assert parser.parse_args(["--", "--flag"]).rest == ["--flag"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--unknown=--"])
