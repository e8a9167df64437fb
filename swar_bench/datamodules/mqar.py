"""MQAR batches for the harness: Zoology's train and test segments, generated once, cached.

``PasskeySwarDataModule(task="mqar", mqar={...})`` serves these batches through its samplers
(ranks, resume, the training stream) exactly as it serves stored passkey_swar splits: the
training stream reads example indices ``0, 1, 2, ...`` of the train segment in order, wrapping
at its end (Zoology's loader does not shuffle either); validation and test both read the test
segment (Zoology validates on its test set and early-stops on that accuracy).

A segment is :func:`swar_bench.tasks.mqar.multiquery_ar` with the segment's seed and size;
Zoology's figure 2 draws its two seeds from ``np.random.seed(123)`` (``DataConfig.seed``) in
``zoology/data/utils.py::prepare_data``: ``randint(0, 2**31)`` for train, 843828734, and
``randint(2**31, 2**32)`` for test, 3062119789 -- the defaults here.

Batches are :class:`swar_bench.datamodules.batches.Batch` (docs/ARCHITECTURE.md, "Hand-offs"), int64 ``[B, T]``:

* ``input_ids``: the example;
* ``labels``: in the harness's Hugging Face convention, ``labels[:, t + 1]`` = Zoology's
  ``labels[:, t]`` (the value answering the query at ``t``), -100 elsewhere; Zoology's last
  position is never supervised (queries sit at even offsets before ``T - 1``), so nothing is lost;
* ``answer_kind``: ``oracle.AR_VALID`` where a label is set (every MQAR answer is a recall), else 0;
* ``key_age``: aligned with ``labels``, the query's gap in tokens back to its key
  (:func:`swar_bench.tasks.mqar.query_gaps`), -1 elsewhere;
* ``n_writes`` ``[B]``: ``num_kv_pairs`` (the batch's configuration); ``seed`` ``[B]``: the
  example's index in its segment.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from swar_bench.datamodules.batches import Batch, filler_batch
from swar_bench.tasks.mqar import IGNORE_INDEX, MQARParams, multiquery_ar, query_gaps

ZOOLOGY_TRAIN_SEED = 843828734
ZOOLOGY_TEST_SEED = 3062119789
CACHE_VERSION = 1  # bump when the cached arrays' meaning changes


@dataclass(frozen=True)
class MQARData:
    """The MQAR data of a run: one train and one test segment (Zoology figure 2's defaults).

    Args:
        vocab_size, input_seq_len, num_kv_pairs, power_a, num_passes, random_non_queries: as
            :class:`swar_bench.tasks.mqar.MQARParams`, shared by both segments.
        num_train_examples / num_test_examples: segment sizes (Zoology: 100,000 / 3,000).
        train_seed / test_seed: the segments' seeds (Zoology figure 2's, module docstring).
        cache_dir: a folder for ``mqar-<hash>.npz`` holding both segments (written atomically,
            reused by later runs with the same parameters); None keeps them in memory only.

    Raises:
        ValueError: as ``MQARParams`` for either segment (one line), or a ``cache_dir`` that is
            not a string.
    """

    vocab_size: int = 8192
    input_seq_len: int = 64
    num_kv_pairs: int = 4
    power_a: float = 0.01
    num_passes: int = 1
    random_non_queries: bool = False
    num_train_examples: int = 100_000
    num_test_examples: int = 3_000
    train_seed: int = ZOOLOGY_TRAIN_SEED
    test_seed: int = ZOOLOGY_TEST_SEED
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        self.segment("train")
        self.segment("test")
        if self.cache_dir is not None and not isinstance(self.cache_dir, (str, os.PathLike)):
            raise ValueError(f"MQAR cache_dir={self.cache_dir!r}: expected a folder path or null")

    @classmethod
    def from_mapping(cls, fields: Mapping[str, Any] | None) -> MQARData:
        """``MQARData(**fields)`` with a one-line ValueError for a non-mapping or unknown keys."""
        if fields is None:
            return cls()
        if not isinstance(fields, Mapping):
            raise ValueError(f"mqar={fields!r} is invalid; expected a mapping of MQAR fields")  # noqa: TRY004 - bad user input
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(
                f"mqar has unknown field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
            )
        return cls(**dict(fields))

    def segment(self, split: str) -> MQARParams:
        """The ``MQARParams`` of ``"train"``, or of ``"validation"`` / ``"test"`` (the test segment)."""
        train = split == "train"
        return MQARParams(
            vocab_size=self.vocab_size,
            num_examples=self.num_train_examples if train else self.num_test_examples,
            input_seq_len=self.input_seq_len,
            seed=self.train_seed if train else self.test_seed,
            power_a=self.power_a,
            num_kv_pairs=self.num_kv_pairs,
            num_passes=self.num_passes,
            random_non_queries=self.random_non_queries,
        )

    def cache_path(self) -> str | None:
        """``<cache_dir>/mqar-<16 hex digits>.npz``, the digest of the segments' parameters."""
        if self.cache_dir is None:
            return None
        key = {k: v for k, v in asdict(self).items() if k != "cache_dir"}
        key["version"] = CACHE_VERSION
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
        return os.path.join(os.fspath(self.cache_dir), f"mqar-{digest}.npz")


def _segment_arrays(params: MQARParams) -> dict[str, np.ndarray]:
    inputs, labels = multiquery_ar(**asdict(params))
    gaps = query_gaps(inputs, labels, params.num_kv_pairs, params.num_passes)
    return {"inputs": inputs, "labels": labels, "gaps": gaps}


class MQARBatches(Dataset):
    """Map-style dataset of whole MQAR batches, addressed like ``PasskeySwarBatches`` by
    ``(split, n_writes, indices)`` (indices wrap at the segment's size; empty: a filler batch).

    The segments are generated (or read from ``cache_dir``) on first use and kept in memory:
    about 25 s and 3 x 8 bytes x ``num_examples x input_seq_len`` for Zoology's 100,000 x 64.
    """

    def __init__(self, data: MQARData) -> None:
        self.data = data
        self._arrays: dict[str, dict[str, np.ndarray]] | None = None
        self.load_seconds: float | None = None  # generation or cache read time, once loaded

    def load(self) -> dict[str, dict[str, np.ndarray]]:
        """Both segments, ``{"train"|"test": {"inputs", "labels", "gaps"}}`` (int64 ``[N, T]``);
        read from the cache file when it exists, else generated and (with ``cache_dir``) written
        to it atomically. A cache file that cannot be read is regenerated and replaced.

        Raises:
            OSError: the cache file cannot be written (the message names it).
        """
        if self._arrays is not None:
            return self._arrays
        start = time.perf_counter()
        path = self.data.cache_path()
        arrays = None
        if path is not None and os.path.exists(path):
            try:
                with np.load(path) as stored:
                    arrays = {
                        split: {name: stored[f"{split}_{name}"].astype(np.int64) for name in ("inputs", "labels", "gaps")}
                        for split in ("train", "test")
                    }
            except (OSError, KeyError, ValueError):
                arrays = None
        if arrays is None:
            arrays = {split: _segment_arrays(self.data.segment(split)) for split in ("train", "test")}
            if path is not None:
                from swar_bench.utils.files import atomic_path

                small = np.int16 if self.data.vocab_size <= np.iinfo(np.int16).max else np.int32
                with atomic_path(path) as tmp, open(tmp, "wb") as handle:
                    np.savez(handle, **{
                        f"{split}_{name}": value.astype(small)
                        for split, named in arrays.items() for name, value in named.items()
                    })
        self._arrays = arrays
        self.load_seconds = time.perf_counter() - start
        return arrays

    def _split(self, split: str) -> dict[str, np.ndarray]:
        return self.load()["train" if split == "train" else "test"]

    def split_size(self, split: str, n_writes: int) -> int:
        """Examples in ``split``'s segment (validation and test share the test segment)."""
        return self.data.num_train_examples if split == "train" else self.data.num_test_examples

    def batch(self, split: str, indices: Sequence[int]) -> Batch:
        """The :class:`Batch` of ``indices`` (taken modulo the segment's size); see the module."""
        arrays = self._split(split)
        size = len(arrays["inputs"])
        rows = np.asarray([int(i) % size for i in indices], dtype=np.int64)
        inputs = arrays["inputs"][rows]
        zoology_labels = arrays["labels"][rows]
        labels = np.full_like(zoology_labels, IGNORE_INDEX)
        labels[:, 1:] = zoology_labels[:, :-1]
        key_age = np.full_like(labels, -1)
        key_age[:, 1:] = np.where(zoology_labels[:, :-1] != IGNORE_INDEX, arrays["gaps"][rows][:, :-1], -1)
        from swar_bench.tasks.oracle import AR_VALID

        answer_kind = np.where(labels != IGNORE_INDEX, AR_VALID, 0).astype(np.int64)
        B = len(rows)
        return Batch(
            input_ids=torch.from_numpy(np.ascontiguousarray(inputs)),
            labels=torch.from_numpy(labels),
            answer_kind=torch.from_numpy(answer_kind),
            key_age=torch.from_numpy(key_age),
            n_writes=torch.full((B,), self.data.num_kv_pairs, dtype=torch.int64),
            seed=torch.from_numpy(rows.copy()),
        )

    def __getitem__(self, key: tuple) -> Batch:

        split, n_writes, indices = key
        if not indices:
            return filler_batch(n_writes)
        return self.batch(split, indices)
