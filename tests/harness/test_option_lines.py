"""Refusals name the option as the user typed it, and the ``--config`` file that set it
(``swar_bench.harness.values.option_line``); ``--trainer.max_time`` is checked before Lightning's
``Timer`` refuses it without naming the option (``values._max_time``)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness.values import MAX_TIME_EXPECTED, _max_time, option_line

NS = "expected one of 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384 (or 'n<N>')"


def _line(capsys, argv):
    from swar_bench.lightning_cli import main

    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    return code, err


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--data.train_configs=[33]"], f"--data.train_configs=[33]: 33 is not an allowed N; {NS}"),
        (["--data.val_configs=[n32,n65]"], f"--data.val_configs=[n32,n65]: 'n65' is not an allowed N; {NS}"),
        (["--trainer.max_time=abc"], f"--trainer.max_time=abc: expected {MAX_TIME_EXPECTED}"),
    ],
)
def test_reported_lines(capsys, tmp_path, monkeypatch, options, line):
    monkeypatch.chdir(tmp_path)
    assert _line(capsys, ["fit", "--model.mechanism=GRU", *options]) == (2, [f"swar-bench: error: {line}"])


def test_reported_data_source_of_a_config_file_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a_file = tmp_path / "afile.txt"
    a_file.write_text("x\n")
    config = tmp_path / "src.yaml"
    config.write_text(f"data:\n  source: {a_file}\n")
    code, err = _line(capsys, ["fit", "--model.mechanism=GRU", "--config", str(config)])
    assert (code, err) == (2, [
        (f"swar-bench: error: --config={config}: data.source='{a_file}': is a file, expected a folder in the Hub "
         "layout or a Hub id owner/name (e.g. irodkin/passkey_swar)")
    ])


def test_max_time_of_a_config_file_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "mt.yaml"
    config.write_text("trainer:\n  max_time: abc\n")
    code, err = _line(capsys, ["fit", "--model.mechanism=GRU", f"--config={config}"])
    assert (code, err) == (2, [f"swar-bench: error: --config={config}: trainer.max_time=abc: expected {MAX_TIME_EXPECTED}"])


LISTS = st.sampled_from(["train_configs", "val_configs", "test_configs"])
VALUES = st.lists(st.integers(1, 99999), min_size=1, max_size=4).map(lambda v: "[" + ",".join(map(str, v)) + "]")


@settings(max_examples=60, deadline=None)
@given(name=LISTS, typed=VALUES, equals=st.booleans(), rest=st.text(min_size=1, max_size=30).filter(lambda t: "\n" not in t))
def test_a_bare_data_option_is_named_as_typed(name, typed, equals, rest):
    """Any list given on the command line (``--opt=V`` or ``--opt V``): the line leads with it verbatim."""
    argv = ["fit", f"--data.{name}={typed}"] if equals else ["fit", f"--data.{name}", typed]
    assert option_line(f"{name}: {rest}", argv) == f"--data.{name}={typed}: {rest}"


@settings(max_examples=40, deadline=None)
@given(name=LISTS, value=st.integers(1, 99999), flagged=st.booleans())
def test_an_option_set_by_a_config_file_names_the_file(tmp_path_factory, name, value, flagged):
    """Any data option set only by a ``--config`` file: the line names the file (absolute) and the
    dotted option; once the command line sets it after the file, the command line is named."""
    config = tmp_path_factory.mktemp("cfg") / "run.yaml"
    config.write_text(f"data:\n  {name}: [{value}]\n")
    message = f"--data.{name}=[{value}]: bad" if flagged else f"{name}: {value} bad"
    line = option_line(message, ["fit", "--config", str(config)])
    assert line.startswith(f"--config={config}: data.{name}")
    later = option_line(message, ["fit", "--config", str(config), f"--data.{name}=[{value}]"])
    assert later.startswith(f"--data.{name}=[{value}]: ")


@settings(max_examples=80, deadline=None)
@given(d=st.integers(0, 99), h=st.integers(0, 23), m=st.integers(0, 59), s=st.integers(0, 59))
def test_every_dd_hh_mm_ss_is_a_max_time(d, h, m, s):
    assert _max_time(f"{d:02d}:{h:02d}:{m:02d}:{s:02d}") is None
    assert _max_time({"hours": h, "minutes": m}) is None
    assert _max_time(datetime.timedelta(days=d)) is None


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=12).filter(lambda t: t.count(":") != 3))
def test_other_max_time_text_is_refused(text):
    """Any text that is not four ``:``-separated integers: refused, saying the format."""
    assert _max_time(text) == MAX_TIME_EXPECTED
    assert _max_time({"hourz": 1}) == MAX_TIME_EXPECTED
