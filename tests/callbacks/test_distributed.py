"""Two gloo processes give the numbers of one process.

One ``torch.multiprocessing.spawn`` of 2 CPU processes (``init_process_group("gloo")``) checks:
1. the metric states, each rank fed half of the batches, reduce exactly to the one-process states;
2. inside a Lightning DDP fit (reusing that process group), the callbacks log the values of a
   one-process run, and the length curriculum makes the same choices on every rank;
3. a DDP test pass writes the one-process report files once, into the logger's log_dir.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time

import lightning.pytorch as pl
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from lightning.pytorch.loggers import TensorBoardLogger

from swar_bench.callbacks import (
    AnswerTypeAccuracy,
    AnswerTypeCounts,
    Calibration,
    CalibrationCounts,
    LengthCurriculum,
)
from swar_bench.callbacks.answer_type_accuracy import REPORT_FILES
from swar_bench.callbacks.calibration import CALIBRATION_FILES
from swar_bench.module import EvalOutputs

from .fakes import (
    BATCH_N32,
    BATCH_N64,
    CurriculumEvalDataModule,
    EvalOutputsModule,
    TrainEvalModule,
    eval_loader,
    random_outputs,
)

WORLD_SIZE = 2
HANG_LIMIT_S = 300
# Four batches: the distributed sampler gives rank 0 the two n64 batches and rank 1 the two n32
# ones, so no rank alone can log what one process logs. The losses differ per N, so the
# self-knowledge correlation is defined.
N32_LOW_LOSS = dataclasses.replace(BATCH_N32, loss=BATCH_N32.loss * 0.25)
N32_ALL_WRONG = dataclasses.replace(N32_LOW_LOSS, pred=BATCH_N32.target + 1)
N64_ALL_RIGHT = dataclasses.replace(BATCH_N64, pred=BATCH_N64.target.clone())
VAL_BATCHES = [BATCH_N64, N32_LOW_LOSS, N64_ALL_RIGHT, N32_ALL_WRONG]


def _random_batches() -> list[EvalOutputs]:
    g = torch.Generator().manual_seed(11)
    # Rank 0 gets the even batches, rank 1 the odd ones: n2048 only ever reaches rank 1.
    plan = [(32, 3), (2048, 2), (64, 4), (256, 1), (32, 2), (64, 3), (256, 2)]
    return [random_outputs(g, n, batch_size=b, per_row=12) for n, b in plan]


def _counts(batches: list[EvalOutputs]) -> dict[str, torch.Tensor]:
    accuracy, calibration = AnswerTypeCounts(), CalibrationCounts()
    for batch in batches:
        accuracy.update_from_outputs(batch)
        calibration.update_from_outputs(batch)
    out = {f"acc.{k}": v for k, v in accuracy.compute().items()}
    out.update({f"cal.{k}": v for k, v in calibration.compute().items()})
    return out


class _RecordCurriculum(LengthCurriculum):
    def __init__(self, path: str) -> None:
        super().__init__(seed=4)
        self.path = path

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        state = {
            "counts": self.choice_counts.tolist(),
            "alpha": self.bandit.alpha.tolist(),
            "flops": self.flops_spent,
        }
        with open(f"{self.path}.rank{trainer.global_rank}.json", "w") as handle:
            json.dump(state, handle)


def _trainer(callbacks: list, logger: TensorBoardLogger | bool = False, **kwargs) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        logger=logger,
        callbacks=callbacks,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


def _worker(rank: int, out_dir: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{out_dir}/init", rank=rank, world_size=WORLD_SIZE
    )
    try:
        torch.save(
            _counts(_random_batches()[rank::WORLD_SIZE]),
            os.path.join(out_dir, f"counts.rank{rank}.pt"),
        )

        # Lightning finds the process group already initialized and joins it (LOCAL_RANK set:
        # processes launched externally, as under torchrun).
        os.environ.update(LOCAL_RANK=str(rank), NODE_RANK="0", WORLD_SIZE=str(WORLD_SIZE))
        callbacks = [
            AnswerTypeAccuracy(write_reports=False),
            Calibration(write_reports=False),
            _RecordCurriculum(os.path.join(out_dir, "curriculum")),
        ]
        trainer = _trainer(
            callbacks,
            devices=WORLD_SIZE,
            strategy="ddp",
            max_steps=6,
            val_check_interval=6,
            check_val_every_n_epoch=None,
            num_sanity_val_steps=0,
        )
        trainer.fit(TrainEvalModule(), datamodule=CurriculumEvalDataModule(VAL_BATCHES))
        logged = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        logged["world_size"] = trainer.world_size
        with open(os.path.join(out_dir, f"logged.rank{rank}.json"), "w") as handle:
            json.dump(logged, handle)

        # Test-end reports: written once (rank 0) into the logger's log_dir, which every rank
        # must ask for (trainer.log_dir broadcasts).
        logger = TensorBoardLogger(out_dir, name="ddp_reports")
        tester = _trainer(
            [AnswerTypeAccuracy(), Calibration()], devices=WORLD_SIZE, strategy="ddp", logger=logger
        )
        tester.test(EvalOutputsModule(), eval_loader(VAL_BATCHES), verbose=False)
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_match_one_process(tmp_path):
    context = mp.spawn(_worker, args=(str(tmp_path),), nprocs=WORLD_SIZE, join=False)
    deadline = time.monotonic() + HANG_LIMIT_S
    while not context.join(timeout=2):
        if time.monotonic() > deadline:  # a collective called on one rank only never returns
            for process in context.processes:
                process.kill()
            pytest.fail(
                f"the 2-process run did not finish within {HANG_LIMIT_S} s: a rank is stuck"
            )

    single = _counts(_random_batches())
    assert int(single["acc.count"].sum()) > 0
    for rank in range(WORLD_SIZE):
        reduced = torch.load(tmp_path / f"counts.rank{rank}.pt")
        assert reduced.keys() == single.keys()
        for key, value in single.items():
            if value.dtype == torch.int64:
                assert torch.equal(reduced[key], value), (rank, key)
            else:  # float64 sums: the order of additions differs between the runs
                torch.testing.assert_close(reduced[key], value, rtol=1e-12, atol=1e-9)

    one = _trainer([AnswerTypeAccuracy(write_reports=False), Calibration(write_reports=False)])
    one.validate(EvalOutputsModule(), eval_loader(VAL_BATCHES), verbose=False)
    expected = {k: float(v) for k, v in one.callback_metrics.items()}
    # observed N x kind (no stale at n32) with its two Wilson bounds, ECE and AUROC per N,
    # correlation
    assert len(expected) == 3 * 13 + 2 + 2 + 1
    assert math.isfinite(expected["val/self_knowledge_correlation"])
    for rank in range(WORLD_SIZE):
        assert json.loads((tmp_path / f"logged.rank{rank}.json").read_text()) == dict(
            expected, world_size=WORLD_SIZE
        )

    single_reports = tmp_path / "single_reports"
    files = REPORT_FILES[:3] + CALIBRATION_FILES
    callbacks = [
        AnswerTypeAccuracy(out_dir=str(single_reports)),
        Calibration(out_dir=str(single_reports)),
    ]
    _trainer(callbacks).test(EvalOutputsModule(), eval_loader(VAL_BATCHES), verbose=False)
    ddp_reports = tmp_path / "ddp_reports" / "version_0"
    for name in files:
        assert (ddp_reports / name).read_text() == (single_reports / name).read_text(), name
    assert (ddp_reports / "accuracy_vs_key_age.png").stat().st_size > 0

    rank0, rank1 = (
        json.loads((tmp_path / f"curriculum.rank{r}.json").read_text()) for r in range(WORLD_SIZE)
    )
    assert rank0 == rank1
    assert sum(rank0["counts"]) == 7  # one choice at train start, one after each of 6 steps
