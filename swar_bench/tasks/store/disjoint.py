"""The split-disjointness check (docs/TASK.md, "Sanity checks"): no example in two splits."""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence

import numpy as np

from swar_bench.tasks.store.checksums import check_checksums
from swar_bench.tasks.store.layout import card_splits, parse_config
from swar_bench.tasks.store.parquet import arrow_table, check_parquet
from swar_bench.tasks.store.read import load_split, read_local_table
from swar_bench.tasks.store.source import resolve_source


def example_hashes(ds) -> np.ndarray:
    """BLAKE2b-128 of each example's ``input_ids`` (as int16 bytes), in order: ``object [B]``
    of ``bytes``. ``ds``: a ``datasets.Dataset`` or a pyarrow Table with an ``input_ids`` column."""
    table = arrow_table(ds)
    out = []
    for chunk in table.column("input_ids").chunks:
        offsets = chunk.offsets.to_numpy()
        values = chunk.values.to_numpy(zero_copy_only=False).astype(np.int16, copy=False)
        data = values.tobytes()
        for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
            out.append(hashlib.blake2b(data[2 * lo : 2 * hi], digest_size=16).digest())
    return np.array(out, dtype=object)


def shared_examples(hashes: dict[str, np.ndarray]) -> dict[tuple[str, str], int]:
    """Number of identical examples for each pair of splits (``{split: hashes}``) that share any."""
    sets = {split: set(h.tolist()) for split, h in hashes.items()}
    names = sorted(sets)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = len(sets[a] & sets[b])
            if shared:
                out[(a, b)] = shared
    return out


def check_disjoint(
    source: str | os.PathLike,
    configs: Sequence[str],
    splits: Sequence[str] | None = None,
    cache_dir: str | None = None,
) -> dict:
    """Split-disjointness check (docs/TASK.md, "Sanity checks"): for each config, hash every example's
    ``input_ids`` in each available split and count examples shared between splits.

    Returns:
        ``{config: {(split_a, split_b): n_shared}}`` with only the non-empty pairs; ``{}`` when
        every config's splits are disjoint.

    Raises:
        DataSourceError: a local parquet file is unreadable (names the file), or a Hub split
            cannot be loaded.
    """
    folder = resolve_source(source)
    report = {}
    for config in configs:
        n = parse_config(config)
        hashes = {}
        for split in splits or card_splits(n):
            if folder is not None:  # read the parquet directly: no cache copy
                pattern = os.path.join(folder, config, f"{split}-*.parquet")
                files = sorted(glob.glob(pattern))
                check_checksums(folder, files)  # first: the bytes on disk are the ones written
                for path in files:
                    check_parquet(path)
                if files:  # every column decoded: an unreadable one is a fault of the data
                    hashes[split] = example_hashes(read_local_table(files))
            else:
                hashes[split] = example_hashes(
                    load_split(source, config, split, cache_dir=cache_dir)
                )
        shared = shared_examples(hashes)
        if shared:
            report[config] = shared
    return report
