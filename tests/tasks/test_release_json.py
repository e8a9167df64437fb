"""A release's JSON file that is not valid JSON (issue "faults by whole kind", item 4): a truncated
``checksums.json`` (an unbalanced brace) was reported as "not readable as checksums (Expecting ','
delimiter: ...)", once per split file and again in the release summary, its chained context
repeated inside it. Now one line names the file, says it is not valid JSON at line L, column C,
and what was expected; the same words for ``params.json`` and ``vocab.json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks.cli import main as data_main
from swar_bench.tasks.hub_io import CHECKSUMS_FILE, CorruptDataError, read_checksums, write_dataset

EXPECTED = ('expected {"sha256": {"n32/test-00000-of-00001.parquet": "<hex>", ...}} as `swar-bench data generate` '
            "writes it (run it again to rewrite the file)")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release")
    write_dataset(out, configs=["n32"], splits=["validation", "test"], num_examples=5, progress=False)
    return out


@pytest.fixture
def copy(release, tmp_path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(release, target)
    return target


def _lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return [ln for ln in captured.err.splitlines() if ln.strip()]


def test_a_checksums_file_without_its_last_brace_is_one_line_naming_it(copy, capsys):
    # the reported input: the closing brace of the outer object is missing
    path = copy / CHECKSUMS_FILE
    text = path.read_text()
    path.write_text(text.rstrip().removesuffix("}"))
    problem = json.JSONDecodeError  # where json says the document ends too early
    try:
        json.loads(path.read_text())
    except problem as err:
        where = f"line {err.lineno}, column {err.colno}"
    line = f"FAILED: {path}: not valid JSON ({where}: expecting ',' delimiter); {EXPECTED}"
    for argv in (["verify", str(copy)], ["check", str(copy)]):
        assert data_main(argv) == 1, argv
        assert _lines(capsys) == [line], argv
    assert data_main(["show", "--source", str(copy), "--config", "n32", "--split", "test"]) == 1
    assert _lines(capsys) == [f"swar-bench data show: {line}"]


def test_generate_again_rewrites_a_checksums_file_that_is_not_json(copy, capsys):
    (copy / CHECKSUMS_FILE).write_text('{\n "sha256": {\n')
    assert data_main(["generate", "--out", str(copy), "--configs", "n32", "--splits", "validation,test",
                      "--num-examples", "5"]) == 0
    assert read_checksums(copy)  # readable again
    capsys.readouterr()
    assert data_main(["verify", str(copy)]) == 0


@pytest.mark.parametrize(("content", "what"), [
    ("", "not valid JSON (the file is empty)"),
    ("[1, 2]", "not a checksums file (a JSON list)"),
    ('{"sha": {}}', 'not a checksums file (no "sha256" object)'),
    ('{"sha256": {"a": 1}}', 'not a checksums file ("sha256" is not an object of strings)'),
])
def test_a_checksums_file_of_the_wrong_form_says_what_it_is(copy, content, what):
    (copy / CHECKSUMS_FILE).write_text(content)
    with pytest.raises(CorruptDataError) as err:
        read_checksums(copy)
    assert str(err.value) == f"{copy / CHECKSUMS_FILE}: {what}; {EXPECTED}"


FILES = {CHECKSUMS_FILE: "{path}: not valid JSON", "params.json": "params.json: not valid JSON",
         "vocab.json": "vocab.json: not valid JSON"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(FILES)), cut=st.floats(0.0, 0.999), drop=st.integers(1, 3))
def test_any_truncated_json_file_of_a_release_is_named_as_not_valid_json_where_it_breaks(release, tmp_path_factory, capsys,
                                                                                     name, cut, drop):
    """The kind: a JSON file of a release (checksums.json, params.json, vocab.json) cut short
    anywhere (or missing its last characters) makes `data check` exit 1 with exactly one line that
    names it and says "not valid JSON" at the line and column json itself gives."""
    folder = tmp_path_factory.mktemp("cut") / "data"
    shutil.copytree(release, folder)
    path = folder / name
    text = path.read_text().rstrip()
    truncated = text[: min(int(len(text) * cut), len(text) - drop)]
    path.write_text(truncated)
    try:
        json.loads(truncated)
    except json.JSONDecodeError as err:
        where = "the file is empty" if not truncated.strip() else f"line {err.lineno}, column {err.colno}: "
    capsys.readouterr()
    assert data_main(["check", str(folder)]) == 1
    lines = _lines(capsys)
    assert len(lines) == 1, lines
    assert FILES[name].format(path=path) + f" ({where}" in lines[0]
