"""PasskeySwarDataModule: passkey_swar batches, generated on the fly or read from the Hub layout.

The DataModule is here; the batches it serves are built in ``batches.py`` (``collate_examples``,
``PasskeySwarBatches``) and handed out by ``sampling.py`` (the training stream and its sampler,
the evaluation keys), whose names are re-exported here.

Every batch holds one N (``n_writes``) and is a :class:`~swar_bench.datamodules.batches.Batch`
(``input_ids``, ``labels``, ``answer_kind``, ``key_age`` ``[B, T]``, ``n_writes``, ``seed``
``[B]``, all int64; docs/ARCHITECTURE.md, "Hand-offs").

Which example goes where (docs/TASK.md, "Columns": seed = split_seed * 10**12 + N * 10**6
+ index):

- Training: a stream of global steps s = 0, 1, 2, ...; at each step every data-parallel rank
  gets one batch of the same N (``set_train_n``'s choice, else a seeded draw from
  ``train_configs``). The c-th training batch of N on rank r holds the indices
  ``train_index_start + (c * world_size + r) * batch_size + [0, batch_size)``: ranks and steps
  never share an index and no index is skipped. ``train_index_start`` (default 0) gives each
  training seed of a study its own block of indices, so seeds do not share examples. Indices are chosen in the main process (a sampler), so the
  dataloader workers only build what they are told; every (rank, worker) pair therefore builds
  disjoint examples.
- Evaluation: for each N, indices ``0 .. eval_examples - 1``; rank r takes ``r, r + W, ...``
  and batches them. Ranks that end with fewer batches of some N get *filler* batches (one PAD
  row, no supervised position, ``seed`` -1) so every rank runs the same number of steps
  (collectives stay matched) while no example is evaluated twice or dropped.

Resuming: the DataModule's ``state_dict`` holds the training stream's position (steps issued,
per-N batch counters, the batches issued to the loader but not yet consumed, the curriculum's
N). A run killed after step k and resumed from its checkpoint sees the same batches as an
uninterrupted run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_warn
from torch.utils.data import DataLoader

from swar_bench.datamodules.batches import (
    FILLER_SEED,
    Batch,
    BatchKey,
    PasskeySwarBatches,
    collate_examples,
    filler_batch,
)
from swar_bench.datamodules.sampling import (
    EvalBatchSampler,
    TrainBatchSampler,
    TrainLoader,
    TrainStream,
    eval_keys,
)

__all__ = [
    "DEFAULT_EVAL_CONFIGS",
    "DEFAULT_TRAIN_CONFIGS",
    "FILLER_SEED",
    "TASKS",
    "Batch",
    "BatchKey",
    "EvalBatchSampler",
    "PasskeySwarBatches",
    "PasskeySwarDataModule",
    "TrainBatchSampler",
    "TrainLoader",
    "TrainStream",
    "collate_examples",
    "eval_keys",
    "filler_batch",
    "parse_configs",
]

DEFAULT_TRAIN_CONFIGS = (32, 64, 128, 256)
DEFAULT_EVAL_CONFIGS = (32, 64, 128, 256, 512, 1024)


def parse_configs(configs: Sequence[int | str] | int | str, name: str) -> tuple[int, ...]:
    """``[32, "n64", ...]`` -> ``(32, 64, ...)``, checked against the task's N set (32..16384).

    Raises:
        ValueError: an entry that is not an integer N / ``"n<N>"`` in ``ALLOWED_N``, an N given
            twice (``[32, "n32"]``), or an empty list; the message names the value and what is expected.
    """
    from swar_bench.tasks.passkey_swar import ALLOWED_N

    if isinstance(configs, (int, str)):
        configs = [configs]
    read = []
    for c in configs:
        text = str(c).strip()
        digits = text[1:] if text.lower().startswith("n") else text
        if not digits.isdigit() or int(digits) not in ALLOWED_N:
            allowed = ", ".join(str(n) for n in ALLOWED_N)
            raise ValueError(f"{name}: {c!r} is not an allowed N; expected one of {allowed} (or 'n<N>')")
        read.append((c, int(digits)))
    out: list[int] = []
    for c, n in read:  # every entry checked first: a bad one is named before a repeat
        if n in out:  # dropped without a word before: a weight meant by repeating it is not one
            raise ValueError(f"{name}: {c!r} gives N={n} a second time; expected each N once")
        out.append(n)
    if not out:
        raise ValueError(f"{name} is empty; expected at least one N")
    return tuple(out)



TASKS = ("passkey_swar", "mqar")
"""The tasks the DataModule serves (``task``)."""


class PasskeySwarDataModule(pl.LightningDataModule):
    """passkey_swar (or MQAR) for Lightning: bucketed by N, generated or read, exact under DDP, resumable.

    Args:
        task: ``"passkey_swar"`` (the default; every other argument below applies) or
            ``"mqar"``: Zoology's multi-query associative recall (``swar_bench.datamodules.mqar``),
            set by ``mqar``; then the source is always generated, ``train_configs`` /
            ``val_configs`` / ``test_configs`` / ``task_params`` must be left unset (the one
            configuration is ``mqar.num_kv_pairs``), the training stream reads the train
            segment in order (wrapping at its end) and validation and test read the test
            segment (``eval_examples`` of it, at most ``mqar.num_test_examples``).
        mqar: ``swar_bench.datamodules.mqar.MQARData`` fields as a dict (vocab_size,
            input_seq_len, num_kv_pairs, power_a, num_passes, random_non_queries,
            num_train_examples, num_test_examples, train_seed, test_seed, cache_dir); only with
            ``task="mqar"`` (default: Zoology figure 2 at T=64).
        source: ``"generate"`` (default: examples built from the task's seed formula, docs/TASK.md "Columns"; no files),
            a Hub id (e.g. ``irodkin/passkey_swar``) or a local folder in the Hub layout.
        train_configs: N values (ints or ``"n<N>"``) drawn for training (default 32..256).
        val_configs: N values validated (any of the task's 32..16384).
        test_configs: N values tested (any of the task's 32..16384).
        batch_size: examples per batch per rank.
        eval_batch_size: examples per evaluation batch per rank (None, the default: ``batch_size``).
        num_workers: dataloader worker processes.
        examples_per_epoch: training examples per epoch over all ranks (batches per epoch per
            rank = examples_per_epoch // (batch_size * world_size), at least 1).
        eval_examples: examples per N in validation / test (the release's 1,000; fewer for quick runs).
            A stored split with fewer gives all it has, with one warning (``rank_zero_warn``)
            naming the split, the number asked and the number available.
        seed: seeds the per-step draw of N from ``train_configs`` (the examples themselves
            come from the task's seed formula, docs/TASK.md "Columns").
        train_index_start: the first index of the seed formula the training stream reads (default
            0): runs with different starts train on disjoint examples as long as each reads fewer
            than the gap between the starts (a study gives seed s the block starting at
            ``s * 100,000``). For a stored split the index wraps around its size.
        task_params: ``PasskeySwarParams`` fields as a dict (default: the release's parameters).

    Raises:
        ValueError: an unknown ``task``; with ``task="mqar"``, a passkey_swar argument that is set
            or MQAR fields that ``MQARData`` refuses; ``mqar`` without ``task="mqar"``; an N
            outside the task's N set (32..16384), a non-positive size (``batch_size``,
            ``eval_batch_size``, ``examples_per_epoch``, ``eval_examples``), a negative
            ``num_workers``, a ``train_index_start`` outside ``[0, 10**6)``.
    """

    def __init__(
        self,
        source: str = "generate",
        train_configs: Sequence[int | str] = DEFAULT_TRAIN_CONFIGS,
        val_configs: Sequence[int | str] = DEFAULT_EVAL_CONFIGS,
        test_configs: Sequence[int | str] = DEFAULT_EVAL_CONFIGS,
        batch_size: int = 32,
        eval_batch_size: int | None = None,
        num_workers: int = 0,
        examples_per_epoch: int = 100_000,
        eval_examples: int = 1000,
        seed: int = 0,
        task_params: dict[str, Any] | None = None,
        train_index_start: int = 0,
        task: str = "passkey_swar",
        mqar: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if task not in TASKS:
            raise ValueError(f"task={task!r} is invalid; expected one of {', '.join(TASKS)}")
        self.task = task
        self.mqar = None
        if task == "mqar":
            from swar_bench.datamodules.mqar import MQARData

            given = [
                name for name, value, default in (
                    ("train_configs", train_configs, DEFAULT_TRAIN_CONFIGS),
                    ("val_configs", val_configs, DEFAULT_EVAL_CONFIGS),
                    ("test_configs", test_configs, DEFAULT_EVAL_CONFIGS),
                ) if tuple(value if not isinstance(value, (int, str)) else [value]) != default
            ]
            given += ["task_params"] if task_params else []
            given += ["source"] if source != "generate" else []
            if given:
                raise ValueError(
                    f"{given[0]} is passkey_swar's; expected it unset with task=mqar (MQAR is set by mqar: "
                    "vocab_size, input_seq_len, num_kv_pairs, ...)"
                )
            self.mqar = MQARData.from_mapping(mqar)
            train_configs = val_configs = test_configs = [self.mqar.num_kv_pairs]
        elif mqar is not None:
            raise ValueError("mqar is set but task=passkey_swar; expected task: mqar with it (or no mqar)")
        self.source = source
        if self.mqar is None:
            self.train_configs = parse_configs(train_configs, "train_configs")
            self.val_configs = parse_configs(val_configs, "val_configs")
            self.test_configs = parse_configs(test_configs, "test_configs")
        else:
            self.train_configs = self.val_configs = self.test_configs = (self.mqar.num_kv_pairs,)
        for name, value in (("batch_size", batch_size), ("examples_per_epoch", examples_per_epoch), ("eval_examples", eval_examples)):
            if int(value) < 1:
                raise ValueError(f"{name}={value} is invalid; expected a positive integer")
        if eval_batch_size is not None and int(eval_batch_size) < 1:
            raise ValueError(f"eval_batch_size={eval_batch_size} is invalid; expected a positive integer")
        if num_workers < 0:
            raise ValueError(f"num_workers={num_workers} is invalid; expected >= 0")
        if isinstance(train_index_start, bool) or not isinstance(train_index_start, int) or not 0 <= train_index_start < 10**6:
            raise ValueError(
                f"train_index_start={train_index_start!r} is invalid; expected an integer in [0, 1000000) "
                '(an index of the task\'s seed formula, docs/TASK.md "Columns")'
            )
        self.batch_size = int(batch_size)
        self.eval_batch_size = int(batch_size if eval_batch_size is None else eval_batch_size)
        self.num_workers = int(num_workers)
        self.examples_per_epoch = int(examples_per_epoch)
        self.eval_examples = int(eval_examples)
        self.seed = int(seed)
        self.params = None
        if task_params:
            from swar_bench.tasks.passkey_swar import PasskeySwarParams

            if not isinstance(task_params, dict):
                raise ValueError(f"task_params={task_params!r} is invalid; expected a mapping of PasskeySwarParams fields")
            fields = set(PasskeySwarParams.__dataclass_fields__)
            unknown = sorted(set(task_params) - fields)
            if unknown:
                raise ValueError(
                    f"task_params has unknown field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(fields))}"
                )
            self.params = PasskeySwarParams(**task_params)
        if source != "generate":
            from swar_bench.tasks.hub_io import resolve_source

            # one reading, at once: a missing local path fails here, not after Hub retries
            folder = resolve_source(source, "--data.source")
            source = folder if folder is not None else os.fspath(source)
            self.source = source
        if source != "generate" and os.path.isdir(source):
            from swar_bench.tasks.hub_io import folder_params

            # a local folder records the parameters its data was generated with (params.json);
            # task_params that differ from that record are a one-line error
            self.params = folder_params(source, self.params, option="--data.task_params")
        if self.mqar is not None:
            from swar_bench.datamodules.mqar import MQARBatches

            self.dataset = MQARBatches(self.mqar)
        else:
            self.dataset = PasskeySwarBatches(source, self.params)
        if self.mqar is None and source == "generate" and train_index_start + self.batch_size > 10**6:
            # generated training data reads indices train_index_start + ... of the seed formula: not
            # even one batch fits (the sampler said so only at the first training step, a traceback)
            lead = (f"batch_size={self.batch_size}" if train_index_start == 0 else
                    f"train_index_start={train_index_start} (with batch_size={self.batch_size})")
            raise ValueError(
                f"{lead}: one training batch passes the 1,000,000 indices per N of the task's seed formula "
                f"(docs/TASK.md, \"Columns\"); expected train_index_start + batch_size <= 1000000")
        self.train_index_start = train_index_start
        self.stream = TrainStream(self.train_configs, self.batch_size, 1, self.seed, train_index_start)
        self._pending_state: dict[str, Any] | None = None
        self._capped: set[tuple[str, int]] = set()  # (split, N) already warned of

    # ------------------------------------------------------------------ ranks

    def _rank_world(self) -> tuple[int, int]:
        trainer = self.trainer
        if trainer is not None:
            kwargs = getattr(trainer.strategy, "distributed_sampler_kwargs", None)
            if kwargs:
                return int(kwargs["rank"]), int(kwargs["num_replicas"])
            return 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        return 0, 1

    # ------------------------------------------------------------------ curriculum

    def set_train_n(self, n_writes: int) -> None:
        """Serve N = ``n_writes`` in the next training batches (the hook ``LengthCurriculum`` calls).

        Takes effect from the next batch the sampler issues: with ``num_workers=0`` the very next
        training batch; with workers, batches already prefetched (up to ``num_workers *
        prefetch_factor``) keep their N. Raises ValueError for an N outside the task's N set
        (32..16384), or with ``task="mqar"`` (one configuration, no curriculum).
        """
        if self.mqar is not None:
            raise ValueError(f"set_train_n({n_writes!r}): task=mqar has one configuration; expected task=passkey_swar")
        self.stream.train_n = parse_configs([n_writes], "set_train_n")[0]

    # ------------------------------------------------------------------ source check

    def _splits_needed(self) -> list[tuple[str, tuple[int, ...]]]:
        """(split, configs) the attached Trainer's current call reads (all of them without one)."""
        everything = [("train", self.train_configs), ("validation", self.val_configs), ("test", self.test_configs)]
        trainer = self.trainer
        if trainer is None:
            return everything
        fn = str(getattr(trainer.state.fn, "value", trainer.state.fn))
        if fn == "fit":
            needed = [("train", self.train_configs)]
            if trainer.limit_val_batches != 0:
                needed.append(("validation", self.val_configs))
            return needed
        if fn == "validate":
            return [("validation", self.val_configs)]
        if fn in ("test", "predict"):
            return [("test", self.test_configs)]
        return everything

    def prepare_data(self) -> None:
        """Open every split of a stored ``source`` the coming run reads (nothing for ``"generate"``).

        Lightning calls this before the logger or any callback writes, so a missing folder,
        config or split (or an unreachable Hub) ends the run before it leaves a log folder behind.

        With ``task="mqar"``: generate (or read from ``mqar.cache_dir``) the two segments, writing
        the cache file when there is none, so the other ranks read it in ``setup``.

        Raises:
            swar_bench.tasks.hub_io.DataSourceError (a ValueError): as ``load_split``, one line
                naming the source, config and split; for a local folder that is not a complete
                release (``release_report``: metadata files missing or wrong), one line naming
                what. CorruptDataError: a split file whose bytes differ from ``checksums.json``.
            OSError: the MQAR cache file cannot be written.
        """
        if self.mqar is not None:
            self.dataset.load()
            return
        if self.source == "generate":
            return
        if os.path.isdir(self.source):
            from swar_bench.tasks.hub_io import DataSourceError, release_report

            # the cheap checks before a run reads a local folder (README.md, vocab.json,
            # params.json, checksums.json present and consistent); each split file's bytes are
            # compared with checksums.json when it is read (load_split)
            report = release_report(self.source, checksums=False)
            if report is not None:
                raise DataSourceError(f"--data.source={self.source}: {report}")
        for split, configs in self._splits_needed():
            for n in configs:
                self.dataset.split_size(split, n)

    def setup(self, stage: str) -> None:
        """Every rank: hold the MQAR segments in memory before the loaders fork their workers
        (read from the cache ``prepare_data`` wrote, or generated); nothing for passkey_swar."""
        if self.mqar is not None:
            self.dataset.load()

    # ------------------------------------------------------------------ loaders

    def _loader(self, sampler, cls=DataLoader, **kwargs: Any) -> DataLoader:
        return cls(
            self.dataset,
            batch_size=None,
            sampler=sampler,
            num_workers=self.num_workers,
            persistent_workers=False,
            **kwargs,
        )

    def train_dataloader(self) -> DataLoader:
        rank, world = self._rank_world()
        self.stream.batches_per_epoch = max(1, self.examples_per_epoch // (self.batch_size * world))
        limit = None
        if self.source != "generate" or self.mqar is not None:
            limit = min(self.dataset.split_size("train", n) for n in self.train_configs)
        return self._loader(TrainBatchSampler(self.stream, rank, world, limit), TrainLoader, stream=self.stream)

    def _eval_loader(self, split: str, configs: tuple[int, ...]) -> DataLoader:
        rank, world = self._rank_world()
        counts = {}
        for n in configs:
            size = self.dataset.split_size(split, n)
            counts[n] = self.eval_examples if size is None else min(size, self.eval_examples)
            if size is not None and size < self.eval_examples and (split, n) not in self._capped:
                self._capped.add((split, n))  # once per split and N, not at every epoch
                rank_zero_warn(self._capped_line(split, n, size))
        keys = eval_keys(split, configs, counts, self.eval_batch_size, rank, world)
        return self._loader(EvalBatchSampler(keys))

    def _capped_line(self, split: str, n: int, size: int) -> str:
        """The warning that ``split`` holds fewer than ``eval_examples`` examples, in the task's
        terms: a stored split of config ``n{N}``, or MQAR's test segment (validation and test)."""
        if self.mqar is not None:
            return (f"eval_examples={self.eval_examples}: the MQAR test segment ({split} reads it) has {size} "
                    f"examples (mqar.num_test_examples={self.mqar.num_test_examples}); evaluating those {size}")
        return (f"eval_examples={self.eval_examples}: the {split} split of n{n} in {self.source} has {size} "
                f"examples; evaluating those {size}")

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("validation", self.val_configs)

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test", self.test_configs)

    def predict_dataloader(self) -> DataLoader:
        return self._eval_loader("test", self.test_configs)

    # ------------------------------------------------------------------ consumption / resume

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        trainer = self.trainer
        if trainer is not None and trainer.training:
            self.stream.consume(batch.n)
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {"train_stream": self.stream.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the training stream from a checkpoint, when fitting. ``test``, ``validate`` and
        ``predict`` read the evaluation splits only: the stream's settings (batch size, seed, first
        index) are not checked against theirs."""
        trainer = self.trainer
        if trainer is not None and trainer.state.fn is not None and trainer.state.fn != "fit":
            return
        self.stream.load_state_dict(state_dict["train_stream"])
