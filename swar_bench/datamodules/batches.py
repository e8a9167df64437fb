"""Batches of passkey_swar: examples of one N, generated or read, collated into one batch.

A batch (contract 3, ``swar_bench.datamodules.passkey_swar``): ``input_ids[B, T]`` int64 right
padded with PAD=0, ``labels[B, T]`` int64 (-100 unsupervised), ``answer_kind[B, T]`` and
``key_age[B, T]`` int64 from ``swar_bench.tasks.oracle.annotate``, ``n_writes[B]`` and ``seed[B]``
int64. A filler batch (one PAD row, ``seed`` -1) keeps data-parallel ranks in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

FILLER_SEED = -1

# A batch key, built in the main process and sent to the workers:
# (split, n_writes, indices); an empty ``indices`` is a filler batch.
BatchKey = tuple


def collate_examples(
    examples: Sequence[dict], n_writes: int, annotate, params=None
) -> dict[str, torch.Tensor]:
    """Right-pad examples of one N into a contract-3 batch.

    ``examples``: dicts with ``input_ids`` / ``labels`` (int arrays [T_i]) and ``seed``.
    ``annotate``: ``swar_bench.tasks.oracle.annotate`` (``input_ids -> (answer_kind, key_age)``).
    Returns int64 tensors ``input_ids``, ``labels``, ``answer_kind``, ``key_age`` [B, T_max],
    ``n_writes`` and ``seed`` [B]; padding is PAD=0 / -100 / 0 / -1.
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
    return {
        "input_ids": torch.from_numpy(input_ids),
        "labels": torch.from_numpy(labels),
        "answer_kind": torch.from_numpy(answer_kind),
        "key_age": torch.from_numpy(key_age),
        "n_writes": torch.full((B,), n_writes, dtype=torch.int64),
        "seed": torch.tensor([int(e["seed"]) for e in examples], dtype=torch.int64),
    }


def filler_batch(n_writes: int) -> dict[str, torch.Tensor]:
    """One PAD row with no supervised position: keeps ranks in step, adds nothing to metrics."""
    return {
        "input_ids": torch.zeros((1, 1), dtype=torch.int64),
        "labels": torch.full((1, 1), -100, dtype=torch.int64),
        "answer_kind": torch.zeros((1, 1), dtype=torch.int64),
        "key_age": torch.full((1, 1), -1, dtype=torch.int64),
        "n_writes": torch.full((1,), n_writes, dtype=torch.int64),
        "seed": torch.full((1,), FILLER_SEED, dtype=torch.int64),
    }


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

    def __getitem__(self, key: BatchKey) -> dict[str, torch.Tensor]:
        from swar_bench.tasks.oracle import annotate

        split, n_writes, indices = key
        if not indices:
            return filler_batch(n_writes)
        return collate_examples(self.examples(split, n_writes, indices), n_writes, annotate, self.params)
