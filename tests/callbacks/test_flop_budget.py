"""FlopBudget stops training at the first batch whose cumulative 6 * params * tokens reaches the budget."""

from __future__ import annotations

from types import SimpleNamespace

import lightning.pytorch as pl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.callbacks import FlopBudget
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.mechanisms import GRU
from swar_bench.module import TBPTTModule


class _Module(torch.nn.Module):
    def __init__(self, n_params: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(n_params))
        self.tokens_seen = 0

    def log(self, *args, **kwargs) -> None:
        pass


@settings(max_examples=50, deadline=None)
@given(batches=st.lists(st.integers(1, 5000), min_size=1, max_size=30), n_params=st.integers(1, 1000),
       world=st.integers(1, 4), fraction=st.floats(0.01, 1.5))
def test_stops_at_the_first_batch_reaching_the_budget(batches, n_params, world, fraction):
    budget = fraction * 6 * n_params * world * sum(batches)
    cb = FlopBudget(budget)
    module, trainer = _Module(n_params), SimpleNamespace(world_size=world, should_stop=False)
    cb.on_fit_start(trainer, module)
    stopped_at = None
    for i, tokens in enumerate(batches):
        module.tokens_seen += tokens
        cb.on_train_batch_end(trainer, module, None, None, i)
        assert cb.flops_spent == 6.0 * n_params * module.tokens_seen * world
        if trainer.should_stop:
            stopped_at = i
            break
    spent = [6.0 * n_params * world * sum(batches[: i + 1]) for i in range(len(batches))]
    expected = next((i for i, f in enumerate(spent) if f >= budget), None)
    assert stopped_at == expected


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "1e12"])
def test_bad_budget_is_one_line(value):
    with pytest.raises(ValueError, match=r"budget_flops=.*: expected a finite number of FLOPs > 0"):
        FlopBudget(value)


def test_a_real_fit_stops_at_the_budget():
    pl.seed_everything(0, verbose=False)
    model = TBPTTModule(GRU(d_model=8, n_layers=1), lr=1e-2, warmup_steps=0, tbptt_steps=2000)
    n_params = sum(p.numel() for p in model.parameters())
    data = PasskeySwarDataModule(train_configs=[32], batch_size=2, examples_per_epoch=1000)
    budget = 6 * n_params * 1000  # about 4 batches of two ~132-token sequences
    cb = FlopBudget(budget)
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=1000, limit_val_batches=0, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[cb])
    trainer.fit(model, datamodule=data)
    assert 1000 <= model.tokens_seen < 1000 + 2 * 400  # stopped after the batch that crossed 1000 tokens
    assert cb.flops_spent == 6 * n_params * model.tokens_seen
    assert trainer.global_step < 1000
