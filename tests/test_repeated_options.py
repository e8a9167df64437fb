"""An option given twice is refused in one line by every command built on argparse, and a result
given twice is refused by the referee's comparisons (faults: argparse kept the last value and
dropped the others without a word, so `referee verdict --baseline A --challenger B --baseline B`
compared B with itself, and `referee compare A B --names GRU --names GDN` said "1 name for 2
results"; `referee compare A A --names a b` printed a table of one result against itself)."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main
from swar_bench.utils import argparsing

COMMANDS = [["data", c] for c in ("generate", "stats", "verify", "check", "show", "vocab")] + [
    ["referee", "compare"], ["referee", "verdict"], ["check-mechanism"], ["demo"],
] + [["study", c] for c in ("run", "report", "status", "site")]
REPEATABLE = (argparse._AppendAction, argparse._HelpAction, argparse._VersionAction, argparse._CountAction)


def _parsers() -> dict[str, argparsing.ArgumentParser]:
    """Every command's parser by its prog, built by the command itself (its --help)."""
    made: list[argparsing.ArgumentParser] = []
    init = argparsing.ArgumentParser.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    argparsing.ArgumentParser.__init__ = recording
    try:
        for words in COMMANDS:
            try:
                main([*words, "--help"])
            except SystemExit:
                pass
    finally:
        argparsing.ArgumentParser.__init__ = init
    return {p.prog: p for p in made}


PARSERS = _parsers()
OPTIONS = sorted(
    (prog, action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0])
    for prog, parser in PARSERS.items()
    for action in parser._actions
    if action.option_strings and not isinstance(action, REPEATABLE)
)


def test_every_command_was_found():
    assert {" ".join(["swar-bench", *w]) for w in COMMANDS} <= set(PARSERS), sorted(PARSERS)
    assert len(OPTIONS) > 40


def _error_lines(capsys, argv: list[str]) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as exit:  # check-mechanism and data end a usage error with SystemExit, as argparse does
        code = exit.code
    captured = capsys.readouterr()
    return code, [ln for ln in captured.err.splitlines() if ln.strip()]


def test_the_reported_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = _error_lines(capsys, ["referee", "verdict", "--baseline", "A", "--challenger", "B", "--baseline", "B"])
    assert (code, err) == (2, ["swar-bench referee verdict: error: --baseline given 2 times (A, B); expected it once"])
    code, err = _error_lines(capsys, ["referee", "compare", "A", "B", "--names", "GRU", "--names", "GDN"])
    assert (code, err) == (2, ["swar-bench referee compare: error: --names given 2 times; expected it once"])
    code, err = _error_lines(capsys, ["check-mechanism", "GRU", "--init-args", "{}", "--init_args={}"])
    assert (code, err) == (2, [("swar-bench check-mechanism: error: --init_args given 2 times as --init-args, "
                                "--init_args ('{}', '{}'); expected it once")])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(OPTIONS), joined=st.booleans(),
       values=st.lists(st.text("abc123", min_size=1, max_size=3), min_size=2, max_size=3))
def test_any_option_given_more_than_once_is_refused(tmp_path, monkeypatch, capsys, option, joined, values):
    prog, flag = option
    parser = PARSERS[prog]
    action = parser._option_string_actions[flag]
    words: list[str] = prog.split()[1:]
    for value in values:
        if action.nargs == 0:
            words.append(flag)
        elif joined:
            words.append(f"{flag}={value}")
        else:
            words += [flag, value]
    monkeypatch.chdir(tmp_path)
    code, err = _error_lines(capsys, words)
    expected = f"{prog}: error: {parser.canonical(flag)} given {len(values)} times"
    assert code == 2 and len(err) == 1 and err[0].startswith(expected) and err[0].endswith("; expected it once"), err


@pytest.fixture(scope="module")
def two_results(tmp_path_factory):
    """Two real referee results (a tiny GRU from two initial seeds)."""
    from swar_bench.referee.evaluate import evaluate
    from tests.referee.conftest import SMALL, small_gru

    root = tmp_path_factory.mktemp("results")
    paths = []
    for name, seed in (("gru_a", 0), ("gru_b", 1)):
        path = root / name / "result.json"
        path.parent.mkdir()
        path.write_text(json.dumps(evaluate(small_gru(seed, d_model=8), **SMALL)))
        paths.append(path)
    return paths


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=st.sampled_from(["same", "dotted", "link"]), command=st.sampled_from(["compare", "verdict"]),
       other_first=st.booleans())
def test_a_result_given_twice_is_refused(two_results, tmp_path_factory, capsys, spelling, command, other_first):
    first, other = two_results
    again = {"same": str(first), "dotted": f"{first.parent}/../{first.parent.name}/result.json"}.get(spelling)
    if spelling == "link":
        link = tmp_path_factory.mktemp("link") / "result.json"
        link.symlink_to(first)
        again = str(link)
    if command == "verdict":
        argv = ["referee", "verdict", "--baseline", str(first), "--challenger", again]
        where = " (as --baseline and --challenger)"
    else:
        paths = [str(other), str(first), again] if other_first else [str(first), again, str(other)]
        argv = ["referee", "compare", *paths, "--names", "a", "b", "c"]
        where = ""
    code, err = _error_lines(capsys, argv)
    spelled = "" if spelling == "same" else f", spelled {first} and {again}"  # in the order typed
    assert (code, err) == (2, [(f"swar-bench referee {command}: error: {first} given 2 times{where}{spelled}; "
                               "expected distinct result files")])
    # two distinct results still compare
    code, err = _error_lines(capsys, ["referee", "compare", str(first), str(other)])
    assert code == 0, err
