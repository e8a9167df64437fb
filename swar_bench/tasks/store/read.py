"""Reading one config/split as a ``datasets.Dataset``: a local folder from the bytes on disk
(after its checksums), or the Hub through ``datasets``."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Sequence

from swar_bench.tasks.passkey_swar import SPLIT_SEEDS, PasskeySwarParams
from swar_bench.tasks.store.checksums import check_checksums
from swar_bench.tasks.store.errors import CorruptDataError, DataSourceError, first_line
from swar_bench.tasks.store.layout import COLUMNS, HUB_ID, parse_config
from swar_bench.tasks.store.params_file import folder_params
from swar_bench.tasks.store.parquet import check_parquet
from swar_bench.tasks.store.source import hub_error, reach_hub, resolve_source
from swar_bench.tasks.store.verify import verify_dataset


@contextlib.contextmanager
def _quiet_datasets():
    """Silence the datasets library's own log lines (e.g. "Failed to read schema ...") and its
    "Generating ... split" progress bar while it loads: its failures reach the user once, as
    our one-line DataSourceError. The previous settings are restored."""
    import datasets.utils as ds_utils
    from datasets.utils import logging as ds_logging

    level = ds_logging.get_verbosity()
    bars_off = ds_utils.are_progress_bars_disabled()
    ds_logging.set_verbosity(ds_logging.CRITICAL)
    ds_utils.disable_progress_bars()
    try:
        yield
    finally:
        ds_logging.set_verbosity(level)
        if not bars_off:
            ds_utils.enable_progress_bars()


def read_local_table(files: Sequence[str | os.PathLike], columns: Sequence[str] | None = None):
    """The split files ``files`` as one pyarrow Table, read from the bytes on disk: pyarrow
    directly (no ``datasets`` Arrow cache, which is keyed on path, size and modification time and
    would serve an earlier copy of a changed file; nothing is written under
    ``~/.cache/huggingface``), every column decoded (``columns``: only those), data-page CRCs
    verified where the writer stored them (``page_checksum_verification``), on this thread only
    (``use_threads=False``: a corrupt page raises here instead of aborting the process from a
    reader thread).

    Raises:
        CorruptDataError: a file whose data cannot be decoded (names the file and pyarrow's reason).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for path in files:
        try:
            table = pq.read_table(os.fspath(path), columns=list(columns) if columns else None, use_threads=False,
                                  page_checksum_verification=True, memory_map=False)
            table.validate(full=True)  # offsets and values consistent: a flip can decode into nonsense
        except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ArrowException kinds
            raise CorruptDataError(
                f"{path}: a column cannot be read ({first_line(exc)}); expected a parquet file as "
                "`swar-bench data generate` writes it (run it again to rewrite the file)"
            ) from None
        tables.append(table)
    try:
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    except pa.ArrowInvalid as exc:
        raise CorruptDataError(f"{files[0]}: the split files do not share one schema ({first_line(exc)})") from None


def load_split(
    source: str | os.PathLike = HUB_ID,
    config: str = "n32",
    split: str = "validation",
    verify: bool = False,
    params: PasskeySwarParams | None = None,
    cache_dir: str | None = None,
):
    """Load one config/split as a ``datasets.Dataset`` from the Hub or a local Hub-layout folder.

    Args:
        source: a Hub dataset id ``owner/name`` (default ``irodkin/passkey_swar``) or a local
            folder written by :func:`write_dataset` (or a download of the Hub repository); an
            existing folder is always read as the local folder.
        config: ``"n{N}"``.
        split: ``"train"``, ``"validation"`` or ``"test"``.
        verify: run the oracle (:func:`verify_example`) on every example.
        params: parameters the data was generated with, for verification (default: a local
            folder's record, :func:`folder_params`, else the release's).
        cache_dir: passed to ``datasets.load_dataset`` (the Hub only: a local folder is read
            from the bytes on disk, :func:`read_local_table`, after its files' SHA-256 are
            compared with ``checksums.json``, :func:`check_checksums`; nothing is cached).

    Returns:
        ``datasets.Dataset`` with the release's columns (docs/TASK.md, "Columns").

    Raises:
        DataSourceError: ``source`` an existing file, a missing local path, or neither a
            folder nor a Hub id ``owner/name`` (:func:`resolve_source`, at once, before any
            network access); an unreachable Hub (asked once per run, :func:`reach_hub`) or a
            dataset neither on the Hub nor, offline, in the cache; missing config or split, columns other than the release's,
            a split without examples, or (``verify``) ``params`` other than a local folder's
            record (one sentence). CorruptDataError (a DataSourceError) for a local split file
            whose bytes differ from ``checksums.json`` or whose columns cannot be decoded.
        OracleError: ``verify`` and an example breaks a rule (names its index).
    """
    parse_config(config)
    if split not in SPLIT_SEEDS:
        raise DataSourceError(f"split={split!r}: expected one of {sorted(SPLIT_SEEDS)}")
    import datasets

    source = os.fspath(source)
    folder = resolve_source(source)
    local = folder is not None
    if local:
        source = folder
        files = sorted(glob.glob(os.path.join(source, config, f"{split}-*.parquet")))
        if not files:
            raise DataSourceError(
                f"no file {os.path.join(source, config, split + '-*.parquet')}: expected a folder in the "
                f"Hub layout with config {config} and split {split} (write one with "
                f"`swar-bench data generate --out {source} --configs {config} --splits {split}`)"
            )
        check_checksums(source, files)  # first: the bytes on disk are the ones written
        for path in files:
            check_parquet(path)
        ds = datasets.Dataset(datasets.table.InMemoryTable(read_local_table(files)))
    else:
        reach_hub(source)
        try:
            with _quiet_datasets():
                ds = datasets.load_dataset(source, config, split=split, cache_dir=cache_dir)
        except Exception as exc:
            raise hub_error(
                source, f"config {config!r} split {split!r}: {type(exc).__name__}: {first_line(exc)}"
            ) from exc
    missing = [c for c in COLUMNS if c not in ds.column_names]
    if missing:
        raise DataSourceError(
            f"{source} {config}/{split} lacks columns {missing}: expected {list(COLUMNS)}"
        )
    if len(ds) == 0:
        raise DataSourceError(
            f"{source} {config}/{split}: the split has no examples (0 rows); expected at least one"
        )
    if verify:
        verify_dataset(ds, folder_params(source, params) if local else params)
    return ds
