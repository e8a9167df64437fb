"""argparse's own refusals read as every other refusal: the option and the value as typed, and
what was expected (faults: `data generate --num-examples abc` said argparse's "argument
--num-examples: invalid int value: 'abc'"; `data generate` without --out "the following
arguments are required: --out"; `referee compare` without results "... required: results",
none of them saying what to give)."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_repeated_options import PARSERS, _error_lines

REPORTED = [
    (["data", "generate", "--num-examples", "abc", "--out", "x"],
     "swar-bench data generate: error: --num-examples=abc: expected an integer in [1, 10**6)"),
    (["data", "generate"],
     ("swar-bench data generate: error: --out is required; expected --out OUT (output folder) "
     "(swar-bench data generate --help)")),
    (["referee", "compare"],
     ("swar-bench referee compare: error: RESULTS is required; expected RESULTS (result.json files written by "
     "`swar-bench referee`) (swar-bench referee compare --help)")),
    (["referee", "verdict"],
     ("swar-bench referee verdict: error: --baseline and --challenger are required; expected --baseline BASELINE "
     "(result.json of the baseline); --challenger CHALLENGER (result.json of the challenger) "
     "(swar-bench referee verdict --help)")),
]


@pytest.mark.parametrize(("argv", "line"), REPORTED, ids=[" ".join(a) for a, _ in REPORTED])
def test_the_reported_refusals(tmp_path, monkeypatch, capsys, argv, line):
    monkeypatch.chdir(tmp_path)
    assert _error_lines(capsys, argv) == (2, [line])
    assert list(tmp_path.iterdir()) == []


TYPED = sorted((prog, action.option_strings[-1]) for prog, parser in PARSERS.items() for action in parser._actions
               if action.type in (int, float) and action.option_strings)
REQUIRED = sorted(prog for prog, parser in PARSERS.items()
                  if any(a.required and not isinstance(a, argparse._SubParsersAction) for a in parser._actions)
                  and not prog.startswith("swar-bench check-mechanism"))


def test_every_numeric_option_of_every_command_says_its_range():
    """A bare ``type=int`` / ``type=float`` could only say "an integer"; every numeric option of
    every command is a NumberArg, whose refusal names the range (`--num-examples=abc: expected an
    integer in [1, 10**6)`)."""
    assert TYPED == []
    assert len(REQUIRED) >= 8, REQUIRED


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from([int, float]), name=st.text("abcdefgh", min_size=2, max_size=8),
       value=st.text("abcxyz_:", min_size=1, max_size=6), joined=st.booleans(), sub=st.booleans())
def test_any_non_number_given_a_plain_number_option_names_the_option_and_the_value(kind, name, value, joined, sub):
    """The kind, on any parser of ours: an option of ``type=int`` or ``float`` (a sub-command's or
    the top parser's), any word that reads as no number: `--option=word: expected an integer` (or
    `a number`), exit 2."""
    from swar_bench.utils.argparsing import ArgumentParser

    top = ArgumentParser(prog="tool")
    parser = top.add_subparsers(dest="command", required=True).add_parser("go") if sub else top
    parser.add_argument(f"--{name}", type=kind)
    words = (["go"] if sub else []) + ([f"--{name}={value}"] if joined else [f"--{name}", value])
    err = io.StringIO()
    with pytest.raises(SystemExit) as stop, contextlib.redirect_stderr(err):
        top.parse_args(words)
    what = "an integer" if kind is int else "a number"
    assert (stop.value.code, err.getvalue()) == (2, f"{'tool go' if sub else 'tool'}: error: --{name}={value}: expected {what}\n")


@pytest.mark.parametrize("prog", REQUIRED)
def test_every_command_given_none_of_its_required_arguments_names_each_and_what_it_takes(tmp_path, monkeypatch,
                                                                                        capsys, prog):
    """The kind: every argparse command with required arguments, given none: one line naming each
    (its option or its metavar), with its metavar and help, and where to read more."""
    parser = PARSERS[prog]
    monkeypatch.chdir(tmp_path)
    code, err = _error_lines(capsys, prog.split()[1:])
    required = [a for a in parser._actions if a.required]
    names = [parser.canonical(a.option_strings[0]) if a.option_strings else (a.metavar or a.dest).upper()
             for a in required]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"{prog}: error: {' and '.join(names)} {'is' if len(names) == 1 else 'are'} required; "
                             "expected "), err
    assert err[0].endswith(f" ({prog} --help)") and all(n in err[0].partition("expected ")[2] for n in names), err
