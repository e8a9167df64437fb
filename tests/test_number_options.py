"""A numeric option of an argparse command given a word that is no number, or a number it does
not take, is refused in one line with the word as typed and what the option takes (faults:
`study run S.yaml --jobs abc` said argparse's "argument --jobs: invalid int value: 'abc'" where
`--jobs 0` said "--jobs=0 is invalid; expected an integer >= 1"; `demo --target 0` echoed the
parsed "--target=0.0"; each option's type and range were checked in two places with two wordings)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main
from swar_bench.utils.argparsing import NumberArg
from tests.test_repeated_options import PARSERS

NUMBERS = sorted(
    (prog, action.option_strings[-1])
    for prog, parser in PARSERS.items()
    for action in parser._actions
    if isinstance(action.type, NumberArg)
)


def _run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's refusals end with SystemExit(2)
        code = exit.code
    captured = capsys.readouterr()
    return code, [ln for ln in captured.err.splitlines() if ln.strip()]


def test_every_numeric_option_is_typed_once():
    assert len(NUMBERS) >= 14, NUMBERS  # demo 3, check-mechanism 4, data show 1, study run 7


def test_the_reported_options(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, ["study", "run", "S.yaml", "--jobs", "abc"]) == (
        2, ["swar-bench study run: error: --jobs=abc: expected an integer >= 1"])
    assert _run(capsys, ["study", "run", "S.yaml", "--jobs", "0"]) == (
        2, ["swar-bench study run: error: --jobs=0: expected an integer >= 1"])
    assert _run(capsys, ["demo", "--target", "0"]) == (2, ["swar-bench demo: error: --target=0: expected a value in (0, 1]"])


def _takes(number: NumberArg, word: str) -> bool:
    try:
        number(word)
    except (ValueError, OverflowError):
        return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(NUMBERS), joined=st.booleans(), data=st.data())
def test_any_value_a_numeric_option_does_not_take_is_one_line_as_typed(tmp_path, monkeypatch, capsys, option, joined,
                                                                       data):
    prog, flag = option
    number = PARSERS[prog]._option_string_actions[flag].type
    word = data.draw(st.one_of(
        st.sampled_from(["abc", "nan", "inf", "-inf", "1.5", "1e400", "0x10", "", "1,5", "-"]),
        st.integers(-10**20, 10**20).map(str), st.floats(allow_nan=False).map(repr),
    ).filter(lambda w: not _takes(number, w) and (joined or (w and not w.startswith("-")))), label="word")
    monkeypatch.chdir(tmp_path)
    words = [f"{flag}={word}"] if joined else [flag, word]
    code, lines = _run(capsys, [*prog.split()[1:], *words, *(["S.yaml"] if prog.endswith(("study run",)) else [])])
    assert code == 2 and lines == [f"{prog}: error: {flag}={word}: expected {number.expected}"], lines
