"""Hand-built evaluation outputs (``EvalOutputs``) and tiny Lightning parts for the callback tests."""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, IterableDataset

from swar_bench.datamodules.batches import Batch
from swar_bench.module import EvalOutputs

CODES = {"none": 0, "ar_valid": 1, "ar_expired_stale": 2, "ar_expired_never": 3, "passkey": 4}
"""answer_kind codes of ``swar_bench.tasks.oracle.ANSWER_KINDS``."""


def eval_outputs(n_writes: int, positions: list[tuple], batch_size: int) -> EvalOutputs:
    """``EvalOutputs`` from ``(row, kind, key_age, correct[, confidence, loss])`` tuples.

    The target is a value token (24 + position % 16); a wrong prediction is the next id.
    """
    rows, kinds, ages, target, pred, conf, loss = [], [], [], [], [], [], []
    for j, p in enumerate(positions):
        row, kind, age, correct = p[:4]
        t = 24 + j % 16
        rows.append(row)
        kinds.append(CODES[kind])
        ages.append(age)
        target.append(t)
        pred.append(t if correct else t + 1)
        conf.append(p[4] if len(p) > 4 else 0.5)
        loss.append(p[5] if len(p) > 5 else 1.0)
    return EvalOutputs(
        pred=torch.tensor(pred, dtype=torch.int64),
        target=torch.tensor(target, dtype=torch.int64),
        loss=torch.tensor(loss, dtype=torch.float32),
        confidence=torch.tensor(conf, dtype=torch.float32),
        answer_kind=torch.tensor(kinds, dtype=torch.int64),
        key_age=torch.tensor(ages, dtype=torch.int64),
        row=torch.tensor(rows, dtype=torch.int64),
        n_writes=n_writes,
        batch_size=batch_size,
    )


# n64, 2 rows; the passkey positions of the two rows are interleaved on purpose.
BATCH_N64 = eval_outputs(
    64,
    [
        (0, "ar_valid", 3, True),
        (1, "ar_valid", 1, True),
        (0, "ar_valid", 16, False),
        (0, "ar_expired_stale", 40, True),
        (1, "ar_expired_stale", 100, False),
        (0, "ar_expired_never", -1, True),
        (1, "ar_expired_never", -1, False),
        (0, "passkey", -1, True),
        (1, "passkey", -1, True),
        (0, "passkey", -1, True),
        (1, "passkey", -1, False),
        (0, "passkey", -1, True),
        (1, "passkey", -1, True),
        (0, "passkey", -1, True),
        (1, "passkey", -1, True),
    ],
    batch_size=2,
)
# n32, 1 row: no stale query can exist at N <= 2w (card, "Answer rule").
BATCH_N32 = eval_outputs(
    32,
    [
        (0, "ar_valid", 2, True),
        (0, "ar_expired_never", -1, False),
        (0, "passkey", -1, True),
        (0, "passkey", -1, True),
        (0, "passkey", -1, True),
        (0, "passkey", -1, True),
    ],
    batch_size=1,
)


def random_outputs(
    generator: torch.Generator, n_writes: int, batch_size: int, per_row: int
) -> EvalOutputs:
    """Random ``EvalOutputs``: ``per_row`` queries and 4 passkey tokens per row."""
    m = batch_size * (per_row + 4)
    row = torch.arange(batch_size).repeat_interleave(per_row + 4)
    kind = torch.randint(1, 4, (m,), generator=generator)
    kind.view(batch_size, per_row + 4)[:, per_row:] = 4
    age = torch.randint(1, 3 * n_writes, (m,), generator=generator)
    age[(kind == 3) | (kind == 4)] = -1
    target = torch.randint(7, 40, (m,), generator=generator)
    wrong = torch.rand(m, generator=generator) < 0.3
    pred = torch.where(wrong, (target + 1) % 40, target)
    conf = torch.rand(m, generator=generator)
    conf[::7] = 1.0
    return EvalOutputs(
        pred=pred,
        target=target,
        loss=torch.rand(m, generator=generator) * 3,
        confidence=conf,
        answer_kind=kind,
        key_age=age,
        row=row,
        n_writes=n_writes,
        batch_size=batch_size,
    )


class EvalOutputsModule(pl.LightningModule):
    """Returns each (pre-built) batch as its evaluation step outputs, as TBPTTModule would."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def validation_step(self, batch: EvalOutputs, batch_idx: int) -> EvalOutputs:
        return batch

    def test_step(self, batch: EvalOutputs, batch_idx: int) -> EvalOutputs:
        return batch


def eval_loader(batches: list[EvalOutputs]) -> DataLoader:
    return DataLoader(batches, batch_size=None)


class _CurrentN(IterableDataset):
    def __init__(self, datamodule: CurriculumDataModule) -> None:
        self.datamodule = datamodule

    def __iter__(self):
        while True:
            n = self.datamodule.n_writes
            self.datamodule.served.append(n)
            length = 12 + 3 * n  # any per-N length will do here
            yield Batch(
                input_ids=torch.ones(2, length, dtype=torch.int64),
                labels=torch.full((2, length), -100, dtype=torch.int64),
                answer_kind=torch.zeros(2, length, dtype=torch.int64),
                key_age=torch.full((2, length), -1, dtype=torch.int64),
                n_writes=torch.full((2,), n, dtype=torch.int64),
                seed=torch.arange(2, dtype=torch.int64),
            )


class CurriculumDataModule(pl.LightningDataModule):
    """Serves 2-row batches of the last N given to ``set_train_n`` (32 before any call)."""

    def __init__(self) -> None:
        super().__init__()
        self.n_writes = 32
        self.calls: list[int] = []
        self.served: list[int] = []

    def set_train_n(self, n_writes: int) -> None:
        self.calls.append(n_writes)
        self.n_writes = n_writes

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_CurrentN(self), batch_size=None)


class CurriculumEvalDataModule(CurriculumDataModule):
    """``CurriculumDataModule`` that also serves pre-built evaluation batches for validation."""

    def __init__(self, val_batches: list[EvalOutputs]) -> None:
        super().__init__()
        self.val_batches = val_batches

    def val_dataloader(self) -> DataLoader:
        return eval_loader(self.val_batches)


class TrainLossModule(pl.LightningModule):
    """A one-parameter model whose loss falls with training, exposing ``last_train_loss``."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([3.0]))
        self.last_train_loss = float("nan")

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        scale = 1.0 + batch.n_writes[0].float() / 256
        loss = scale * (self.weight**2).sum()
        self.last_train_loss = float(loss.detach())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class TrainEvalModule(TrainLossModule):
    """``TrainLossModule`` whose validation step returns each pre-built batch as its outputs."""

    def validation_step(self, batch: EvalOutputs, batch_idx: int) -> EvalOutputs:
        return batch
