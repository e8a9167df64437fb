"""The SLURM requeue signal: a checkpoint at a batch boundary, a resume that never goes backwards.

No SLURM needed: the job's variables are set so that Lightning picks its SLURMEnvironment, the
signal is sent by the process to itself in the middle of a batch (between two TBPTT chunks, each
an optimizer step), and ``scontrol`` is a script that records its arguments.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.callbacks.slurm_requeue import SlurmRequeue
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.mechanisms import GRU
from swar_bench.module import TBPTTModule
from swar_bench.runtime.slurm import newest_checkpoint, resume_candidates

CHUNKS = 3  # optimizer steps per batch: sequences of N=32 are 132 tokens, chunks of 50
BATCHES = 8
MAX_STEPS = CHUNKS * BATCHES
VAL_EVERY = 2  # batches between validations


class Killed(RuntimeError):
    pass


class Probe(pl.Callback):
    """Sends the requeue signal before backward number ``signal_at`` (mid-batch); 'kills' the run
    at the first batch after the requeue checkpoint; records the steps validation ran at."""

    def __init__(self, signal_at: int | None = None, requeue: SlurmRequeue | None = None) -> None:
        self.signal_at, self.requeue = signal_at, requeue
        self.backwards = 0
        self.validated: list[int] = []

    def on_before_backward(self, trainer, pl_module, loss):
        self.backwards += 1
        if self.backwards == self.signal_at:
            os.kill(os.getpid(), signal.SIGUSR1)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.signal_at is not None and self.requeue is not None and self.requeue.saved is not None:
            raise Killed(f"killed at global step {trainer.global_step}")

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.validated.append(trainer.global_step)


@pytest.fixture
def slurm_job(tmp_path, monkeypatch):
    """The variables of a one-task SLURM job, and an ``scontrol`` that records its arguments."""
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NAME", "swar-bench-fit")
    monkeypatch.setenv("SLURM_NTASKS", "1")
    monkeypatch.setenv("SLURM_PROCID", "0")
    monkeypatch.setenv("SLURM_LOCALID", "0")
    monkeypatch.setenv("SLURM_NODEID", "0")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node01")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    scontrol = fake_bin / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path / "scontrol.log"}"\n')
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    return tmp_path / "scontrol.log"


def fit(root: Path, signal_at: int | None = None, ckpt_path: str | None = None):
    pl.seed_everything(0, verbose=False)
    model = TBPTTModule(GRU(d_model=8, n_layers=1), lr=1e-2, warmup_steps=2, tbptt_steps=50)
    data = PasskeySwarDataModule(
        train_configs=[32], val_configs=[32], batch_size=2, eval_examples=4, examples_per_epoch=400, num_workers=0
    )
    requeue = SlurmRequeue()
    probe = Probe(signal_at, requeue)
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=root / "checkpoints", save_last=True)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, max_steps=MAX_STEPS, val_check_interval=VAL_EVERY, check_val_every_n_epoch=None,
        num_sanity_val_steps=0, logger=False, enable_progress_bar=False, enable_model_summary=False,
        default_root_dir=root, callbacks=[requeue, probe, checkpoint],
    )
    if signal_at is None:
        trainer.fit(model, datamodule=data, ckpt_path=ckpt_path)
    else:
        with pytest.raises(Killed):
            trainer.fit(model, datamodule=data)
    return trainer, model, probe, requeue


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    trainer, model, probe, _ = fit(tmp_path_factory.mktemp("full"))
    return trainer.global_step, model.state_dict(), probe.validated


# backward 8: the 2nd chunk of batch 3 (no validation after it); backward 11: the 2nd chunk of
# batch 4, which is followed by a validation
@pytest.mark.parametrize(("signal_at", "saved_at"), [(8, 3 * CHUNKS), (11, 4 * CHUNKS)])
def test_requeue_checkpoint_at_a_batch_boundary_resumes_like_an_uninterrupted_run(
    tmp_path, slurm_job, uninterrupted, signal_at, saved_at
):
    full_steps, full_weights, full_validated = uninterrupted
    assert full_steps == MAX_STEPS
    assert full_validated == [s * CHUNKS for s in range(VAL_EVERY, BATCHES + 1, VAL_EVERY)]

    root = tmp_path / "job"
    _, _, killed_probe, requeue = fit(root, signal_at=signal_at)
    assert requeue.saved == str(root / "checkpoints" / "hpc_ckpt_1.ckpt")
    assert torch.load(requeue.saved, weights_only=True)["global_step"] == saved_at  # not mid-batch
    assert slurm_job.read_text().split() == ["requeue", "77"]
    assert killed_probe.validated == [s for s in full_validated if s <= saved_at]
    # Lightning's own SIGUSR1 handler was not installed; the test process's one is back
    assert signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None)

    path, step = newest_checkpoint(resume_candidates(root / "checkpoints"))
    assert (path, step) == (requeue.saved, saved_at)
    trainer, model, probe, _ = fit(tmp_path / "resumed", ckpt_path=path)
    assert trainer.global_step == MAX_STEPS
    assert probe.validated == [s for s in full_validated if s > saved_at]
    for (name, a), b in zip(full_weights.items(), model.state_dict().values()):
        assert torch.equal(a, b), name


def _write_checkpoint(path: Path, step: int, batches: int) -> None:
    loops = {"fit_loop": {"epoch_loop.batch_progress": {"total": {"completed": batches}}}}
    torch.save({"global_step": step, "loops": loops, "state_dict": {}}, path)


def test_newest_checkpoint_by_recorded_step_not_by_name_or_time(tmp_path):
    # the reported case: an older hpc checkpoint (step 102) beside a newer last.ckpt (step 199),
    # the hpc file written after it
    (tmp_path / "checkpoints").mkdir()
    _write_checkpoint(tmp_path / "checkpoints" / "last.ckpt", 199, 199)
    _write_checkpoint(tmp_path / "hpc_ckpt_1.ckpt", 102, 102)
    os.utime(tmp_path / "checkpoints" / "last.ckpt", (1, 1))
    (tmp_path / "checkpoints" / "broken.ckpt").write_bytes(b"cut short")
    lines: list[str] = []
    newest = newest_checkpoint(resume_candidates(tmp_path, tmp_path / "checkpoints"), warn=lines.append)
    assert newest == (str(tmp_path / "checkpoints" / "last.ckpt"), 199)
    assert lines == [f"skipping {tmp_path / 'checkpoints' / 'broken.ckpt'}: not a readable checkpoint (RuntimeError)"]
    assert newest_checkpoint(resume_candidates(tmp_path / "missing")) is None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=5))
def test_newest_checkpoint_never_goes_backwards(tmp_path_factory, files):
    folder = tmp_path_factory.mktemp("run")
    (folder / "checkpoints").mkdir()
    written = {}
    for i, (hpc, step, batches) in enumerate(files):
        path = folder / f"hpc_ckpt_{i + 1}.ckpt" if hpc else folder / "checkpoints" / f"step-{i}.ckpt"
        _write_checkpoint(path, step, batches)
        written[str(path)] = (step, batches, hpc)
    path, step = newest_checkpoint(resume_candidates(folder, folder / "checkpoints"))
    best = max(written.values())
    assert (written[path][0], written[path][1]) == best[:2]
    assert step == best[0]
    # on a tie, an hpc checkpoint (the one saved on the requeue signal) wins
    assert written[path][2] == any(v[2] for v in written.values() if v[:2] == best[:2])


@pytest.mark.parametrize("rank", [0, 1])
def test_stop_message_once_from_rank_zero_naming_the_checkpoint_a_requeue_takes(tmp_path, monkeypatch, capsys, rank):
    from lightning.pytorch.utilities.exceptions import SIGTERMException
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    import swar_bench.runtime.slurm
    from swar_bench.lightning_cli import stop_status

    # under srun only SLURM_PROCID tells the ranks apart (no RANK / LOCAL_RANK); the Trainer sets
    # rank_zero_only.rank from it
    for var in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_PROCID", str(rank))
    monkeypatch.setattr(rank_zero_only, "rank", rank)
    (tmp_path / "checkpoints").mkdir()
    _write_checkpoint(tmp_path / "checkpoints" / "last.ckpt", 30, 30)
    _write_checkpoint(tmp_path / "hpc_ckpt_1.ckpt", 40, 40)
    monkeypatch.setattr(swar_bench.runtime.slurm, "_RESUME_DIRS", (str(tmp_path), str(tmp_path / "checkpoints")))
    assert stop_status(SIGTERMException(), "swar-bench", "fit") == 143
    expected = f"swar-bench: terminated (SIGTERM); the requeued job resumes from {tmp_path / 'hpc_ckpt_1.ckpt'}, global step 40\n"
    assert capsys.readouterr().err == (expected if rank == 0 else "")
