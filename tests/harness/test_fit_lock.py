"""One fit per run folder (issue 26, item 8): two `fit --ckpt_path last` resuming one run both ran and
interleaved their logs. The second is now refused in one line naming the holder (exit 1), before it
reads or writes anything, and a killed holder's lock goes with it. A stray step checkpoint newer
than last.ckpt (a kill between Lightning's two saves, item 9) is resumed from, saying so, and
replaced by the resumed run's next save: no stray file is left."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import holding_fit_folder, main, readable_resume
from swar_bench.runtime.checkpoint_io import load_checkpoint
from swar_bench.utils.locks import LOCK_NAME, FolderLockedError, folder_lock
from tests.harness.processes import child

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
SMALL = ["--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
         "--data.batch_size=2", "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2",
         "--model.tbptt_steps=1000", "--trainer.val_check_interval=2", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false", "--checkpoint.every_n_train_steps=2"]


def _argv(tmp_path, *extra):
    return ["fit", "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            *SMALL, *extra]


def _lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def _run_folder(tmp_path) -> Path:
    (folder,) = (tmp_path / "runs" / "quickstart" / "GRU").iterdir()
    return folder


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def _line_from(proc: subprocess.Popen, start: str, within_s: float = 300.0) -> str:
    """The first line of ``proc``'s stdout that starts with ``start`` (an event the test waits for,
    bounded by ``within_s``); fails when the process ends first."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stdout.readline()
        if line == "":
            pytest.fail(f"the first fit ended (exit {proc.wait()}) before saying {start!r}: {proc.stderr.read()[-2000:]}")
        if line.startswith(start):
            return line
    pytest.fail(f"no {start!r} from the first fit within {within_s:g} s")


def test_two_fits_resuming_one_run_folder_the_second_is_refused_naming_the_first(tmp_path, capsys):
    # the reported input: two `fit --ckpt_path last` into one run folder, as two real processes
    assert main(_argv(tmp_path, "--trainer.max_steps=2")) == 0
    folder = _run_folder(tmp_path)
    _lines(capsys)
    resume = [sys.executable, "-m", "swar_bench.cli", *_argv(tmp_path, "--ckpt_path=last", "--trainer.max_steps=100000",
                                                             "--trainer.max_time=00:00:05:00")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with child(resume) as first:
        # the run folder is locked before the run starts (parse time); its announce line comes after
        _line_from(first, "swar-bench fit:")
        holder = (folder / LOCK_NAME).read_text()
        assert holder.startswith(f"pid {first.pid} on ")
        before = {name for name in _files(folder) if "tfevents" in name}
        second = subprocess.run(resume, capture_output=True, text=True, timeout=300, env=env, check=False)
        assert second.returncode == 1, second.stderr[-2000:]
        lines = [ln for ln in second.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, lines
        line = lines[0]
        assert line.startswith(f"swar-bench: error: {folder} is in use by pid {first.pid} on ")
        assert "expected one writer at a time" in line
        after = {name for name in _files(folder) if "tfevents" in name}
        assert all(f".{first.pid}." in name for name in after - before)  # no log of the second one
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    # a killed holder leaves no lock behind: the folder can be taken at once
    with folder_lock(folder, "test"):
        pass


def test_a_fit_into_a_locked_run_folder_is_refused_in_one_line_and_writes_nothing(tmp_path, capsys):
    assert main(_argv(tmp_path, "--trainer.max_steps=2")) == 0
    folder = _run_folder(tmp_path)
    _lines(capsys)
    with folder_lock(folder, "swar-bench fit into x"):
        before = _files(folder)
        assert main(_argv(tmp_path, "--ckpt_path=last", "--trainer.max_steps=4")) == 1
        (line,) = _lines(capsys)
        assert line.startswith(f"swar-bench: error: {folder} is in use by pid {os.getpid()} on ")
        assert _files(folder) == before


@pytest.mark.parametrize("layout", ["forced version", "dirpath"])
def test_a_fixed_folder_is_locked_for_the_whole_fit(tmp_path, capsys, layout):
    extra = {"forced version": ["--trainer.logger.init_args.version=0"],
             "dirpath": [f"--checkpoint.dirpath={tmp_path / 'ckpt'}"]}[layout]
    locked = {"forced version": tmp_path / "runs" / "quickstart" / "GRU" / "version_0", "dirpath": tmp_path / "ckpt"}[layout]
    seen = []

    from lightning.pytorch.callbacks import Callback

    class Observe(Callback):
        def on_train_start(self, trainer, pl_module):
            try:
                with folder_lock(locked, "probe"):
                    seen.append("free")
            except FolderLockedError as err:
                seen.append(str(err))

    import swar_bench.lightning_cli as lc

    original = lc.SwarBenchCLI.instantiate_trainer

    def instantiate_trainer(self, **kwargs):
        trainer = original(self, **kwargs)
        trainer.callbacks.append(Observe())
        return trainer

    lc.SwarBenchCLI.instantiate_trainer = instantiate_trainer
    try:
        assert main(_argv(tmp_path, *extra, "--ckpt_path=last", "--trainer.max_steps=2")) == 0
    finally:
        lc.SwarBenchCLI.instantiate_trainer = original
    assert len(seen) == 1 and seen[0].startswith(f"{locked} is in use by pid {os.getpid()}"), seen
    with folder_lock(locked, "after"):  # released at the end of the fit
        pass


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.text(st.characters(min_codepoint=48, max_codepoint=122, blacklist_characters="\\:;<>=?@[]^`"),
                              min_size=1, max_size=8), min_size=1, max_size=3),
       exists=st.booleans(), stray=st.integers(0, 3), written=st.booleans())
def test_one_holder_per_fit_folder(tmp_path, parts, exists, stray, written):
    """The kind: whatever the folder (existing or not, nested), while a fit holds it a second is
    refused naming the first; the holder's leftover temporary checkpoints are removed; the lock is
    free afterwards, and a folder the lock created and the run left empty is gone."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        folder = Path(base, *parts)
        if exists:
            folder.mkdir(parents=True)
        ckpts = folder / "checkpoints"
        if exists and stray:
            ckpts.mkdir()
            for i in range(stray):
                (ckpts / f".tmp-{i}abclast.ckpt").write_bytes(b"half")
            (ckpts / "last.ckpt").write_bytes(b"kept")
        with holding_fit_folder(str(folder), str(ckpts)):
            refused = pytest.raises(FolderLockedError, match="^" + re.escape(f"{folder} is in use by pid {os.getpid()} on "))
            with refused, holding_fit_folder(str(folder), str(ckpts)):
                pytest.fail("a second holder got the folder")
            if written:
                (folder / "hparams.yaml").write_text("x: 1\n")
        if exists and stray:
            assert sorted(p.name for p in ckpts.iterdir()) == ["last.ckpt"]
        assert folder.is_dir() == (exists or written)
        if not exists and not written:
            assert list(Path(base).iterdir()) == []
        with folder_lock(folder, "after"):
            pass


@pytest.mark.parametrize("kill", ["between the two saves", "before the first last.ckpt"])
def test_a_step_checkpoint_newer_than_last_is_resumed_and_replaced(tmp_path, capsys, kill):
    # The reported input: a kill between `epoch=0-step=4.ckpt` and `last.ckpt` (Lightning's order)
    # leaves last.ckpt at step 2 beside the step-4 checkpoint, built here from two real fits.
    assert main(_argv(tmp_path, "--trainer.max_steps=2")) == 0
    checkpoints = _run_folder(tmp_path) / "checkpoints"
    last = checkpoints / "last.ckpt"
    kept = tmp_path / "last-at-step-2.ckpt"
    shutil.copy2(last, kept)
    assert main(_argv(tmp_path, "--ckpt_path=last", "--trainer.max_steps=4")) == 0
    assert sorted(p.name for p in checkpoints.iterdir()) == ["epoch=0-step=4.ckpt", "last.ckpt"]
    if kill == "between the two saves":
        shutil.copy2(kept, last)
    else:
        last.unlink()
    step4 = checkpoints / "epoch=0-step=4.ckpt"
    os.utime(step4)  # newer than last.ckpt, as after the kill
    _lines(capsys)
    assert main(_argv(tmp_path, "--ckpt_path=last", "--trainer.max_steps=6")) == 0
    lines = _lines(capsys)
    assert not any("starting from scratch" in ln for ln in lines), lines
    if kill == "between the two saves":
        notice = [ln for ln in lines if "is newer than" in ln]
        expected = (f"swar-bench fit: {step4} (global step 4) is newer than {last} (global step 2), left by a run "
                    f"stopped between its two saves; resuming from {step4}")
        assert notice == [expected], lines
    assert load_checkpoint(last)["global_step"] == 6
    assert load_checkpoint(checkpoints / "epoch=0-step=6.ckpt")["global_step"] == 6
    # resumed from step 4 (not 2: the first two steps of this fit are the 5th and 6th), its save
    # completed over last.ckpt; the step-6 checkpoint replaced the step-4 one: nothing stray is left
    assert sorted(p.name for p in checkpoints.iterdir()) == ["epoch=0-step=6.ckpt", "last.ckpt"]
    assert len(list((tmp_path / "runs" / "quickstart" / "GRU").iterdir())) == 1  # the same run folder


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(0, 50), min_size=0, max_size=4, unique=True), cut=st.sets(st.integers(0, 3)),
       last_step=st.integers(0, 50), last_cut=st.booleans())
def test_resume_is_the_most_progress_of_the_folder_last_on_a_tie(tmp_path, capsys, steps, cut, last_step, last_cut):
    """The kind: ``--ckpt_path last`` resumes the readable checkpoint of the folder with the most
    recorded progress, last.ckpt on a tie, with one line exactly when it is not last.ckpt."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        for i, step in enumerate(steps):
            path = Path(folder, f"epoch=0-step={step}.ckpt")
            torch.save({"global_step": step, "state_dict": {}}, path)
            if i in cut:
                path.write_bytes(path.read_bytes()[:50])
        last = Path(folder, "last.ckpt")
        torch.save({"global_step": last_step, "state_dict": {}}, last)
        if last_cut:
            last.write_bytes(last.read_bytes()[:50])
        readable = {s: str(Path(folder, f"epoch=0-step={s}.ckpt")) for i, s in enumerate(steps) if i not in cut}
        if not last_cut:
            readable = {**readable, **({last_step: str(last)} if last_step >= max(readable, default=-1) else {})}
        capsys.readouterr()
        if not readable:
            with pytest.raises(ValueError, match=r"cannot be read .* no other checkpoint beside it can"):
                readable_resume(str(last), "fit")
            return
        expected = readable[max(readable)]
        assert readable_resume(str(last), "fit") == expected
        err = capsys.readouterr().err.splitlines()
        assert len(err) == (0 if expected == str(last) else 1)
        if err:
            assert f"resuming from {expected}" in err[0]
