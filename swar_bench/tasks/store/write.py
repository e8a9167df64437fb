"""Writing a release: generate configs and splits into a folder in the Hub layout.

Files are written to a temporary name (``.tmp-*``) in the same folder and renamed when
complete; a later :func:`write_dataset` into the folder removes the temporary files an
interrupted run left in it (:func:`remove_stale_temp_files`, every config folder). A split file
already complete (and still the bytes its checksum records) is kept: rerunning a command that
was cut short completes the folder."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Sequence

from swar_bench.tasks.passkey_swar import (
    ALLOWED_N,
    SPLIT_SEEDS,
    SPLIT_SIZES,
    TRAIN_N,
    PasskeySwarParams,
    examples_per_chunk,
    generate_flat,
    split_seeds,
    write_vocab_json,
)
from swar_bench.tasks.store.checksums import (
    file_sha256,
    read_checksums,
    relative_name,
    write_checksums,
)
from swar_bench.tasks.store.dataset_card import write_readme
from swar_bench.tasks.store.errors import CorruptDataError, DataSourceError
from swar_bench.tasks.store.layout import (
    PARAMS_FILE,
    card_configs_text,
    card_files,
    card_splits,
    check_card_config,
    config_name,
    parse_config,
    split_path,
    train_configs_text,
)
from swar_bench.tasks.store.params_file import check_folder_params, write_params
from swar_bench.tasks.store.parquet import arrow_schema, finished_split, flat_to_table
from swar_bench.utils import interrupts
from swar_bench.utils.files import PROBE_PREFIX, atomic_path

# Temporary names of write_split (in DIR/n{N}/) and atomic_write_text (in DIR/).
_TEMP_SPLIT = ".tmp-*.parquet"


_TEMP_TOP = (".tmp-*README.md", ".tmp-*vocab.json", ".tmp-*" + PARAMS_FILE, ".tmp-*checksums.json")


def _check_request(configs: Sequence[str], splits: Sequence[str] | None) -> list[tuple[str, str]]:
    """(config, split) pairs to write; the release's configs and splits only, each named once."""
    if not configs:
        raise DataSourceError(f"configs=[]: expected at least one of {card_configs_text()}")
    if splits is not None and not splits:
        raise DataSourceError(f"splits=[]: expected at least one of {', '.join(SPLIT_SEEDS)}")
    for name, values in (("configs", configs), ("splits", splits or ())):
        twice = sorted({v for v in values if list(values).count(v) > 1})
        if twice:
            raise DataSourceError(
                f"{name}: {', '.join(map(str, twice))} given more than once; expected each once"
            )
    for split in splits or ():
        if split not in SPLIT_SEEDS:
            raise DataSourceError(f"split={split!r}: expected one of {sorted(SPLIT_SEEDS)}")
    pairs = []
    for config in configs:
        n = check_card_config(config)
        for split in splits or card_splits(n):
            if split == "train" and n not in TRAIN_N:
                raise DataSourceError(
                    f"config {config} has no train split ({train_configs_text()})"
                )
            pairs.append((config, split))
    return pairs


def write_split(
    path: str | os.PathLike,
    split: str,
    n_writes: int,
    num_examples: int,
    params: PasskeySwarParams | None = None,
    progress=None,
) -> str:
    """Generate examples ``0 .. num_examples - 1`` of a split and write them to one parquet file
    atomically (temporary file in the same folder, then rename). ``progress``: an object with
    ``update(n_examples)`` (e.g. a tqdm bar). Returns the path. Interrupted or failed, it leaves
    nothing: not the temporary file, nor the config folder when it created it and it is empty."""
    import pyarrow.parquet as pq

    params = params or PasskeySwarParams()
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    made = not os.path.isdir(folder)
    os.makedirs(folder, exist_ok=True)
    seeds = split_seeds(split, n_writes, num_examples)
    per_batch = examples_per_chunk(int(n_writes))
    try:
        # A Ctrl-C / SIGTERM (see cli) removes the temporary file.
        with (
            atomic_path(path) as tmp,
            pq.ParquetWriter(tmp, arrow_schema(), compression="zstd") as writer,
        ):
            for start in range(0, len(seeds), per_batch):
                interrupts.raise_if_stopped()  # a Ctrl-C / SIGTERM whose first delivery was lost
                batch = seeds[start : start + per_batch]
                writer.write_table(flat_to_table(generate_flat(batch, n_writes, params)))
                if progress is not None:
                    progress.update(len(batch))
    except BaseException:
        if made:
            with contextlib.suppress(OSError):  # not empty (another writer), or gone: leave it
                os.rmdir(folder)
        raise
    return path


def remove_stale_temp_files(out_dir: str | os.PathLike) -> list[str]:
    """Remove the temporary files of this module's naming that an interrupted (e.g. SIGKILLed)
    run left in ``out_dir``: ``.tmp-*.parquet`` in every passkey_swar config folder
    (``DIR/n{N}/``, N in :data:`ALLOWED_N`, whichever configs the new run writes) and
    ``.tmp-*README.md`` / ``vocab.json`` / ``params.json`` / ``.tmp-probe-*`` in ``DIR``. Other
    files are left alone. Two runs must not write one folder at once. Returns the paths
    removed, sorted."""
    base = glob.escape(os.fspath(out_dir))
    found = []
    for pattern in (*_TEMP_TOP, PROBE_PREFIX + "*"):
        found += glob.glob(os.path.join(base, pattern))
    for n in ALLOWED_N:
        found += glob.glob(os.path.join(base, config_name(n), _TEMP_SPLIT))
    removed = []
    for path in sorted(set(found)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(path)
    return removed


def write_dataset(
    out_dir: str | os.PathLike,
    configs: Sequence[str] | None = None,
    splits: Sequence[str] | None = None,
    num_examples: int | None = None,
    params: PasskeySwarParams | None = None,
    progress: bool = True,
    kept: list[str] | None = None,
) -> list[str]:
    """Generate configs/splits into ``out_dir`` in the Hub layout (parquet, README.md, vocab.json).

    A split file already there with the requested number of examples (:func:`finished_split`;
    same parameters, so the same examples) is kept, not written again: rerunning a command that
    was cut short completes the folder.

    Args:
        out_dir: target folder (created).
        configs: e.g. ``["n32", "n64"]``, each a passkey_swar config, each once; default
            (``None``): every passkey_swar config.
        splits: e.g. ``["validation", "test"]``, each once; default (``None``): the release's
            splits of each config.
        num_examples: examples per split; default: the release's sizes (train 100,000, else 1,000).
        params: generator parameters (default: the release's, docs/TASK.md "Generation").
        progress: show a tqdm progress bar (examples) when stderr is a terminal.
        kept: a list to which the paths of split files kept from an earlier run are appended.

    Returns:
        The parquet paths of the request (written now, or kept from an earlier run).

    Raises:
        DataSourceError: bad config/split name, ``N`` not a passkey_swar config (32..16384),
            ``train`` asked for a config without one (train splits exist only for n32..n256), an empty
            or repeated config/split, ``out_dir`` empty or an existing file, or ``out_dir`` holding data
            of other parameters (:func:`check_folder_params`) (all before writing).
        ValueError: ``num_examples`` outside ``[1, 10**6)``.
        OSError: ``out_dir`` cannot be created (before any generation).
    """
    given, params = params is not None, params or PasskeySwarParams()
    configs = list(configs) if configs is not None else [config_name(n) for n in ALLOWED_N]
    pairs = _check_request(configs, None if splits is None else list(splits))
    if num_examples is not None and not 1 <= int(num_examples) < 10**6:
        raise ValueError(f"num_examples={num_examples!r}: expected an integer in [1, 10**6)")
    out_dir = os.fspath(out_dir)
    if not out_dir:
        raise DataSourceError("out_dir='': expected a folder path")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise DataSourceError(f"out_dir={out_dir!r}: exists and is not a folder")
    check_folder_params(out_dir, params, given=given)
    os.makedirs(out_dir, exist_ok=True)  # fails here, before any generation, on a bad path
    remove_stale_temp_files(out_dir)
    # First the record, the vocabulary and a README listing every split about to be written: a
    # run cut short leaves a folder that says what it lacks (release_problems).
    write_params(out_dir, params)
    write_vocab_json(os.path.join(out_dir, "vocab.json"), params)
    write_readme(out_dir, params, planned=pairs)
    sizes = {
        pair: int(num_examples) if num_examples is not None else SPLIT_SIZES[pair[1]]
        for pair in pairs
    }
    try:
        recorded = read_checksums(out_dir) or {}
    except CorruptDataError:
        recorded = {}  # rewritten below from the files' bytes
    # a split file is kept only when complete and, if it has a checksum, still those bytes
    todo = [
        p for p in pairs
        if not finished_split(split_path(out_dir, *p), sizes[p])
        or recorded.get(relative_name(out_dir, split_path(out_dir, *p)), None) not in (None, file_sha256(split_path(out_dir, *p)))
    ]
    present = {relative_name(out_dir, split_path(out_dir, config_name(n), s)) for n, ss in card_files(out_dir).items() for s in ss}
    recorded = {name: digest for name, digest in recorded.items() if name in present}
    for pair in pairs:
        name = relative_name(out_dir, split_path(out_dir, *pair))
        if pair not in todo and name not in recorded:  # a file of an earlier run without a record
            recorded[name] = file_sha256(split_path(out_dir, *pair))
        elif pair in todo:
            recorded.pop(name, None)
    write_checksums(out_dir, recorded)
    if kept is not None:
        kept += [split_path(out_dir, *p) for p in pairs if p not in todo]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # disable=None: tqdm's own switch, no bar when stderr is not a terminal (a pipe, a log)
        bar = tqdm(total=sum(sizes[p] for p in todo), unit="ex", desc="passkey_swar", dynamic_ncols=True, disable=None)
    try:
        for config, split in todo:
            if bar is not None:
                bar.set_postfix_str(f"{config}/{split}")
            n = parse_config(config)
            path = write_split(
                split_path(out_dir, config, split), split, n, sizes[(config, split)], params, bar
            )
            recorded[relative_name(out_dir, path)] = file_sha256(path)
            write_checksums(out_dir, recorded)  # after each file: a run cut short keeps what it wrote
    finally:
        if bar is not None:
            bar.close()
    write_readme(out_dir, params)
    return [split_path(out_dir, *p) for p in pairs]
