"""Batches of passkey_swar: examples of one N, generated or read, collated into one :class:`Batch`.

:class:`Batch` is what every DataModule of the harness yields (passkey_swar here, MQAR in
``mqar.py``) and what ``TBPTTModule`` reads (docs/ARCHITECTURE.md, "Hand-offs"). A filler batch
(one PAD row, ``seed`` -1) keeps data-parallel ranks in step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

FILLER_SEED = -1

@dataclass(eq=False)
class Batch:
    """One batch of one N, as the DataModule yields it and ``TBPTTModule`` reads it.

    Attributes (all ``torch.int64``):
        input_ids: ``[B, T]`` token ids, right-padded with PAD = 0.
        labels: ``[B, T]`` the Hugging Face convention (``labels[:, t]`` is the target of the
            token at ``t``, scored against ``logits[:, t - 1]``); -100 where nothing is asked.
        answer_kind: ``[B, T]`` codes of ``swar_bench.tasks.oracle.ANSWER_KINDS`` aligned with
            ``labels`` (``tasks.oracle.annotate``; MQAR: ``AR_VALID`` at every answer); 0 elsewhere.
        key_age: ``[B, T]`` writes since the queried key's latest write (MQAR: the query's gap
            in tokens), aligned with ``labels``; -1 where it does not apply.
        n_writes: ``[B]`` the batch's N (one value; MQAR: ``num_kv_pairs``).
        seed: ``[B]`` each row's example seed (docs/TASK.md, "Columns"; MQAR: its index in the
            segment); -1 on a filler row.

    A dataclass with a ``to(device)`` method: Lightning's ``move_data_to_device`` moves it whole
    (``lightning_fabric.utilities.apply_func``: an object with ``to`` is moved by that method), and
    its ``extract_batch_size`` reads B from ``input_ids``, the first field. Not frozen: the
    precision plugins of ``--trainer.precision`` (``16-true``, ``bf16-true``, ``64-true``, ...) pass
    every batch through ``convert_input``, whose ``apply_to_collection`` refuses a frozen dataclass;
    it rebuilds the batch with each float tensor cast (a Batch holds none) and this class's
    fields untouched. Nothing here changes a batch's fields after it is made (``padded`` and
    ``to`` return a new one). ``eq=False``: batches compare and hash by identity, as tensors do.

    Raises:
        ValueError: a field that is not an int64 tensor, or shapes other than ``[B, T]`` / ``[B]``.
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    answer_kind: torch.Tensor
    key_age: torch.Tensor
    n_writes: torch.Tensor
    seed: torch.Tensor

    PAD: ClassVar[dict[str, int]] = {"input_ids": 0, "labels": -100, "answer_kind": 0, "key_age": -1}
    """The value each ``[B, T]`` field is right-padded with."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, torch.Tensor) or value.dtype != torch.int64:
                what = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
                raise ValueError(f"Batch.{f.name} is {what}; expected a torch.int64 tensor")
        shape = tuple(self.input_ids.shape)
        if len(shape) != 2:
            raise ValueError(f"Batch.input_ids has shape {shape}; expected [B, T]")
        for name in ("labels", "answer_kind", "key_age"):
            if tuple(getattr(self, name).shape) != shape:
                raise ValueError(f"Batch.{name} has shape {tuple(getattr(self, name).shape)}; expected {shape} as input_ids")
        for name in ("n_writes", "seed"):
            if tuple(getattr(self, name).shape) != shape[:1]:
                raise ValueError(f"Batch.{name} has shape {tuple(getattr(self, name).shape)}; expected [{shape[0]}]")

    @property
    def n(self) -> int:
        """The batch's N (``n_writes[0]``)."""
        return int(self.n_writes[0])

    @property
    def real_rows(self) -> int:
        """Rows holding an example (``seed >= 0``); filler rows do not count."""
        return int((self.seed >= 0).sum())

    def to(self, device: Any) -> Batch:
        """Every tensor moved by Lightning's ``move_data_to_device`` (non-blocking where it is)."""
        from lightning.fabric.utilities import move_data_to_device

        return Batch(**move_data_to_device(vars(self).copy(), device))

    def padded(self, length: int) -> Batch:
        """Right-padded to ``length`` tokens with :attr:`PAD` (itself when already that long)."""
        extra = length - self.input_ids.shape[1]
        if extra == 0:
            return self
        return dataclasses.replace(
            self, **{name: F.pad(getattr(self, name), (0, extra), value=value) for name, value in self.PAD.items()}
        )


# A batch key, built in the main process and sent to the workers:
# (split, n_writes, indices); an empty ``indices`` is a filler batch.
BatchKey = tuple


def collate_examples(
    examples: Sequence[dict], n_writes: int, annotate, params=None
) -> Batch:
    """Right-pad examples of one N into a :class:`Batch`.

    ``examples``: dicts with ``input_ids`` / ``labels`` (int arrays [T_i]) and ``seed``.
    ``annotate``: ``swar_bench.tasks.oracle.annotate`` (``input_ids -> (answer_kind, key_age)``).
    Returns a ``Batch`` of ``B = len(examples)`` rows, ``T = `` the longest example, padded with
    ``Batch.PAD``.
    """
    B = len(examples)
    T = max(len(e["input_ids"]) for e in examples)
    input_ids = np.zeros((B, T), dtype=np.int64)
    labels = np.full((B, T), -100, dtype=np.int64)
    answer_kind = np.zeros((B, T), dtype=np.int64)
    key_age = np.full((B, T), -1, dtype=np.int64)
    for i, e in enumerate(examples):
        ids = np.asarray(e["input_ids"])
        t = len(ids)
        input_ids[i, :t] = ids
        labels[i, :t] = np.asarray(e["labels"])
        kind, age = annotate(ids.astype(np.int16), params)
        answer_kind[i, :t] = kind
        key_age[i, :t] = age
    return Batch(
        input_ids=torch.from_numpy(input_ids),
        labels=torch.from_numpy(labels),
        answer_kind=torch.from_numpy(answer_kind),
        key_age=torch.from_numpy(key_age),
        n_writes=torch.full((B,), n_writes, dtype=torch.int64),
        seed=torch.tensor([int(e["seed"]) for e in examples], dtype=torch.int64),
    )


def filler_batch(n_writes: int) -> Batch:
    """One PAD row with no supervised position: keeps ranks in step, adds nothing to metrics."""
    return Batch(
        input_ids=torch.zeros((1, 1), dtype=torch.int64),
        labels=torch.full((1, 1), -100, dtype=torch.int64),
        answer_kind=torch.zeros((1, 1), dtype=torch.int64),
        key_age=torch.full((1, 1), -1, dtype=torch.int64),
        n_writes=torch.full((1,), n_writes, dtype=torch.int64),
        seed=torch.full((1,), FILLER_SEED, dtype=torch.int64),
    )


class PasskeySwarBatches(Dataset):
    """Map-style dataset whose items are whole batches, addressed by a ``BatchKey``.

    ``source="generate"`` builds examples with ``generate_examples(seeds, N)`` from the task's
    seed formula (docs/TASK.md, "Columns"); otherwise ``source`` (a Hub id or a local folder in the Hub layout) is read
    with ``swar_bench.tasks.hub_io.load_split`` and an index past the end of a split wraps.
    """

    def __init__(self, source: str = "generate", params=None) -> None:
        self.source = source
        self.params = params
        self._splits: dict[tuple[str, int], Any] = {}

    def split_size(self, split: str, n_writes: int) -> int | None:
        """Examples available in ``split`` for N (None: unbounded generated stream)."""
        if self.source == "generate":
            return None
        return len(self._load(split, n_writes))

    def _load(self, split: str, n_writes: int):
        key = (split, n_writes)
        if key not in self._splits:
            from swar_bench.tasks.hub_io import load_split

            self._splits[key] = load_split(self.source, f"n{n_writes}", split)
        return self._splits[key]

    def examples(self, split: str, n_writes: int, indices: Sequence[int]) -> list[dict]:
        if self.source == "generate":
            from swar_bench.tasks.passkey_swar import example_seed, generate_examples

            seeds = [example_seed(split, n_writes, int(i)) for i in indices]
            return generate_examples(seeds, n_writes, self.params)
        ds = self._load(split, n_writes)
        rows = ds.select([int(i) % len(ds) for i in indices])
        return [dict(r) for r in rows]

    def __getitem__(self, key: BatchKey) -> Batch:
        from swar_bench.tasks.oracle import annotate

        split, n_writes, indices = key
        if not indices:
            return filler_batch(n_writes)
        return collate_examples(self.examples(split, n_writes, indices), n_writes, annotate, self.params)
