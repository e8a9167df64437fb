"""A forced logger version names one folder for reading and writing, and a fit without a checkpoint
to resume never writes over the checkpoints of an existing run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonargparse import Namespace

from swar_bench.harness import runs
from swar_bench.lightning_cli import SwarBenchCLI, check_fresh_start, main
from swar_bench.runtime.checkpoint_io import load_checkpoint

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = ["--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
         "--data.batch_size=2", "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2",
         "--model.tbptt_steps=1000", "--trainer.val_check_interval=2", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]


def _argv(tmp_path, *extra):
    return ["fit", "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}",
            *SMALL, *extra]


def _lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def test_the_reported_forced_version_resumes_its_own_folder_and_a_fresh_start_is_refused(tmp_path, capsys):
    forced = "--trainer.logger.init_args.version=0"
    assert main(_argv(tmp_path, forced, "--trainer.max_steps=2")) == 0
    run = tmp_path / "quickstart" / "GRU" / "version_0"
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 2
    _lines(capsys)
    # the reported command: it read <name>/0/checkpoints, said "starting from scratch" and wrote step 4 over step 2
    assert main(_argv(tmp_path, forced, "--ckpt_path", "last", "--trainer.max_steps=4")) == 0
    assert not any("starting from scratch" in ln for ln in _lines(capsys))
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 4
    assert [p.name for p in run.parent.iterdir()] == ["version_0"]
    # a fresh start into that folder would write over its checkpoints: refused, nothing touched
    before = (run / "checkpoints" / "last.ckpt").read_bytes()
    assert main(_argv(tmp_path, forced, "--trainer.max_steps=1")) == 2
    folder = run / "checkpoints"
    assert _lines(capsys) == [
        (f"swar-bench: error: --trainer.logger.init_args.version=0: {folder} already holds the checkpoints of a run "
         "(epoch=0-step=4.ckpt, last.ckpt); a new run never writes over them: expected --ckpt_path last to resume "
         "that run, or another folder for a new one"),
    ]
    assert (run / "checkpoints" / "last.ckpt").read_bytes() == before


def test_a_fresh_start_into_a_checkpoint_folder_in_use_is_refused(tmp_path, capsys):
    folder = tmp_path / "ckpt"
    assert main(_argv(tmp_path, f"--checkpoint.dirpath={folder}", "--trainer.max_steps=2")) == 0
    before = (folder / "last.ckpt").read_bytes()
    _lines(capsys)
    assert main(_argv(tmp_path, f"--checkpoint.dirpath={folder}", "--trainer.max_steps=1")) == 2
    (line,) = _lines(capsys)
    assert line.startswith(f"swar-bench: error: --checkpoint.dirpath={folder}: {folder} already holds the checkpoints of a run (")
    assert line.endswith("expected --ckpt_path last to resume that run, or another folder for a new one")
    assert (folder / "last.ckpt").read_bytes() == before
    # resuming it is what the line says, and works
    assert main(_argv(tmp_path, f"--checkpoint.dirpath={folder}", "--ckpt_path=last", "--trainer.max_steps=3")) == 0
    assert load_checkpoint(folder / "last.ckpt")["global_step"] == 3


SPELLINGS = st.one_of(
    st.integers(0, 10**4).map(lambda n: ("int", n)),
    st.integers(0, 10**4).map(lambda n: ("digits", str(n))),
    st.integers(0, 10**4).map(lambda n: ("version_N", f"version_{n}")),
    st.text("abcxyz_-", min_size=1, max_size=10).filter(lambda s: not s.startswith("version_")).map(lambda s: ("name", "slurm" + s)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=SPELLINGS, fresh=st.booleans())
def test_a_forced_version_is_one_folder_for_reading_and_writing(tmp_path, capsys, spelling, fresh):
    """Whatever the spelling of the version, ``--ckpt_path last`` looks where the logger writes
    (``TensorBoardLogger.log_dir``), and a fresh start into that folder is refused."""
    from lightning.pytorch.loggers import TensorBoardLogger

    _, version = spelling
    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        logger = Namespace(class_path="lightning.pytorch.loggers.TensorBoardLogger",
                           init_args=Namespace(save_dir=base, name="quickstart", version=version))
        cfg = Namespace(trainer=Namespace(logger=logger), ckpt_path="last", checkpoint=Namespace(dirpath=None),
                        model=Namespace(mechanism=Namespace(class_path="swar_bench.mechanisms.GRU")))
        resolved = runs.logger_version(version)
        writes = Path(TensorBoardLogger(base, name="quickstart/GRU", version=resolved).log_dir) / "checkpoints"
        ckpt = writes / "last.ckpt"
        ckpt.parent.mkdir(parents=True)
        torch.save({"global_step": 7, "state_dict": {}}, ckpt)
        capsys.readouterr()
        if fresh:
            cfg.ckpt_path = None
            SwarBenchCLI.__new__(SwarBenchCLI)._configure_run_folder(cfg, "fit")
            with pytest.raises(ValueError, match="already holds the checkpoints of a run") as refused:
                check_fresh_start(cfg)
            assert str(writes) in str(refused.value) and "\n" not in str(refused.value)
        else:
            SwarBenchCLI.__new__(SwarBenchCLI)._configure_run_folder(cfg, "fit")
            assert cfg.ckpt_path == str(ckpt)
            assert capsys.readouterr().err == ""
        # the logger built from the resolved config writes into the same folder
        assert os.path.join(TensorBoardLogger(base, name=logger.init_args.name,
                                              version=logger.init_args.version).log_dir, "checkpoints") == str(writes)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["last.ckpt", "epoch=0-step=2.ckpt", "hpc_ckpt_1.ckpt", "notes.txt", "x.ckpt.tmp"]),
                unique=True))
def test_existing_checkpoints_are_exactly_the_ckpt_files(names):
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            Path(folder, name).write_bytes(b"x")
        assert runs.existing_checkpoints(folder) == sorted(n for n in names if n.endswith(".ckpt"))


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fast_dev_run=st.sampled_from(["true", "1", "2", "3"]))
def test_a_fast_dev_run_writes_no_checkpoint_and_blocks_no_later_run(tmp_path, capsys, fast_dev_run):
    # Lightning's ModelCheckpoint skips every save under fast_dev_run except save_last at train end
    # (reported: a fast_dev_run left last.ckpt, and the real run into the folder was then refused)
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        folder = Path(tmp) / "checkpoints"
        check = [f"--checkpoint.dirpath={folder}"]
        assert main(_argv(Path(tmp), *check, f"--trainer.fast_dev_run={fast_dev_run}")) == 0
        assert not folder.exists() or not list(folder.rglob("*.ckpt"))
        assert main(_argv(Path(tmp), *check, "--trainer.max_steps=1")) == 0, _lines(capsys)
        assert load_checkpoint(folder / "last.ckpt")["global_step"] == 1
