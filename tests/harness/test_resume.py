"""A run killed after step k and resumed from its checkpoint equals an uninterrupted run."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch

from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.mechanisms import GRU
from swar_bench.module import TBPTTModule

TOTAL_STEPS, KILL_AFTER, CURRICULUM_STEP = 6, 3, 2


class Killed(RuntimeError):
    pass


class Probe(pl.Callback):
    """Records each training batch's seeds; plays a curriculum (N=64 from step 2); can 'kill'."""

    def __init__(self, kill_after: int | None = None) -> None:
        self.kill_after = kill_after
        self.seen: list[tuple[int, ...]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.kill_after is not None and trainer.global_step >= self.kill_after:
            raise Killed(f"killed after step {trainer.global_step}")
        self.seen.append(tuple(batch.seed.tolist()))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == CURRICULUM_STEP:
            trainer.datamodule.set_train_n(64)


def _run(tmp, kill_after=None, ckpt_path=None):
    pl.seed_everything(0, verbose=False)
    model = TBPTTModule(GRU(d_model=8, n_layers=1), lr=1e-2, warmup_steps=2, tbptt_steps=1000)
    data = PasskeySwarDataModule(
        train_configs=[32, 64, 128], batch_size=2, examples_per_epoch=40, num_workers=1
    )
    probe = Probe(kill_after)
    checkpoint = pl.callbacks.ModelCheckpoint(dirpath=tmp, every_n_train_steps=1, save_top_k=-1, save_last=True)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, max_steps=TOTAL_STEPS, limit_val_batches=0, logger=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=[probe, checkpoint],
    )
    if kill_after is None:
        trainer.fit(model, datamodule=data, ckpt_path=ckpt_path)
    else:
        with pytest.raises(Killed):
            trainer.fit(model, datamodule=data)
    return probe.seen, model


def test_killed_and_resumed_run_equals_uninterrupted(tmp_path):
    seen_full, full = _run(tmp_path / "full")
    # a worker prefetches, so batches were in flight when the run died
    seen_killed, _ = _run(tmp_path / "killed", kill_after=KILL_AFTER)
    ckpt = tmp_path / "killed" / f"epoch=0-step={KILL_AFTER}.ckpt"
    state = torch.load(ckpt, weights_only=False)["PasskeySwarDataModule"]["train_stream"]
    assert state["consumed"] == KILL_AFTER and len(state["pending"]) >= 1
    seen_resumed, resumed = _run(tmp_path / "resumed", ckpt_path=str(ckpt))
    assert len(seen_full) == TOTAL_STEPS
    assert seen_killed[:KILL_AFTER] + seen_resumed == seen_full
    assert len({s for batch in seen_full for s in batch}) == 2 * TOTAL_STEPS  # no example twice
    # the curriculum's N (64 from step 2 on) survived the restart
    assert [s // 10**6 % 10**6 for s, *_ in seen_full[CURRICULUM_STEP + 2 :]] == [64] * (TOTAL_STEPS - CURRICULUM_STEP - 2)
    assert resumed.tokens_seen == full.tokens_seen > 0  # the FLOP count survives the restart
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
