"""A folder is a release only when complete: `data verify` / `data check` name what is missing
and exit 1; rerunning the `generate` that was cut short completes it, keeping finished files."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks import hub_io
from swar_bench.tasks.cli import main
from swar_bench.tasks.hub_io import release_problems, split_path, write_dataset

INCOMPLETE = "is not a complete release; missing: "


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def _missing_line(err: str) -> str:
    (line,) = [ln for ln in err.splitlines() if INCOMPLETE in ln]
    return line.split(INCOMPLETE, 1)[1].split(" (a `swar-bench data generate` cut short?")[0]


def test_the_issues_folder_names_readme_and_vocab(tmp_path, capsys):
    # What `timeout -s INT 3 swar-bench data generate --out data/intr` left before this fix:
    # n4096/validation and params.json, no README.md, no vocab.json.
    out = tmp_path / "intr"
    write_dataset(out, ["n4096"], ["validation"], num_examples=2, progress=False)
    (out / "README.md").unlink()
    (out / "vocab.json").unlink()
    for command in ("verify", "check"):
        assert main([command, str(out)]) == 1, command
        assert _missing_line(capsys.readouterr().err) == (
            "README.md (its configs list is what datasets.load_dataset reads); vocab.json"
        )


def _wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 240.0) -> None:
    """Return once ``path`` exists; fail if ``proc`` ends first (the event never came)."""
    deadline = time.monotonic() + limit_s  # a bound on a hang, not a timing assumption
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_generate_stopped_by_ctrl_c_is_named_then_completed_by_a_rerun(tmp_path, capsys):
    out = tmp_path / "intr"
    argv = ["generate", "--out", str(out), "--configs", "n32,n16384", "--splits", "validation",
            "--num-examples", "150", "--no-progress"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "swar_bench.cli", "data", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = Path(split_path(out, "n32", "validation"))
    _wait_for(first, proc)  # n16384/validation is being generated now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "swar-bench data generate: interrupted"
    assert not Path(split_path(out, "n16384", "validation")).exists()
    assert not list(out.glob("**/.tmp-*"))

    for command in ("verify", "check"):
        assert main([command, str(out)]) == 1, command
        assert _missing_line(capsys.readouterr().err) == "the split files README.md lists: n16384/validation"
    with pytest.raises(Exception, match="n16384"):  # the README lists a file that is not there
        datasets.load_dataset(str(out), "n16384", split="validation")

    inode = first.stat().st_ino
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"wrote 1 parquet file (kept 1 finished by an earlier run), README.md and vocab.json under {out}"
    )
    assert first.stat().st_ino == inode  # not written again
    assert release_problems(out) == []
    assert main(["check", str(out)]) == 0
    assert datasets.load_dataset(str(out), "n16384", split="validation").num_rows == 150


PIECES = ("README.md", "vocab.json", "params.json", "n32/validation", "n32/test", "n64/test",
          "README entry n64/test")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release") / "data"
    write_dataset(folder, ["n32", "n64"], ["validation", "test"], num_examples=2, progress=False)
    return folder


def _remove(folder: Path, piece: str) -> None:
    if piece == "README entry n64/test":
        readme = folder / "README.md"
        if readme.exists():
            text = readme.read_text()
            entry = "  - split: test\n    path: n64/test-00000-of-00001.parquet\n"
            readme.write_text(text.replace(entry, ""))
    elif "/" in piece:
        config, split = piece.split("/")
        os.unlink(split_path(folder, config, split))
    else:
        (folder / piece).unlink()


def _expected(removed: set[str]) -> list[str]:
    out = []
    if "README.md" in removed:
        out.append("README.md (its configs list is what datasets.load_dataset reads)")
    else:
        listed = ["n32/validation", "n32/test", "n64/validation", "n64/test"]
        if "README entry n64/test" in removed:
            listed.remove("n64/test")
        gone = [p for p in listed if p in removed]
        if gone:
            out.append("the split files README.md lists: " + ", ".join(gone))
        if "README entry n64/test" in removed and "n64/test" not in removed:
            out.append("README.md entries for the split files n64/test")
    out += [name for name in ("vocab.json", "params.json") if name in removed]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(removed=st.sets(st.sampled_from(PIECES)))
def test_any_missing_piece_is_named_and_a_rerun_completes_the_folder(release, tmp_path, removed):
    folder = tmp_path / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(release, folder)
    for piece in sorted(removed):  # README entries go before README.md itself is considered
        _remove(folder, piece)
    assert release_problems(folder) == _expected(removed)
    if _expected(removed):
        with pytest.raises(hub_io.DataSourceError, match=re.escape("; ".join(_expected(removed)))):
            hub_io.check_release(folder)
    else:
        hub_io.check_release(folder)

    kept: list[str] = []
    write_dataset(folder, ["n32", "n64"], ["validation", "test"], num_examples=2, progress=False, kept=kept)
    split_files = {"n32/validation", "n32/test", "n64/validation", "n64/test"}
    assert {os.path.relpath(p, folder)[: -len("-00000-of-00001.parquet")] for p in kept} == split_files - removed
    assert release_problems(folder) == []


# The content of a release's metadata files is checked too, not only their presence.

def _release_line(err: str) -> str:
    (line,) = [ln for ln in err.splitlines() if "is not a complete release; " in ln]
    return line.split("is not a complete release; ", 1)[1]


VOCAB_WANT = ("expected the 40 tokens of n_keys=16, n_values=16 (PAD=0 ... v15=39), "
              "as `swar-bench data vocab` writes")


@pytest.mark.parametrize(("name", "text", "fault"), [
    # the reported corrupt vocab.json
    ("vocab.json", "garbage\n",
     "vocab.json: not valid JSON (line 1, column 1: expecting value); " + VOCAB_WANT),
    ("vocab.json", '{"PAD": 0}\n', "vocab.json: 1 token(s), lacks 39 token(s) (BOS, EOS, PK, ...); " + VOCAB_WANT),
    # a params.json that is not valid parameters
    ("params.json", "x\n", ("params.json: not valid JSON (line 1, column 1: expecting value); expected the task's "
                             "parameters as `swar-bench data generate` writes them")),
    ("params.json", '{"w": -3}\n', "params.json: PasskeySwarParams.w=-3: expected an integer >= 1"),
])
def test_a_corrupt_metadata_file_is_named_with_exit_1(release, tmp_path, capsys, name, text, fault):
    folder = tmp_path / "case"
    shutil.copytree(release, folder)
    (folder / name).write_text(text)
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 1, command
        assert _release_line(capsys.readouterr().err) == fault


def test_a_folder_whose_only_split_file_is_gone_is_an_incomplete_release_exit_1(tmp_path, capsys):
    # Reported: exit 2 "no parquet file of the requested configs/splits" here, exit 1 when one
    # of several split files is gone.
    folder = tmp_path / "one"
    write_dataset(folder, ["n32"], ["validation"], num_examples=2, progress=False)
    os.unlink(split_path(folder, "n32", "validation"))
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 1, command
        assert _missing_line(capsys.readouterr().err) == "the split files README.md lists: n32/validation"
    os.rmdir(folder / "n32")  # the config folder gone as well
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 1, command
        assert _missing_line(capsys.readouterr().err) == "the split files README.md lists: n32/validation"


def test_a_folder_that_is_no_release_is_still_a_usage_error(tmp_path, capsys):
    (tmp_path / "n32").mkdir()
    for command in ("verify", "check"):
        assert main([command, str(tmp_path)]) == 2, command
        assert "error: " in capsys.readouterr().err


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 50) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _vocab_texts(draw):
    """vocab.json contents: the right one, edited ones (a token dropped, added, an id moved),
    any JSON value, or text that is no JSON."""
    good = hub_io.vocab().to_dict()
    kind = draw(st.sampled_from(["good", "drop", "add", "move", "json", "text"]))
    if kind == "good":
        return json.dumps(good), True
    if kind == "drop":
        d = dict(good)
        del d[draw(st.sampled_from(sorted(good)))]
        return json.dumps(d), False
    if kind == "add":
        return json.dumps({**good, draw(st.text(min_size=1, max_size=4).filter(lambda t: t not in good)): 40}), False
    if kind == "move":
        tok = draw(st.sampled_from(sorted(good)))
        new = draw(st.integers(-2, 60).filter(lambda i: i != good[tok]))
        return json.dumps({**good, tok: new}), False
    if kind == "json":
        return json.dumps(draw(_JSON)), False
    return draw(st.text(max_size=8).filter(lambda t: not _is_json(t))), False


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(vocab_text=_vocab_texts(), params_value=st.one_of(st.none(), _JSON, st.dictionaries(
    st.sampled_from(["w", "n_keys", "n_values", "p_passkey"]), st.integers(-3, 40), max_size=2)))
def test_metadata_content_is_checked(release, tmp_path, vocab_text, params_value):
    # vocab.json must be the vocabulary of the recorded parameters, params.json valid
    # parameters; a problem is named by its file, and `data check` exits 1.
    text, vocab_ok = vocab_text
    folder = tmp_path / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(release, folder)
    (folder / "vocab.json").write_text(text)
    params_ok, params = True, hub_io.PasskeySwarParams()
    if params_value is not None:
        (folder / "params.json").write_text(json.dumps(params_value))
        try:
            params = hub_io.PasskeySwarParams(**params_value)
        except (TypeError, ValueError):
            params_ok = False
        else:
            params_ok = params == hub_io.PasskeySwarParams()  # else it disagrees with README.md
    problems = release_problems(folder)
    named = {p.split(":", 1)[0] for p in problems}
    assert ("params.json" in named or "README.md" in named) == (not params_ok)
    if params_ok:
        assert ("vocab.json" in named) == (not vocab_ok)
    assert (main(["check", str(folder)]) == 1) == bool(problems)


SPLIT_FILES = ("n32/validation", "n32/test", "n64/validation", "n64/test")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(removed=st.sets(st.sampled_from(SPLIT_FILES), min_size=1), rmdir=st.booleans(),
       command=st.sampled_from(["verify", "check"]))
def test_any_set_of_missing_split_files_exits_1_naming_them(release, tmp_path, capsys, removed, rmdir, command):
    # Whether some or all split files are gone (and their config folders with them), the release
    # problem is reported the same way: exit 1, "missing: the split files README.md lists: ...".
    folder = tmp_path / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(release, folder)
    for piece in removed:
        _remove(folder, piece)
    if rmdir:
        for config in ("n32", "n64"):
            if not any((folder / config).iterdir()):
                (folder / config).rmdir()
    capsys.readouterr()
    assert main([command, str(folder)]) == 1
    named = [p for p in SPLIT_FILES if p in removed]
    assert _missing_line(capsys.readouterr().err) == "the split files README.md lists: " + ", ".join(named)


# A README.md that is there but gives datasets.load_dataset no configs list is a wrong content of
# that file (exit 1, as a corrupt vocab.json), never "missing: README.md".

README_WANT = ("expected a YAML header (between `---` lines at its top) with `configs:` entries of "
               "config_name and data_files, as `swar-bench data generate` writes")


@pytest.mark.parametrize(("text", "why"), [
    ("", "the file is empty"),  # reported
    ("hello world\n", "its first line is not `---`"),  # reported
])
def test_the_reported_readme_without_header_is_named_not_missing(release, tmp_path, capsys, text, why):
    folder = tmp_path / "case"
    shutil.copytree(release, folder)
    (folder / "README.md").write_text(text)
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err and "missing: README.md" not in err
        assert _release_line(err) == f"README.md: no YAML header with a `configs:` list ({why}); {README_WANT}"


def _yaml_block(value) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=False).rstrip("\n")


_NOT_LIST = _JSON.filter(lambda v: v is not None and not isinstance(v, list))


@st.composite
def _broken_readmes(draw):
    """``(README.md text, the fault named after "README.md: ")`` for each kind of README that
    lists no configs: empty or blank, no front matter, a header never closed, invalid YAML, a
    header that is no mapping, one without `configs:`, `configs:` that is not a list, an entry
    that is not a mapping with a config_name."""
    kind = draw(st.sampled_from(["empty", "blank", "no header", "unclosed", "invalid", "not mapping",
                                 "no configs", "configs not list", "bad entry"]))
    body = draw(st.text(alphabet="ab #\n-:", max_size=20))
    no_header = "no YAML header with a `configs:` list"
    if kind == "empty":
        return "", f"{no_header} (the file is empty)"
    if kind == "blank":
        return draw(st.text(alphabet=" \n\t", min_size=1, max_size=5)), f"{no_header} (the file holds only blank space)"
    if kind == "no header":
        first = draw(st.text(alphabet="ab #-:", min_size=1, max_size=8).filter(lambda t: t.strip() and t != "---"))
        return f"{first}\n{body}", f"{no_header} (its first line is not `---`)"
    if kind == "unclosed":
        return "---\n" + body.replace("---", "").replace("-", "") + "\n", f"{no_header} (no `---` line closes the header)"
    if kind == "invalid":
        block = draw(st.sampled_from([": [", "a: b: c", "[1, 2", "configs: [", "key: 'open", "{a: 1"]))
        return f"---\n{block}\n---\n{body}", "its YAML header is not valid YAML ("
    if kind == "not mapping":
        value = draw(st.one_of(st.just(None), st.lists(_JSON, max_size=3), st.integers(), st.text(alphabet="ab", min_size=1, max_size=4)))
        return f"---\n{_yaml_block(value) if value is not None else ''}\n---\n{body}", "its YAML header is "
    if kind == "no configs":
        header = draw(st.dictionaries(st.text(alphabet="abc_", min_size=1, max_size=6), _JSON, max_size=3))
        if draw(st.booleans()):
            header["configs"] = None
        return f"---\n{_yaml_block(header)}\n---\n{body}", "its YAML header has no `configs:` list; "
    if kind == "configs not list":
        return f"---\n{_yaml_block({'configs': draw(_NOT_LIST)})}\n---\n{body}", "its YAML header's `configs:` is "
    entry = draw(st.one_of(_JSON.filter(lambda v: not isinstance(v, dict)),
                           st.dictionaries(st.sampled_from(["data_files", "name"]), _JSON, max_size=2)))
    return f"---\n{_yaml_block({'configs': [entry]})}\n---\n{body}", "entry 1 of its YAML header's `configs:` is "


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(readme=_broken_readmes(), command=st.sampled_from(["verify", "check"]))
def test_any_readme_without_a_configs_list_is_named_with_exit_1(release, tmp_path, capsys, readme, command):
    text, fault = readme
    folder = tmp_path / "case"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(release, folder)
    (folder / "README.md").write_text(text)
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    capsys.readouterr()
    assert main([command, str(folder)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "missing: README.md" not in err
    line = _release_line(err)
    assert line.startswith(f"README.md: {fault}") and line.endswith(README_WANT), (text, line)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == before  # nothing written
    assert (folder / "README.md").read_text() == text
