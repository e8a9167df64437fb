"""LengthCurriculum drives the DataModule's N through set_train_n (the curriculum's hook), with a fixed lag."""

from __future__ import annotations

import lightning.pytorch as pl

from swar_bench.callbacks import LengthCurriculum
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.mechanisms import GRU
from swar_bench.module import TBPTTModule


class Watch(pl.Callback):
    def __init__(self, curriculum):
        self.curriculum = curriculum
        self.first = None
        self.decided, self.seen = [], []

    def on_train_start(self, trainer, pl_module):
        self.first = self.curriculum.current_n

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.seen.append(int(batch.n_writes[0]))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.decided.append(self.curriculum.current_n)


def test_curriculum_choices_reach_the_batches():
    pl.seed_everything(0, verbose=False)
    curriculum = LengthCurriculum(n_writes_values=[32, 64, 128], seed=3)
    watch = Watch(curriculum)
    model = TBPTTModule(GRU(d_model=8, n_layers=1), lr=1e-2, warmup_steps=0, tbptt_steps=2000)
    data = PasskeySwarDataModule(train_configs=[32, 64, 128], batch_size=2, examples_per_epoch=1000)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, max_steps=10, limit_val_batches=0, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[curriculum, watch],
    )
    trainer.fit(model, datamodule=data)
    assert len(watch.seen) == 10 and len(set(watch.seen)) > 1
    # without loader workers every choice reaches the very next batch; the first batch already
    # has the curriculum's first choice
    assert watch.seen[0] == watch.first
    assert watch.seen[1:] == watch.decided[:-1]
