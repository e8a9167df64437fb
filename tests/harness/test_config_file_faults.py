"""A config file that cannot be read as YAML is named with the option that gave it and what was
expected, for every subcommand (fault: `fit --config` of a non-UTF-8 file said only "'utf-8' codec
can't decode byte 0xff in position 0: invalid start byte", naming no file)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.harness import checks
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line

EXPECTED = "expected a YAML mapping of options such as configs/quickstart.yaml"


def _refused(capsys, argv: list[str]) -> str:
    if argv[0] == "demo":
        from swar_bench.demo import main as demo_main

        code = demo_main(argv[1:])
    else:
        code = main(argv)
    line = one_error_line(capsys, "swar-bench")
    assert code == 2
    return line


@pytest.mark.parametrize("command", ["fit", "test", "demo"])
def test_the_reported_non_utf8_config_is_named(tmp_path, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe")
    prog = "swar-bench demo" if command == "demo" else "swar-bench"
    assert _refused(capsys, [command, "--config", "bad.yaml"]) == (
        f"{prog}: error: --config=bad.yaml: not UTF-8 text (byte 0xff at position 0); {EXPECTED}"
    )
    assert sorted(os.listdir(tmp_path)) == ["bad.yaml"]  # nothing written


def test_a_folder_given_as_config_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    assert _refused(capsys, ["fit", "--config=configs"]) == (
        f"swar-bench: error: --config=configs: a folder, not a file; {EXPECTED} in a file"
    )


def test_a_missing_config_and_a_dangling_link_are_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _refused(capsys, ["validate", "--config", "missing.yaml"]) == (
        f"swar-bench: error: --config=missing.yaml: no such file; {EXPECTED} in a file"
    )
    os.symlink("gone.yaml", "link.yaml")
    assert _refused(capsys, ["fit", "--config", "link.yaml"]) == (
        f"swar-bench: error: --config=link.yaml: a link to gone.yaml, which does not exist; {EXPECTED} in a file"
    )


def test_an_unreadable_config_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "locked.yaml").write_text("trainer: {max_steps: 2}\n")

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(checks, "open", denied, raising=False)  # root reads a chmod 000 file
    assert _refused(capsys, ["predict", "--config", "locked.yaml"]) == (
        f"swar-bench: error: --config=locked.yaml: cannot be read (Permission denied); {EXPECTED}"
    )


def test_an_option_group_file_is_checked_as_a_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trainer.yaml").write_text("max_steps: [2\n")
    assert _refused(capsys, ["fit", "--config", QUICKSTART, "--trainer", "trainer.yaml"]) == (
        "swar-bench: error: --trainer=trainer.yaml: not valid YAML (expected ',' or ']', but got '<stream end>' at "
        "line 2, column 1); expected a YAML mapping of trainer options"
    )


def test_an_inline_mapping_is_still_a_config():
    assert checks.config_file_problem("{trainer: {max_steps: 2}}", "x", "y") is None


NOT_UTF8 = st.binary(min_size=1, max_size=24).filter(lambda b: not _decodes(b))


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


KINDS = st.one_of(
    NOT_UTF8.map(lambda b: ("bytes", b)),
    st.sampled_from([("folder", None), ("missing", None), ("link", None), ("broken", b"a: [1,\n"),
                     ("empty", b""), ("list", b"- a\n")]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=KINDS, command=st.sampled_from(["fit", "validate", "test", "predict", "demo"]),
       flag=st.sampled_from(["--config", "--trainer", "--data"]), joined=st.booleans())
def test_any_unreadable_config_file_is_one_line_naming_it(tmp_path, capsys, monkeypatch, kind, command, flag, joined):
    """Whatever makes the file unreadable as a YAML mapping, for any subcommand and any option that
    loads a file: one line naming the option and the file and what was expected, exit 2,
    nothing written."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # tmp_path is shared by every example, and hypothesis replays some
    monkeypatch.chdir(work)
    what, data = kind
    name = "c.yaml"
    if what == "folder":
        os.mkdir(name)
    elif what == "link":
        os.symlink("nowhere.yaml", name)
    elif what != "missing":
        (work / name).write_bytes(data)
    before = sorted(os.listdir(work))
    given_file = [f"{flag}={name}"] if joined else [flag, name]
    extra = [] if flag == "--config" or command == "demo" else ["--config", QUICKSTART]
    line = _refused(capsys, [command, *extra, *given_file])
    prog = "swar-bench demo" if command == "demo" else "swar-bench"
    assert line.startswith(f"{prog}: error: {flag}={name}: "), line
    assert "; expected " in line, line
    assert sorted(os.listdir(work)) == before


def test_an_example_replayed_on_the_same_tmp_path_runs_again(tmp_path, capsys, monkeypatch):
    """Hypothesis replays examples (a failure's shrink, its database) inside one function-scoped
    tmp_path: a work folder named after the example made the replay fail with FileExistsError."""
    inner = test_any_unreadable_config_file_is_one_line_naming_it.hypothesis.inner_test
    for _ in range(2):
        inner(tmp_path, capsys, monkeypatch, ("bytes", b"\xb8g\xf4\xdd\x1f\xae\xbc\x8b"), "fit", "--config", False)
