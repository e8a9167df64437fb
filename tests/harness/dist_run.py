"""Run by test_distributed.py: validate, train 3 steps, validate again; dump what each rank saw.

``python tests/harness/dist_run.py {single|ddp|fsdp} OUT_DIR``. Lightning launches the second
process itself (it re-runs this script with its rank in the environment). Each rank writes
``rank{r}.pt``: the evaluation records before and after training (one row per supervised
position, keyed by the example's seed and the position's order in it), the logged
``val/acc/...`` metrics, and the full weights after training (FSDP2 shards gathered).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import lightning.pytorch as pl
import torch

from swar_bench.callbacks import AnswerTypeAccuracy
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.mechanisms import GatedDeltaNet
from swar_bench.module import TBPTTModule


class Recorder(pl.Callback):
    """Keeps every evaluated supervised position as (seed, k-th answer of the row, fields...)."""

    def __init__(self) -> None:
        self.records: list[tuple] = []

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        seeds = batch.seed.tolist()
        seen: dict[int, int] = {}
        for i in range(outputs.pred.numel()):
            row = int(outputs.row[i])
            k = seen.get(row, 0)
            seen[row] = k + 1
            self.records.append((
                seeds[row], k, int(outputs.n_writes), int(outputs.pred[i]), int(outputs.target[i]),
                float(outputs.loss[i]), int(outputs.answer_kind[i]), int(outputs.key_age[i]),
            ))


def full_weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.tensor import DTensor

    return {
        k: (v.full_tensor() if isinstance(v, DTensor) else v).detach().clone()
        for k, v in module.state_dict().items()
    }


def run(kind: str, out_dir: str) -> None:
    pl.seed_everything(0, verbose=False)
    torch.set_num_threads(1)
    mechanism = GatedDeltaNet(d_model=16, n_layers=2, n_heads=2)
    model = TBPTTModule(mechanism, lr=1e-2, warmup_steps=0, tbptt_steps=64, grad_clip=1.0)
    # 7 and 5 examples over 2 ranks in batches of 3: uneven shards, one filler batch per rank pair
    data = PasskeySwarDataModule(
        train_configs=[32, 64], val_configs=[32, 64], batch_size=2, eval_batch_size=3,
        examples_per_epoch=1000, eval_examples=7,
    )
    strategy = {
        "single": "auto",
        "ddp": "ddp",
        "fsdp": pl.strategies.ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=1),
    }[kind]
    recorder = Recorder()
    trainer = pl.Trainer(
        accelerator="cpu", devices=1 if kind == "single" else 2, strategy=strategy, max_steps=3,
        num_sanity_val_steps=0, check_val_every_n_epoch=None, val_check_interval=10_000,
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[recorder, AnswerTypeAccuracy(write_reports=False)],
    )
    trainer.validate(model, datamodule=data, verbose=False)
    before = list(recorder.records)
    metrics_before = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/acc/")}
    loss_before = float(trainer.callback_metrics["val/loss"])
    recorder.records.clear()
    trainer.fit(model, datamodule=data)
    weights = full_weights(model.mechanism)
    trainer.validate(model, datamodule=data, verbose=False)
    after = list(recorder.records)
    metrics_after = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/acc/")}
    os.makedirs(out_dir, exist_ok=True)
    torch.save(
        {
            "before": before, "after": after, "metrics_before": metrics_before, "metrics_after": metrics_after,
            "loss_before": loss_before,
            "weights": weights, "global_step": trainer.global_step, "world_size": trainer.world_size,
        },
        os.path.join(out_dir, f"rank{trainer.global_rank}.pt"),
    )


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
