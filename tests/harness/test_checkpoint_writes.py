"""Checkpoints are written beside their destination and renamed (never through $TMPDIR); a full disk
is exit 1 in one line naming the run folder, with the previous checkpoint intact; `--ckpt_path last`
over a truncated last.ckpt resumes from the newest checkpoint that can be read, saying so."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main, readable_resume
from swar_bench.runtime.checkpoint_io import SafeCheckpointIO, load_checkpoint
from swar_bench.utils.locks import LOCK_NAME

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = ["--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
         "--data.batch_size=2", "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2",
         "--model.tbptt_steps=1000", "--trainer.val_check_interval=2", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]


def _argv(tmp_path, *extra):
    return ["fit", "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            *SMALL, *extra]


def _lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


@pytest.fixture
def other_tmpdir(monkeypatch):
    """$TMPDIR on another file system (/dev/shm, a tmpfs) when there is one; empty at the end."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=base) as folder:
        monkeypatch.setenv("TMPDIR", folder)
        monkeypatch.setattr(tempfile, "tempdir", folder)
        yield Path(folder)
        assert list(Path(folder).iterdir()) == []


def test_a_full_disk_keeps_the_previous_checkpoint_and_names_the_run_folder(tmp_path, capsys, monkeypatch, other_tmpdir):
    folder = tmp_path / "ckpt"
    assert main(_argv(tmp_path, f"--checkpoint.dirpath={folder}", "--trainer.max_steps=2")) == 0
    before = (folder / "last.ckpt").read_bytes()
    _lines(capsys)
    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):  # half the bytes reach the disk, then ENOSPC
        if hasattr(f, "write"):
            f.write(b"\0" * 4096)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    assert main(_argv(tmp_path, f"--checkpoint.dirpath={folder}", "--ckpt_path=last", "--trainer.max_steps=4")) == 1
    lines = _lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("swar-bench: FAILED: No space left on device writing "), lines
    run = tmp_path / "runs" / "quickstart" / "GRU" / "version_1"
    assert f"(run folder {run}" in lines[0] or f"(run folder {folder}" in lines[0], lines[0]
    assert (folder / "last.ckpt").read_bytes() == before  # the previous checkpoint, whole
    # no temporary file left (the fit's folder lock stays: swar_bench.utils.locks)
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".ckpt") and p.name != LOCK_NAME) == []
    assert load_checkpoint(folder / "last.ckpt")["global_step"] == 2


def test_a_write_goes_beside_the_destination_not_through_tmpdir(tmp_path, other_tmpdir, monkeypatch):
    seen = []
    real_replace = os.replace

    def spy(src, dst, *args, **kwargs):
        seen.append((os.fspath(src), os.fspath(dst)))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "run" / "checkpoints" / "last.ckpt"
    SafeCheckpointIO().save_checkpoint({"global_step": 3, "state_dict": {"w": torch.ones(2)}}, target)
    assert load_checkpoint(target)["global_step"] == 3
    assert [(Path(src).parent, Path(dst)) for src, dst in seen] == [(target.parent, target)]


@pytest.mark.parametrize("layout", ["run folder", "forced version", "dirpath"])
def test_a_truncated_last_checkpoint_resumes_from_the_newest_readable_one(tmp_path, capsys, layout):
    extra = {"run folder": [], "forced version": ["--trainer.logger.init_args.version=slurm_1"],
             "dirpath": [f"--checkpoint.dirpath={tmp_path / 'ckpt'}"]}[layout]
    every = ["--checkpoint.every_n_train_steps=2", "--checkpoint.save_top_k=-1"]
    assert main(_argv(tmp_path, *extra, *every, "--trainer.max_steps=4")) == 0
    found = sorted((tmp_path).rglob("last.ckpt"))
    assert len(found) == 1
    last = found[0]
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])  # a kill during a copy, a full disk
    _lines(capsys)
    assert main(_argv(tmp_path, *extra, *every, "--ckpt_path=last", "--trainer.max_steps=6")) == 0
    lines = _lines(capsys)
    step4 = last.parent / "epoch=0-step=4.ckpt"
    notice = [ln for ln in lines if "cannot be read" in ln or "skipping" in ln]
    assert len(notice) == 1 and str(last) in notice[0], lines
    assert not any("starting from scratch" in ln for ln in lines)
    assert load_checkpoint(last)["global_step"] == 6
    assert step4.is_file()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(0, 50), min_size=1, max_size=4, unique=True), cut=st.sets(st.integers(0, 3)),
       last_cut=st.booleans())
def test_readable_resume_is_the_newest_readable_checkpoint(tmp_path, capsys, steps, cut, last_cut):
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        for i, step in enumerate(steps):
            path = Path(folder, f"epoch=0-step={step}.ckpt")
            torch.save({"global_step": step, "state_dict": {}}, path)
            if i in cut:
                path.write_bytes(path.read_bytes()[:50])
        last = Path(folder, "last.ckpt")
        torch.save({"global_step": max(steps) + 1, "state_dict": {}}, last)
        if last_cut:
            last.write_bytes(last.read_bytes()[:50])
        readable = [s for i, s in enumerate(steps) if i not in cut]
        capsys.readouterr()
        if not last_cut:
            assert readable_resume(str(last), "fit") == str(last)
            assert capsys.readouterr().err == ""
        elif readable:
            chosen = readable_resume(str(last), "fit")
            assert chosen == str(Path(folder, f"epoch=0-step={max(readable)}.ckpt"))
            (line,) = capsys.readouterr().err.splitlines()
            assert line.startswith(f"swar-bench fit: {last} cannot be read (") and f"resuming from {chosen}" in line
        else:
            with pytest.raises(ValueError, match=r"cannot be read .* no other checkpoint beside it can"):
                readable_resume(str(last), "fit")
