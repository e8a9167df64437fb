"""An option given without its value (last on the line, or before another option) is refused in
one line naming it and what it takes (fault: `demo --target` said argparse's "argument --target:
expected one argument", `check-mechanism GRU --init-args` "argument --init_args/--init-args:
expected one argument": no word of what the option takes, and both spellings of one option)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main
from tests.test_repeated_options import PARSERS, REPEATABLE

TAKING = sorted(
    (prog, action.option_strings[-1])
    for prog, parser in PARSERS.items()
    for action in parser._actions
    if action.option_strings and action.nargs != 0 and not isinstance(action, REPEATABLE[1:])
)


def _run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's refusals end with SystemExit(2)
        code = exit.code
    return code, [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


def test_the_reported_options(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, ["demo", "--target"]) == (2, ["swar-bench demo: error: --target: no value given; expected a value in (0, 1]"])
    assert _run(capsys, ["check-mechanism", "GRU", "--init-args"]) == (
        2, ["swar-bench check-mechanism: error: --init_args: no value given; expected a value (JSON)"])
    assert _run(capsys, ["referee", "verdict", "--names", "a"]) == (
        2, ["swar-bench referee verdict: error: --names: too few values; expected 2 values"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(TAKING), before_another=st.booleans())
def test_any_option_without_its_value_is_one_line_naming_it(tmp_path, monkeypatch, capsys, option, before_another):
    prog, flag = option
    parser = PARSERS[prog]
    action = parser._option_string_actions[flag]
    words = [*prog.split()[1:], flag, *(["--help"] if before_another else [])]
    monkeypatch.chdir(tmp_path)
    code, lines = _run(capsys, words)
    assert code == 2 and len(lines) == 1, lines
    head = f"{prog}: error: {parser.canonical(flag)}: "
    assert lines[0].startswith(head) and "argument " not in lines[0], lines
    rest = lines[0][len(head):]
    assert rest.startswith(("no value given; expected ", "too few values; expected ")), lines
    expected = getattr(action.type, "expected", None)
    if expected is not None:
        assert rest.endswith(expected), lines
    elif action.choices is not None:
        assert rest.endswith(", ".join(map(str, action.choices))), lines
