"""The fresh-user faults of `swar-bench study`: two runs of one study at once, a report that cannot be
written, --out and study-file errors without "expected", run folders left by failed or stopped fits."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import runner as runner_module
from swar_bench.study.attempts import ATTEMPT_FILE, drop_unresumable
from swar_bench.study.cli import main
from swar_bench.study.paths import holding_study, write_whole
from swar_bench.study.spec import StudyError, load_study
from swar_bench.utils.locks import FolderLockedError
from tests.study.test_study_cli import _study

ROOT = Path(__file__).resolve().parents[2]
RUN = "GRU_tiny_lr0.001_seed0"
ONE_RUN = "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\nselection_seeds: 1\nseeds: 1\n"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _error(capsys, *argv: str) -> tuple[int, str]:
    """``swar-bench study ARGV`` in this process: (exit status, its stderr)."""
    status = main(list(argv))
    return status, capsys.readouterr().err


# ----------------------------------------------------------------- 1. one `study run` of a study at a time

HOLDER = """import sys
from swar_bench.study import runner
runner.SWAR_BENCH = [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"]  # a fit that waits
from swar_bench.study.cli import main
sys.exit(main(["run", sys.argv[1], "--jobs", "1"]))
"""


def test_a_second_run_of_a_study_is_refused_while_the_first_runs(tmp_path):
    """The reported fault: a second `study run` emptied the first's live run folder. Now, while a
    first run's fit runs (its marker is there), a second is refused in one line naming the holder,
    exit 1, and touches nothing; `study status` still reads the study."""
    study = _study(tmp_path, ONE_RUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    first = subprocess.Popen([sys.executable, "-c", HOLDER, str(study)], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    marker = tmp_path / "runs" / f"{RUN}.running"
    try:
        while not marker.exists():  # the event itself, polled while the first run lives
            try:
                first.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"the first run ended (exit {first.returncode}): {first.stdout.read()}")
        attempt = (tmp_path / "runs" / RUN / ATTEMPT_FILE).read_text()
        second = subprocess.run([sys.executable, "-m", "swar_bench.cli", "study", "run", str(study)], check=False, cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 1, second.stderr
        assert second.stderr == (
            f"swar-bench study run: error: {tmp_path / 'runs'} is in use by pid {first.pid} on {socket.gethostname()}, "
            f"swar-bench study run {study} since {second.stderr.split(' since ')[1].split(';')[0]}; expected one "
            "writer at a time: wait for it to end, or write into another folder\n"
        )
        assert marker.exists() and (tmp_path / "runs" / RUN / ATTEMPT_FILE).read_text() == attempt  # untouched
        status = subprocess.run([sys.executable, "-m", "swar_bench.cli", "study", "status", str(study)], check=False, cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=300)
        assert re.search(rf"fit {RUN}\s+running", status.stdout) and status.stderr == "", status.stdout + status.stderr
        first.stdin.close()  # the fit ends (exit 3: a failure)
        assert first.wait(timeout=300) == 1
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # the failed fit left no run folder (no checkpoint), its log stays beside it
    assert not (tmp_path / "runs" / RUN).exists() and (tmp_path / "runs" / f"{RUN}.fit.log").is_file()


folder_spelling = st.sampled_from(["{d}", "{d}/", "{d}/.", "{d}/../{name}"])


@SETTINGS
@given(out=folder_spelling, records=folder_spelling, same=st.booleans(),
       name=st.from_regex(r"[a-z][a-z0-9_.-]{0,12}", fullmatch=True))
def test_any_spelling_of_a_locked_study_folder_is_refused(tmp_path_factory, out, records, same, name):
    """Whatever the spelling of ``out`` and ``records`` (one folder for both, a trailing '/', a
    '..' detour), a study's folders lock once (no self-conflict) and a second holder is refused
    in one line naming the folder and this process."""
    tmp = tmp_path_factory.mktemp("lock")
    first = [out.format(d=tmp / name, name=name), records.format(d=tmp / (name if same else name + "_r"), name=name
                                                                 if same else name + "_r")]
    with holding_study(first, "swar-bench study run s.yaml"):
        for folder in first:
            with pytest.raises(FolderLockedError) as err, holding_study([folder], "swar-bench study run s.yaml"):
                pass
            assert f"is in use by pid {os.getpid()} on " in str(err.value) and "\n" not in str(err.value)
            assert "expected one writer at a time" in str(err.value)
    with holding_study(first, "swar-bench study run s.yaml"):  # released when the block ended
        pass


# ----------------------------------------------------------------- 2. a report written whole or not at all

def test_a_report_that_cannot_be_written_is_one_line_and_writes_nothing(tmp_path, capsys):
    study = str(_study(tmp_path, ONE_RUN))
    (tmp_path / "afile").write_text("x")
    (tmp_path / "D" / "tiny.md").mkdir(parents=True)
    status, err = _error(capsys, "report", study, "--out", str(tmp_path / "afile" / "sub"))
    assert (status, err) == (2, (f"swar-bench study report: error: --out {tmp_path}/afile/sub: {tmp_path}/afile is a file; "
                                "expected a folder (or a path to create one) for the report's tables and figures\n"))
    status, err = _error(capsys, "report", study, "--out", str(tmp_path / "D"))
    assert (status, err) == (2, (f"swar-bench study report: error: --out {tmp_path}/D: {tmp_path}/D/tiny.md is a folder; "
                                "expected a file to replace, or nothing, at that name for the report's tables and "
                                "figures\n"))
    assert sorted(p.name for p in (tmp_path / "D").rglob("*")) == ["tiny.md"]  # no figures, no temporary folder
    if sys.platform == "linux":
        status, err = _error(capsys, "report", study, "--out", "/proc/xx")
        assert status == 2 and err.count("\n") == 1 and not os.path.exists("/proc/xx")
        assert err.startswith("swar-bench study report: error: --out /proc/xx: /proc cannot be written (")
        assert err.endswith("); expected a writable folder for the report's tables and figures\n")


@SETTINGS
@given(files=st.lists(st.sampled_from(["r.md", "r.json", "figures/a.png", "figures/b.png", "x/y/z.txt"]),
                      min_size=1, max_size=5, unique=True),
       obstacle=st.sampled_from([None, "r.md/", "figures", "figures/a.png/", "x/y", "x"]),
       data=st.binary(max_size=64))
def test_write_whole_writes_every_file_or_none(tmp_path_factory, files, obstacle, data):
    """Any set of report files and any obstacle (a folder at a file's name, a file at a folder's
    name): either every file is there with its bytes, or one line naming the obstacle, "expected",
    and the tree is as before (no temporary folder, no file)."""
    out = tmp_path_factory.mktemp("out")
    if obstacle is not None:
        path = out / obstacle.rstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir() if obstacle.endswith("/") else path.write_text("keep")
    before = {p: (p.read_bytes() if p.is_file() else None) for p in out.rglob("*")}
    contents = {rel: data + rel.encode() for rel in files}
    blocked = obstacle is not None and any(
        rel == obstacle.rstrip("/") and obstacle.endswith("/")
        or (not obstacle.endswith("/") and rel.startswith(obstacle + "/")) for rel in files)
    try:
        written = write_whole(out, contents, "the report")
    except StudyError as err:
        assert blocked and "\n" not in str(err) and "expected" in str(err) and str(out / obstacle.rstrip("/")) in str(err)
        assert {p: (p.read_bytes() if p.is_file() else None) for p in out.rglob("*")} == before
    else:
        assert not blocked and written == [out / rel for rel in files]
        assert all((out / rel).read_bytes() == contents[rel] for rel in files)
        assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


# ----------------------------------------------------------------- 3. every study-file and --out error says what was expected

def test_study_file_and_out_errors_say_what_was_expected(tmp_path, capsys):
    study = str(_study(tmp_path, ONE_RUN))
    (tmp_path / "afile").write_text("x")
    (tmp_path / "bad.yaml").write_text("name: x\n  bad: [\nfoo: 1\n")
    expected = "expected a study file in YAML, such as configs/studies/frontier.yaml"
    assert _error(capsys, "site", study, "--out", str(tmp_path / "afile" / "sub")) == (
        2, (f"swar-bench study site: error: --out {tmp_path}/afile/sub: {tmp_path}/afile is a file; expected a folder "
           "(or a path to create one) for the site\n"))
    assert _error(capsys, "status", str(tmp_path)) == (
        2, f"swar-bench study status: error: study file '{tmp_path}' is a folder; {expected}\n")
    assert _error(capsys, "status", str(tmp_path / "bad.yaml")) == (
        2, (f"swar-bench study status: error: study file '{tmp_path}/bad.yaml' is not valid YAML at line 2 (mapping values "
           f"are not allowed here); {expected}\n"))


@SETTINGS
@given(kind=st.sampled_from(["missing", "folder", "yaml", "bytes", "out-file", "out-under-file"]),
       command=st.sampled_from(["run", "status", "report", "site"]),
       name=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_. -]{0,15}", fullmatch=True).filter(
           lambda n: n not in ("study.yaml", "base.yaml", "records", "runs")))
def test_every_study_file_and_out_error_is_one_line_with_expected(tmp_path_factory, capsys, kind, command, name):
    """A study file missing, a folder, not YAML or not UTF-8, and an --out that is a file or lies
    under one: exit 2, one line naming the path and what was expected, nothing created."""
    tmp = tmp_path_factory.mktemp("e")
    study = _study(tmp, ONE_RUN)
    target = tmp / name
    argv = [command, str(target)]
    if kind == "folder":
        target.mkdir()
    elif kind == "yaml":
        target.write_text("a: [\n")
    elif kind == "bytes":
        target.write_bytes(b"name: \xff\xfe\n")
    elif kind.startswith("out"):
        if command not in ("report", "site"):
            return
        target.write_text("x")
        argv = [command, str(study), "--out", str(target if kind == "out-file" else target / "sub")]
    before = sorted(tmp.rglob("*"))
    status, err = _error(capsys, *argv)
    assert status == 2 and err.count("\n") == 1 and "expected" in err and str(target) in err, err
    assert sorted(tmp.rglob("*")) == before


# ----------------------------------------------------------------- 4. no run folder without a checkpoint after a failure or a stop

FAKE_FIT = """import os, sys
args = sys.argv[1:]
folder = next(a.split("=", 1)[1] for a in args if a.startswith("--checkpoint.dirpath="))
if os.environ.get("FAKE_CHECKPOINT"):
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, "last.ckpt"), "wb").close()
if os.environ.get("FAKE_STOP"):  # a fit stopped by Ctrl-C
    print("swar-bench: interrupted")
    sys.exit(130)
print("swar-bench fit: error: --model.mechanism.init_args.d_model=x is invalid; expected an integer")
sys.exit(2)
"""


@pytest.mark.parametrize("stopped", [False, True])
@pytest.mark.parametrize("checkpoint", [False, True])
def test_a_failed_or_stopped_fit_leaves_no_folder_without_a_checkpoint(tmp_path, monkeypatch, checkpoint, stopped):
    """The reported leftovers: a fit that fails at once (exit 2) left an empty run folder, an
    interrupted one a folder holding only attempt.json. Now both go (their logs stay beside
    them); a folder with a checkpoint stays for the resume. A fit that failed gets no retry."""
    (tmp_path / "fake_fit.py").write_text(FAKE_FIT)
    monkeypatch.setattr(runner_module, "SWAR_BENCH", [sys.executable, str(tmp_path / "fake_fit.py")])
    if checkpoint:
        monkeypatch.setenv("FAKE_CHECKPOINT", "1")
    if stopped:
        monkeypatch.setenv("FAKE_STOP", "1")
    spec = load_study(_study(tmp_path, ONE_RUN))
    assert runner_module.Runner(spec, jobs=1, log=lambda line: None).run() == (130 if stopped else 2)  # 2: refused
    runs = tmp_path / "runs"
    assert (runs / f"{RUN}.fit.log").is_file()
    assert (runs / RUN).exists() == checkpoint
    assert not (runs / f"{RUN}_retry.fit.log").exists()
    if stopped:
        assert (runs / f"{RUN}.fit.log").read_text() == "swar-bench: interrupted\n"
        if checkpoint:
            assert (runs / RUN / ATTEMPT_FILE).is_file()  # the stopped fit resumes


@SETTINGS
@given(files=st.lists(st.sampled_from(["attempt.json", "version_0/events", "checkpoints/x.txt",
                                       "checkpoints/last.ckpt", "checkpoints/hpc_ckpt_1.ckpt", "x.ckpt"]),
                      max_size=4, unique=True))
def test_a_run_folder_is_dropped_exactly_when_it_holds_no_checkpoint(tmp_path_factory, files):
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    run_dir.mkdir()
    for rel in files:
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text("x")
    (run_dir.parent / "run.fit.log").write_text("log")
    has_checkpoint = any(rel.startswith("checkpoints/") and rel.endswith(".ckpt") for rel in files)
    assert drop_unresumable(run_dir) is (not has_checkpoint)
    assert run_dir.exists() is has_checkpoint and (run_dir.parent / "run.fit.log").read_text() == "log"


def test_refused_add_leaves_no_folder_it_made(tmp_path, capsys):
    # Reported: `study run S --add nosuchmod.Foo` on a fresh study refused in one line but left
    # its out/ and records/ folders behind, each holding only the lock file.
    study = _study(tmp_path)
    assert main(["run", str(study), "--add", "nosuchmod.Foo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nosuchmod.Foo" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "records").exists()
    # the same with the folders deeper in a fresh tree: the parents made on the way go too
    text = study.read_text().replace(f"records: {tmp_path / 'records'}", f"records: {tmp_path / 'a' / 'b' / 'records'}")
    study.write_text(text.replace(f"out: {tmp_path / 'runs'}", f"out: {tmp_path / 'a' / 'c' / 'runs'}"))
    assert main(["run", str(study), "--add", "nosuchmod.Foo"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "a").exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pre=st.lists(st.tuples(st.sampled_from(["empty", "holds", "absent"]), st.integers(0, 2), st.integers(0, 2)),
                    min_size=1, max_size=3),
       shared=st.booleans(), fails=st.booleans(), writes=st.booleans())
def test_holding_study_removes_only_what_it_made_when_the_block_fails(tmp_path, pre, shared, fails, writes):
    """The kind: a refused `study run` leaves behind no folder it created, parents it created on the
    way included (``records: a/b/c`` on a fresh tree), and nothing it did not. Each folder lies
    ``depth`` levels below the case's folder, of which the first ``kept`` exist (with ``shared``,
    the folders share those parents); the leaf is absent, empty or holds a record."""
    base = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    base.mkdir()
    folders = []
    for i, (state, depth, kept) in enumerate(pre):
        parents = [f"p{j}" if shared else f"p{i}_{j}" for j in range(depth)]
        for j in range(min(kept, depth)):
            (base.joinpath(*parents[: j + 1])).mkdir(exist_ok=True)
        folder = base.joinpath(*parents, f"f{i}")
        if state != "absent" and kept >= depth:
            folder.mkdir()
            if state == "holds":
                (folder / "record.json").write_text("{}")
        folders.append(folder)
    before = {p: p.read_bytes() if p.is_file() else None for p in base.rglob("*")}
    try:
        with holding_study(folders, "swar-bench study run s.yaml"):
            assert all(f.is_dir() for f in folders)
            if writes:  # the run got as far as a record in every folder
                for f in folders:
                    (f / "made.json").write_text("[]")
            if fails:
                raise StudyError("refused")
    except StudyError:
        pass
    from swar_bench.utils.locks import LOCK_NAME

    after = {p: p.read_bytes() if p.is_file() else None for p in base.rglob("*") if p.name != LOCK_NAME}
    assert {p: v for p, v in after.items() if p in before} == before  # nothing it did not make is touched
    if fails and not writes:
        assert set(after) == set(before)  # every folder it made is gone, parents included
    else:
        assert all(f.is_dir() for f in folders)
    if writes:
        assert all((f / "made.json").read_text() == "[]" for f in folders)
