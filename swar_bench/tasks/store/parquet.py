"""A split file's format: the release's columns as parquet (docs/TASK.md, "Columns"), from a
generated batch to a pyarrow Table and from a Table back to examples, and the footer checks
that say whether a file is a finished split."""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from swar_bench.tasks.passkey_swar import FlatBatch
from swar_bench.tasks.store.errors import CorruptDataError, DataSourceError, first_line
from swar_bench.tasks.store.layout import COLUMNS

_ANSWER_DICT = ("ar_expired", "ar_valid", "passkey")


def arrow_schema():
    """The release's columns as a pyarrow schema (docs/TASK.md, "Columns")."""
    import pyarrow as pa

    return pa.schema(
        [
            ("input_ids", pa.list_(pa.int16())),
            ("labels", pa.list_(pa.int16())),
            ("answer_type", pa.list_(pa.string())),
            ("n_writes", pa.int64()),
            ("seed", pa.int64()),
        ]
    )


def flat_to_table(flat: FlatBatch):
    """A generated batch as a pyarrow Table with the release's schema (no per-example copies)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    B = len(flat)
    offsets = flat.offsets.astype(np.int32)
    input_ids = pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(flat.input_ids, type=pa.int16())
    )
    labels = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.labels, type=pa.int16()))
    q_total = np.diff(flat.query_offsets)
    at_offsets = (flat.query_offsets + 4 * np.arange(B + 1)).astype(np.int32)  # queries + 4 passkey
    codes = np.full(int(at_offsets[-1]), 2, dtype=np.int8)
    query_rows = np.arange(int(flat.query_offsets[-1])) + 4 * np.repeat(np.arange(B), q_total)
    codes[query_rows] = flat.answer_valid
    names = pc.take(pa.array(list(_ANSWER_DICT), type=pa.string()), pa.array(codes))
    answer_type = pa.ListArray.from_arrays(pa.array(at_offsets), names)
    return pa.Table.from_arrays(
        [
            input_ids,
            labels,
            answer_type,
            pa.array(np.full(B, flat.n_writes, dtype=np.int64)),
            pa.array(flat.seeds.astype(np.int64)),
        ],
        schema=arrow_schema(),
    )


def finished_split(path: str | os.PathLike, num_examples: int) -> bool:
    """``path`` is a complete split file of ``num_examples`` examples with the release's columns (docs/TASK.md, "Columns")
    (a file that exists was renamed into place whole, see :func:`write_split`; the footer is read,
    not the data)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(os.fspath(path))
        names = meta.schema.to_arrow_schema().names
    except (OSError, ValueError, pa.ArrowException):  # missing, or not parquet: not finished
        return False
    return meta.num_rows == num_examples and all(c in names for c in COLUMNS)


def check_parquet(path: str | os.PathLike) -> None:
    """Check that ``path`` is a readable parquet file with the release's columns (docs/TASK.md, "Columns") and at least one
    example (footer only, no data pages are read).

    Raises:
        CorruptDataError: unreadable or not parquet (names the file). DataSourceError: columns
            other than the release's :data:`COLUMNS`, or no rows.
    """
    import pyarrow.parquet as pq

    path = os.fspath(path)
    try:
        meta = pq.read_metadata(path)
        names = meta.schema.to_arrow_schema().names
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError; report one sentence
        raise CorruptDataError(
            f"{path}: not a readable parquet file ({first_line(exc)}); expected a file written "
            "by `swar-bench data generate` or downloaded from the Hub"
        ) from exc
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise DataSourceError(f"{path} lacks columns {missing}: expected {list(COLUMNS)}")
    if meta.num_rows == 0:
        raise DataSourceError(
            f"{path}: the split file has no examples (0 rows); expected at least one "
            "(write it again with `swar-bench data generate`)"
        )


def arrow_table(ds):
    """The pyarrow Table behind a ``datasets.Dataset`` (row selections applied), or ``ds``
    itself when it is already a pyarrow Table."""
    if not hasattr(ds, "data"):
        return ds
    if getattr(ds, "_indices", None) is not None:
        ds = ds.flatten_indices()
    return ds.data.table


def iter_examples(ds, batch_size: int = 256) -> Iterable[dict]:
    """Examples of a ``datasets.Dataset`` (or pyarrow Table) as dicts of numpy arrays, in order."""
    table = arrow_table(ds)
    for batch in table.to_batches(max_chunksize=batch_size):
        cols = {name: batch.column(name) for name in COLUMNS}
        ids_off = cols["input_ids"].offsets.to_numpy()
        ids_val = cols["input_ids"].values.to_numpy(zero_copy_only=False)
        lab_off = cols["labels"].offsets.to_numpy()
        lab_val = cols["labels"].values.to_numpy(zero_copy_only=False)
        types = cols["answer_type"].to_pylist()
        n_writes = cols["n_writes"].to_numpy()
        seeds = cols["seed"].to_numpy()
        for i in range(batch.num_rows):
            yield {
                "input_ids": ids_val[ids_off[i] : ids_off[i + 1]],
                "labels": lab_val[lab_off[i] : lab_off[i + 1]],
                "answer_type": types[i],
                "n_writes": int(n_writes[i]),
                "seed": int(seeds[i]),
            }
