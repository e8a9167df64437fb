"""`referee compare` and `verdict` read their inputs before deriving anything from them (fault:
`referee compare /tmp/a.json /tmp/b.json`, both missing, said "names ['tmp', 'tmp']: expected
distinct names (pass --names)", a reason derived from paths that name no file)."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.referee.cli import main


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1, captured.err
    return lines[0]


def test_the_reported_two_missing_files_in_one_folder(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"  # one folder: the derived names would be equal
    assert swar_main(["referee", "compare", str(a), str(b)]) == 2
    assert _one_line(capsys) == f"swar-bench referee compare: error: {a}: no such file; expected a referee result JSON"


def test_a_missing_challenger_is_named_before_the_names(tmp_path, capsys):
    good = tmp_path / "x" / "result.json"
    good.parent.mkdir()
    good.write_text("{}")
    missing = tmp_path / "y" / "result.json"
    assert main(["verdict", "--baseline", str(missing), "--challenger", str(good), "--json", str(tmp_path / "n" / "v.json")]) == 2
    assert _one_line(capsys) == f"swar-bench referee verdict: error: {missing}: no such file; expected a referee result JSON"
    assert not (tmp_path / "n").exists()  # the folder made for --json is taken back


BAD = st.sampled_from(["missing", "folder", "not json", "empty", "not utf-8"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.one_of(BAD, st.just("good")), min_size=1, max_size=4).filter(lambda k: any(x != "good" for x in k)),
       same_folder=st.booleans(), names=st.one_of(st.none(), st.just("dup")), command=st.sampled_from(["compare", "verdict"]))
def test_an_unreadable_input_is_named_first(tmp_path_factory, capsys, gru_result, kinds, same_folder, names, command):
    """Whatever the folders of the inputs (names derived from them may clash) and whatever --names,
    the first input that is missing or unreadable is the one error line, exit 2, naming it."""
    root = tmp_path_factory.mktemp("inputs")
    if command == "verdict":
        kinds = (kinds * 2)[:2]
        assume(any(k != "good" for k in kinds))
    paths = []
    for i, kind in enumerate(kinds):
        folder = root / ("same" if same_folder else f"f{i}")
        folder.mkdir(exist_ok=True)
        path = folder / f"r{i}.json"
        if kind == "folder":
            path.mkdir()
        elif kind == "not json":
            path.write_text("{not json")
        elif kind == "empty":
            path.write_text("")
        elif kind == "not utf-8":
            path.write_bytes(b"\xff\xfe")
        elif kind == "good":
            path.write_text(json.dumps(gru_result))
        paths.append(str(path))
    before = sorted(os.walk(root))
    if command == "compare":
        argv = ["compare", *paths, *(["--names", *(["n"] * len(paths))] if names else [])]
    else:
        argv = ["verdict", "--baseline", paths[0], "--challenger", paths[1], *(["--names", "n", "n"] if names else [])]
    assert main(argv) == 2
    line = _one_line(capsys)
    first_bad = next(p for p, k in zip(paths, kinds) if k != "good")
    assert line.startswith(f"swar-bench referee {command}: error: {first_bad}: "), line
    assert "expected" in line and "distinct names" not in line, line
    assert sorted(os.walk(root)) == before  # nothing written


def test_the_reported_path_with_two_spaces_is_echoed_as_typed(tmp_path, capsys):
    """fault: `compare 'a  b.json' c.json` said `a b.json: no such file`: the error line collapsed
    every run of spaces, so the name shown was not the file's."""
    missing = tmp_path / "a  b.json"
    assert main(["compare", str(missing), str(tmp_path / "c.json")]) == 2
    assert _one_line(capsys) == f"swar-bench referee compare: error: {missing}: no such file; expected a referee result JSON"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(st.sampled_from("ab \t"), min_size=1, max_size=8).filter(lambda n: n.strip() == n and n.strip()),
       command=st.sampled_from(["compare", "verdict"]))
def test_any_path_is_echoed_as_typed_spaces_and_tabs_included(tmp_path_factory, capsys, name, command):
    missing = tmp_path_factory.mktemp("p") / f"{name}.json"
    other = missing.with_name("other.json")
    argv = ["compare", str(missing), str(other)] if command == "compare" else [
        "verdict", "--baseline", str(missing), "--challenger", str(other)]
    assert main(argv) == 2
    assert _one_line(capsys) == (f"swar-bench referee {command}: error: {missing}: no such file; "
                                 "expected a referee result JSON")
