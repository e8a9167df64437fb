"""`referee compare` and `verdict` name their options as typed (fault: `verdict --alpha 0` said
"alpha=0.0: expected a significance level in (0, 1)", the parsed keyword, not the option and the
value typed; `--flops-tolerance -1` showed the value quoted, `'-1'`)."""

from __future__ import annotations

import json
import math
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.referee.cli import main

ALPHA = "expected a significance level in (0, 1)"
TOLERANCE = "expected a relative difference >= 0 (e.g. 0.05; inf to compare whatever the FLOPs)"


def _line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1, captured.err
    return lines[0]


def _results(root, result, names=("A", "B")) -> list[str]:
    paths = []
    for name in names:
        path = root / name / "result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
        paths.append(str(path))
    return paths


def test_the_reported_alpha_names_the_option_and_the_value_typed(tmp_path, capsys, gru_result):
    a, b = _results(tmp_path, gru_result)
    assert swar_main(["referee", "verdict", "--baseline", a, "--challenger", b, "--alpha", "0"]) == 2
    assert _line(capsys) == f"swar-bench referee verdict: error: --alpha=0: {ALPHA}"
    assert main(["verdict", "--baseline", a, "--challenger", b, "--flops-tolerance", "-1"]) == 2
    assert _line(capsys) == f"swar-bench referee verdict: error: --flops-tolerance=-1: {TOLERANCE}"
    assert main(["compare", a, b, "--flops-tolerance=-0.5"]) == 2
    assert _line(capsys) == f"swar-bench referee compare: error: --flops-tolerance=-0.5: {TOLERANCE}"


NUMBER = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.text("0123456789.-eE+xnaif", min_size=1, max_size=6).filter(lambda t: "--" not in t), st.just(""))


def _bad_alpha(text: str) -> bool:
    try:
        return not 0 < float(text) < 1
    except ValueError:
        return True


def _bad_tolerance(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return True
    return math.isnan(value) or value < 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), where=st.sampled_from([("verdict", "--alpha"), ("verdict", "--flops-tolerance"),
                                              ("compare", "--flops-tolerance")]), joined=st.booleans())
def test_every_bad_number_of_compare_and_verdict_names_its_option(tmp_path_factory, capsys, data, where, joined):
    """Whatever refused value --alpha or --flops-tolerance is given, in either form: one line
    naming the option and the value as typed (quoted only when blank space would hide it)."""
    command, option = where
    value = data.draw(NUMBER.filter(_bad_alpha if option == "--alpha" else _bad_tolerance))
    root = tmp_path_factory.mktemp("inputs")
    paths = [str(root / "a.json"), str(root / "b.json")]  # the options are checked before the inputs are read
    files = ["--baseline", paths[0], "--challenger", paths[1]] if command == "verdict" else paths
    typed_apart = not value.startswith("-") or re.fullmatch(r"-\d+|-\d*\.\d+", value)  # argparse: else an option
    given = [f"{option}={value}"] if joined or not typed_apart else [option, value]
    assert main([command, *files, *given]) == 2
    shown = value if value and value == value.strip() else repr(value)
    assert _line(capsys) == f"swar-bench referee {command}: error: {option}={shown}: {ALPHA if option == '--alpha' else TOLERANCE}"


def test_the_reported_names_are_refused_without_advising_names(tmp_path, capsys, gru_result):
    """(fault: `compare A.json B.json --names A A` said "names ['A', 'A']: expected distinct names
    (pass --names)", advice to give what was given; `--names A` said "--names has 1 entries")."""
    a, b = _results(tmp_path, gru_result)
    assert swar_main(["referee", "compare", a, b, "--names", "A", "A"]) == 2
    assert _line(capsys) == (
        "swar-bench referee compare: error: --names A A: A named more than once; expected one distinct name per result")
    assert main(["compare", a, b, "--names", "A"]) == 2
    assert _line(capsys) == "swar-bench referee compare: error: --names A: 1 name for 2 results; expected one name per result"
    assert main(["verdict", "--baseline", a, "--challenger", b, "--names", "A", "A"]) == 2
    assert _line(capsys) == ("swar-bench referee verdict: error: --names A A: A named more than once; "
                             "expected distinct names of the baseline and the challenger")
    (other,) = _results(tmp_path / "other", gru_result, names=("A",))  # folders named alike: --names is the way out
    assert main(["compare", a, other]) == 2
    assert _line(capsys) == ("swar-bench referee compare: error: names from the results' folders (A A): A named more than "
                             "once; expected distinct names (pass --names with one name per result)")


def test_the_reported_blank_and_broken_names_are_refused(tmp_path, capsys, gru_result):
    """(fault: `compare A B --names "" GDN` and `--names " " "  "` ran and printed rows without a
    label; `--names $'a\\nb' GDN` broke the table's layout)."""
    a, b = _results(tmp_path, gru_result)
    expected = "expected one distinct name per result, each visible text on one line"
    assert main(["compare", a, b, "--names", "", "GDN"]) == 2
    assert _line(capsys) == f"swar-bench referee compare: error: --names '' GDN: '' is blank; {expected}"
    assert main(["compare", a, b, "--names", " ", "GDN"]) == 2
    assert _line(capsys) == f"swar-bench referee compare: error: --names ' ' GDN: ' ' is blank; {expected}"
    assert main(["compare", a, b, "--names", "a\nb", "GDN"]) == 2
    assert _line(capsys) == (f"swar-bench referee compare: error: --names 'a\\nb' GDN: 'a\\nb' holds a line break or control "
                             f"character; {expected}")


def _shown(names) -> str:
    import shlex

    return " ".join(shlex.quote(n) if n.isprintable() else repr(n) for n in names)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["compare", "verdict"]), n_results=st.integers(1, 4),
       names=st.lists(st.sampled_from(["A", "B", "my model", "x", "", " ", "a\nb", "t\tab"]), min_size=1, max_size=5))
def test_names_that_repeat_or_miscount_are_one_line_naming_them(tmp_path_factory, capsys, gru_result, command,
                                                                 n_results, names):
    """Any --names that repeats a name, holds a blank name or one with a line break or control
    character, or (compare) gives a name too many or too few: one line quoting --names as typed,
    saying which name is wrong or how many were given for how many results."""
    if command == "verdict":
        n_results, names = 2, (names * 2)[:2]
    paths = _results(tmp_path_factory.mktemp("inputs"), gru_result, names=[f"r{i}" for i in range(n_results)])
    files = ["--baseline", paths[0], "--challenger", paths[1]] if command == "verdict" else paths
    repeated = [n for i, n in enumerate(names) if names.count(n) > 1 and names.index(n) == i]
    broken = [n for n in names if not n.strip() or not n.isprintable()]
    expected = "one distinct name per result" if command == "compare" else (
        "distinct names of the baseline and the challenger")
    status = main([command, *files, "--names", *names])
    if len(names) != n_results:
        line = (f"--names {_shown(names)}: {len(names)} name{'s' * (len(names) != 1)} for {n_results} "
                f"result{'s' * (n_results != 1)}; expected one name per result")
    elif broken:
        what = "is blank" if broken[0].isprintable() else "holds a line break or control character"
        line = f"--names {_shown(names)}: {broken[0]!r} {what}; expected {expected}, each visible text on one line"
    elif repeated:
        line = f"--names {_shown(names)}: {', '.join(repeated)} named more than once; expected {expected}"
    else:
        assert status == 0
        capsys.readouterr()
        return
    assert status == 2
    assert _line(capsys) == f"swar-bench referee {command}: error: {line}"
