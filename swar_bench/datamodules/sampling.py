"""Which example goes to which rank and step: the resumable training stream and its sampler,
and the evaluation batches of each rank (``swar_bench.datamodules.passkey_swar``'s docstring
gives the index rules)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from torch.utils.data import DataLoader, DistributedSampler

from swar_bench.datamodules.batches import BatchKey


class TrainStream:
    """Position of the training stream (shared by the sampler and the DataModule, main process).

    All ranks hold the same stream state (the N of step s does not depend on the rank), so the
    state saved by rank 0 resumes every rank.
    """

    def __init__(
        self, train_configs: tuple[int, ...], batch_size: int, batches_per_epoch: int, seed: int, index_start: int = 0
    ) -> None:
        self.train_configs = train_configs
        self.batch_size = batch_size
        self.batches_per_epoch = batches_per_epoch
        self.seed = seed
        self.index_start = index_start  # first index of the seed formula this stream reads
        self.train_n: int | None = None
        self.issued = 0  # steps handed to the loader
        self.consumed = 0  # steps that reached training_step
        self.counters: dict[int, int] = {}  # batches of each N issued
        self.pending: deque[tuple[int, int, int]] = deque()  # (step, N, counter) issued, not consumed
        self.world_size = 1  # data-parallel ranks the counters were drawn with

    def next_n(self, step: int) -> int:
        if self.train_n is not None:
            return self.train_n
        rng = np.random.default_rng([self.seed, step])
        return int(self.train_configs[rng.integers(len(self.train_configs))])

    def set_world_size(self, world_size: int) -> None:
        """Continue the stream on ``world_size`` ranks (a resume on a different number of devices).

        The c-th batch of N on W ranks spans the index block ``[c * W * B, (c + 1) * W * B)``, so
        the counters are moved past every index already issued: the new blocks never overlap the
        old ones. Batches issued but not yet trained on are dropped (their indices stay unused).
        """
        if world_size == self.world_size:
            return
        if self.issued:
            import warnings

            warnings.warn(
                f"resuming the training stream on {world_size} ranks (it was drawn on {self.world_size}): "
                f"{len(self.pending)} in-flight batch(es) are skipped to keep examples disjoint",
                stacklevel=2,
            )
            self.counters = {n: -(-c * self.world_size // world_size) for n, c in self.counters.items()}
            self.pending.clear()
            self.issued = self.consumed
        self.world_size = world_size

    def issue(self) -> tuple[int, int, int]:
        step = self.issued
        n = self.next_n(step)
        c = self.counters.get(n, 0)
        self.counters[n] = c + 1
        self.issued += 1
        entry = (step, n, c)
        self.pending.append(entry)
        return entry

    def consume(self, n_writes: int) -> None:
        if not self.pending:
            raise RuntimeError("a training batch arrived that the sampler never issued")
        step, n, _ = self.pending.popleft()
        if n != n_writes:
            raise RuntimeError(f"training stream out of order: expected a batch of N={n} at step {step}, got N={n_writes}")
        self.consumed = step + 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "issued": self.issued,
            "consumed": self.consumed,
            "counters": {int(k): int(v) for k, v in self.counters.items()},
            "pending": [list(p) for p in self.pending],
            "train_n": self.train_n,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "index_start": self.index_start,
            "world_size": self.world_size,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["batch_size"] != self.batch_size or state["seed"] != self.seed:
            raise ValueError(
                f"checkpoint's data stream used batch_size={state['batch_size']}, seed={state['seed']}; "
                f"this run has batch_size={self.batch_size}, seed={self.seed}: resume with the same data settings"
            )
        start = int(state.get("index_start", 0))  # checkpoints written before the option read from 0
        if start != self.index_start:
            raise ValueError(
                f"checkpoint's data stream read training indices from {start}; this run has "
                f"train_index_start={self.index_start}: resume with the same data settings"
            )
        self.issued = int(state["issued"])
        self.consumed = int(state["consumed"])
        self.counters = {int(k): int(v) for k, v in state["counters"].items()}
        self.pending = deque(tuple(p) for p in state["pending"])
        self.train_n = state["train_n"]
        self.world_size = int(state.get("world_size", 1))


class TrainBatchSampler(DistributedSampler):
    """Yields the training ``BatchKey``s of one rank, one epoch at a time (main process).

    A ``DistributedSampler`` subclass so Lightning does not wrap it again: it already shards
    by rank (see the module docstring for the index formula).
    """

    def __init__(self, stream: TrainStream, rank: int, world_size: int, limit: int | None) -> None:
        self.stream = stream
        self.rank = rank
        self.num_replicas = world_size
        self.limit = limit  # examples available per N (None: generated, bounded by the seed formula)
        self.epoch = 0

    def _indices(self, n: int, counter: int) -> tuple[int, ...]:
        start = self.stream.index_start + (counter * self.num_replicas + self.rank) * self.stream.batch_size
        stop = start + self.stream.batch_size
        if self.limit is None and stop > 10**6:
            raise ValueError(  # a setting's fault, one line (exit 2), not a crash
                f"the training stream for N={n} used all 1,000,000 indices of the task's seed formula "
                '(split_seed * 10**12 + N * 10**6 + index; docs/TASK.md, "Columns") from train_index_start='
                f"{self.stream.index_start} with batch_size={self.stream.batch_size} on {self.num_replicas} "
                "rank(s); expected fewer steps (examples_per_epoch x max_epochs), a smaller batch_size or "
                "train_index_start, or more train_configs"
            )
        return tuple(range(start, stop))

    def __len__(self) -> int:
        return self.stream.batches_per_epoch

    def __iter__(self) -> Iterator[BatchKey]:
        s = self.stream
        s.set_world_size(self.num_replicas)  # here: Lightning restores the stream after building the loader
        epoch_end = (s.consumed // s.batches_per_epoch + 1) * s.batches_per_epoch
        # batches issued before a checkpoint but never trained on come first, in order
        replay = list(s.pending)
        for step, n, c in replay:
            if step >= epoch_end:
                break
            yield ("train", n, self._indices(n, c))
        while s.issued < epoch_end:
            step, n, c = s.issue()
            yield ("train", n, self._indices(n, c))


class TrainLoader(DataLoader):
    """The training DataLoader, stateful for Lightning's loop checkpointing: its state is the
    training stream's (the same object the DataModule's ``state_dict`` saves)."""

    def __init__(self, *args: Any, stream: TrainStream, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stream = stream

    def state_dict(self) -> dict[str, Any]:
        return self.stream.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.stream.load_state_dict(state_dict)


class EvalBatchSampler(DistributedSampler):
    """Yields one rank's evaluation ``BatchKey``s: exact sharding, equal counts via fillers."""

    def __init__(self, keys: list[BatchKey]) -> None:
        self.keys = keys
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[BatchKey]:
        return iter(self.keys)


def eval_keys(
    split: str, configs: Sequence[int], num_examples: dict[int, int], batch_size: int, rank: int, world_size: int
) -> list[BatchKey]:
    """Rank ``rank``'s evaluation batches: indices ``rank, rank + W, ...`` of each N, in batches
    of ``batch_size``, then filler keys up to the largest batch count of any rank for that N."""
    keys: list[BatchKey] = []
    for n in configs:
        total = num_examples[n]
        per_rank = [list(range(r, total, world_size)) for r in range(world_size)]
        n_batches = max(math.ceil(len(ix) / batch_size) for ix in per_rank)
        mine = per_rank[rank]
        for b in range(n_batches):
            chunk = tuple(mine[b * batch_size : (b + 1) * batch_size])
            keys.append((split, n, chunk))
    return keys
