"""passkey_swar on disk and on the Hub: parquet in the Hub repository's layout.

Layout (docs/TASK.md, "Configs and splits" and "Columns")::

    DIR/README.md                               # YAML header: one `configs:` entry per n{N}
    DIR/vocab.json
    DIR/params.json                             # the generator parameters of every file here
    DIR/n{N}/{split}-00000-of-00001.parquet     # input_ids list<int16>, labels list<int16>,
                                                # answer_type list<string>, n_writes int64, seed int64

so that ``datasets.load_dataset(DIR, "n32", split="validation")`` loads a local copy exactly as
``datasets.load_dataset("irodkin/passkey_swar", "n32", split="validation")`` loads the release.
Files are written to a temporary name (``.tmp-*``) in the same folder and renamed when
complete; a later :func:`write_dataset` into the folder removes the temporary files an
interrupted run left in it (:func:`remove_stale_temp_files`, every config folder). One folder holds data of one parameter set (``params.json``).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence

import numpy as np

from swar_bench import interrupts
from swar_bench.io import PROBE_PREFIX, atomic_path, atomic_write_text
from swar_bench.tasks.oracle import verify_example
from swar_bench.tasks.passkey_swar import (
    ALLOWED_N,
    SPLIT_SEEDS,
    SPLIT_SIZES,
    TRAIN_N,
    FlatBatch,
    PasskeySwarParams,
    examples_per_chunk,
    generate_flat,
    make_example,
    split_seeds,
    vocab,
    write_vocab_json,
)

HUB_ID = "irodkin/passkey_swar"
"""The released dataset on the Hugging Face Hub (docs/TASK.md, "Generation")."""

PARAMS_FILE = "params.json"
"""The generator parameters a local folder's data was written with (JSON object of
:class:`PasskeySwarParams` fields), next to ``vocab.json``."""

_README_PARAMS_RE = re.compile(r"^Parameters: `(\{.*?\})`", re.MULTILINE)
# Temporary names of write_split (in DIR/n{N}/) and atomic_write_text (in DIR/).
_TEMP_SPLIT = ".tmp-*.parquet"
_TEMP_TOP = (".tmp-*README.md", ".tmp-*vocab.json", ".tmp-*" + PARAMS_FILE, ".tmp-*checksums.json")
# A Hugging Face Hub repository id "owner/name" (huggingface_hub's validate_repo_id: letters,
# digits, "_", "-", "." with a letter/digit/"_" at both ends of each part; no "--" or "..").
_HUB_ID_RE = re.compile(r"(?a)^\w(?:[\w.-]*\w)?/\w(?:[\w.-]*\w)?$")

COLUMNS = ("input_ids", "labels", "answer_type", "n_writes", "seed")
_ANSWER_DICT = ("ar_expired", "ar_valid", "passkey")
_CONFIG_RE = re.compile(r"^n([1-9][0-9]*)$")


class DataSourceError(ValueError, RuntimeError):
    """A dataset source cannot give the requested data (offline Hub, missing folder, config or
    split, bad layout); the message is one sentence naming the value and what was expected."""


class CorruptDataError(DataSourceError):
    """A split file's bytes are not what was written: its SHA-256 differs from ``checksums.json``,
    or a column cannot be decoded. A fault of the data, not of the command line: every command
    exits 1 on it (the README's "a check failed"), naming the file."""


CHECKSUMS_FILE = "checksums.json"
"""Beside ``params.json``: ``{"sha256": {"n32/validation-00000-of-00001.parquet": "<hex>", ...}}``,
the SHA-256 of every split file as written by ``swar-bench data generate`` (a Hub dataset's files
carry theirs in the Hub's LFS pointers the same way). ``verify``, ``check`` and every read of a
local folder (``fit --data.source DIR``) compare a file's bytes with it before reading the file."""


def is_hub_id(value: str) -> bool:
    """``value`` has the form of a Hub dataset id ``owner/name`` (e.g. ``irodkin/passkey_swar``;
    huggingface_hub's ``validate_repo_id`` rules: at most 96 characters, no ``--`` or ``..``)."""
    return (
        len(value) <= 96
        and "--" not in value
        and ".." not in value
        and _HUB_ID_RE.match(value) is not None
    )


def _looks_local(source: str) -> bool:
    """``source`` can only be meant as a path: it starts with ``./``, ``../``, ``/`` or ``~``, or
    its first path component exists here (``data/passkey_swar`` when ``data/`` exists)."""
    if source.startswith(("./", "../", "/", "~")) or source in (".", ".."):
        return True
    first = source.replace(os.sep, "/").split("/", 1)[0]
    return "/" in source.replace(os.sep, "/") and bool(first) and os.path.lexists(first)


def resolve_source(source: str | os.PathLike, name: str = "source") -> str | None:
    """The one reading of a dataset ``source``, decided without network access: the local folder
    it names (``~`` expanded), or ``None`` for a Hub dataset id ``owner/name``.

    A source is a local path when it is an existing folder, starts with ``./``, ``../``, ``/`` or
    ``~``, or when its first path component exists here (``data/passkey_swar`` with a ``data/``
    folder): a missing one is "no such folder" at once, never a Hub request. Any other
    ``owner/name`` is a Hub id (loaded by :func:`load_split`, which asks the Hub once per run).

    Args:
        source: a folder in the Hub layout, or a Hub id such as ``irodkin/passkey_swar``.
        name: how the caller's user calls the value (``source``, ``--source``), for the message.

    Raises:
        DataSourceError: ``source`` is an existing file (or other non-folder), a missing local
            path, or neither a folder nor of the form ``owner/name`` (e.g. a bare ``afile``);
            one line naming the value and both expected forms.
    """
    source = os.fspath(source)
    path = os.path.expanduser(source)
    if os.path.isdir(path):
        return path
    expected = f"expected a folder in the Hub layout or a Hub id owner/name (e.g. {HUB_ID})"
    if os.path.lexists(path):
        what = "is a file" if os.path.isfile(path) else "is not a folder"
        raise DataSourceError(f"{name}={source!r}: {what}, {expected}")
    if _looks_local(source):
        first = source.replace(os.sep, "/").split("/", 1)[0]
        why = (
            f"{first!r} is a local folder, so it is a path"
            if first and not source.startswith(("./", "../", "/", "~")) and os.path.lexists(first)
            else "a path, not a Hub id"
        )
        raise DataSourceError(
            f"{name}={source!r}: no such folder ({why}; the nearest existing folder is "
            f"{_nearest_folder(path)!r}); {expected}"
        )
    if not is_hub_id(source):
        raise DataSourceError(f"{name}={source!r}: no such folder, and not a Hub id; {expected}")
    return None


def _nearest_folder(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.isdir(path):
        path = os.path.dirname(path)
    return path


def check_source(source: str | os.PathLike, name: str = "source") -> bool:
    """Whether ``source`` is a local folder (``True``) or a Hub dataset id ``owner/name``
    (``False``): :func:`resolve_source`, whose errors it raises."""
    return resolve_source(source, name) is not None


_HUB_TRIED: dict[str, DataSourceError | None] = {}
"""Hub ids asked for in this process, with the error when the Hub did not give them: each is
tried once per run (huggingface_hub would otherwise retry an unreachable Hub for 25-30 s, and a
run loads several splits)."""


def _hub_error(source: str, reason: str) -> DataSourceError:
    """Both readings of ``source`` failed: no local folder, and the Hub (or, offline, its cache)
    did not give the dataset."""
    from huggingface_hub import constants

    hub = (
        "in the Hub cache (HF_HUB_OFFLINE=1)"
        if constants.HF_HUB_OFFLINE
        else "reachable on the Hub (a cached copy loads with HF_HUB_OFFLINE=1)"
    )
    return DataSourceError(
        f"source={source!r}: no local folder of that name, and the Hub dataset {source} could not "
        f"be loaded ({reason}); expected a folder in the Hub layout (e.g. ./{source}) or a "
        f"dataset id {hub}"
    )


def reach_hub(source: str) -> None:
    """Ask the Hub once per run (one request, no retries) whether dataset ``source`` exists;
    with ``HF_HUB_OFFLINE=1`` nothing is asked (the cache answers in :func:`load_split`).

    Raises:
        DataSourceError: the Hub is unreachable or has no such dataset; the message names both
            readings (a local folder, a Hub id). The same error again, without a request, for
            every later call with this ``source`` in the process.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return
    if source not in _HUB_TRIED:
        from huggingface_hub import HfApi

        try:
            HfApi().dataset_info(source, timeout=30)
            _HUB_TRIED[source] = None
        except Exception as exc:  # noqa: BLE001 -- network (httpx) or Hub (HfHubHTTPError) errors alike; raised below
            _HUB_TRIED[source] = _hub_error(source, f"{type(exc).__name__}: {_first_line(exc)}")
    if _HUB_TRIED[source] is not None:
        raise _HUB_TRIED[source]


def config_name(n_writes: int) -> str:
    """``"n{N}"``, the config of ``N`` writes."""
    return f"n{int(n_writes)}"


def parse_config(config: str) -> int:
    """``N`` of a config name ``"n{N}"``.

    Raises:
        DataSourceError: not of the form ``n{N}`` with ``N >= 1``.
    """
    m = _CONFIG_RE.match(str(config))
    if not m:
        raise DataSourceError(
            f"config={config!r}: expected 'n' followed by the number of writes, e.g. 'n256'"
        )
    return int(m.group(1))


def card_splits(n_writes: int) -> tuple[str, ...]:
    """The splits the release has for config ``n{N}`` (train only for N in 32..256)."""
    return ("train", "validation", "test") if n_writes in TRAIN_N else ("validation", "test")


def split_path(out_dir: str | os.PathLike, config: str, split: str) -> str:
    """``DIR/n{N}/{split}-00000-of-00001.parquet``."""
    return os.path.join(os.fspath(out_dir), config, f"{split}-00000-of-00001.parquet")


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


CONFIGS_SECTION = 'docs/TASK.md, "Configs and splits"'
"""Where the task's configs (``n{N}``, N in 32..16384) and their splits are defined; messages
about a config or split that does not exist cite it."""


def card_configs_text() -> str:
    """The task's configs as text: ``"n32, n64, ..., n16384"`` (:data:`CONFIGS_SECTION`)."""
    return ", ".join(config_name(n) for n in ALLOWED_N)


def train_configs_text() -> str:
    """Which configs have a train split, for messages: ``"train splits exist only for n32, n64,
    n128, n256 (docs/TASK.md, "Configs and splits")"``."""
    return f"train splits exist only for {', '.join(config_name(n) for n in TRAIN_N)} ({CONFIGS_SECTION})"


def check_card_config(config: str) -> int:
    """``N`` of a passkey_swar config (``N`` in :data:`ALLOWED_N`, 32..16384 by powers of 2).

    Raises:
        DataSourceError: not of the form ``n{N}``, or ``N`` not a passkey_swar config.
    """
    n = parse_config(config)
    if n not in ALLOWED_N:
        raise DataSourceError(
            f"config {config!r} is not a passkey_swar config ({CONFIGS_SECTION}): expected one of {card_configs_text()}"
        )
    return n


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


def card_files(out_dir: str | os.PathLike) -> dict[int, list[str]]:
    """The release's split files present in a local folder: ``{N: [split, ...]}`` for each config
    of the release (``N`` in :data:`ALLOWED_N`) that holds ``n{N}/{split}-00000-of-00001.parquet``;
    other entries of the folder (e.g. ``n7/``, ``notes/``) are not the dataset's. Splits in the
    release's order (train, validation, test)."""
    out_dir = os.fspath(out_dir)
    found: dict[int, list[str]] = {}
    for n in ALLOWED_N:
        splits = [s for s in SPLIT_SEEDS if os.path.isfile(split_path(out_dir, config_name(n), s))]
        if splits:
            found[n] = splits
    return found


README_HEADER_WANT = (
    "expected a YAML header (between `---` lines at its top) with `configs:` entries of "
    "config_name and data_files, as `swar-bench data generate` writes"
)


def _yaml_kind(value: object) -> str:
    """``value`` (parsed YAML) as a phrase: ``"a mapping"``, ``"a list"``, ``"the string 'x'"``."""
    if value is None:
        return "empty"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value if len(value) <= 40 else value[:40] + '...'!r}"
    return f"the {type(value).__name__} {value!r}"


def _readme_header(text: str) -> str | None:
    """The YAML block at the top of a README, split as ``datasets`` splits it
    (``datasets.utils.metadata._split_yaml_from_readme``: a first line ``---`` and a later line
    ``---``), or ``None`` when it has none."""
    lines = text.splitlines()
    if lines and lines[0] == "---" and "---" in lines[1:]:
        return "\n".join(lines[1 : lines[1:].index("---") + 1])
    return None


def _readme_data_files(folder: str) -> dict[str, dict[str, list[str]]] | None:
    """``{config: {split: [path pattern, ...]}}`` from the YAML header of ``DIR/README.md`` (the
    list ``datasets.load_dataset(DIR, config)`` reads); ``None`` without a README.

    Raises:
        DataSourceError: a README that is empty, has no YAML header, or whose header is not YAML,
            has no ``configs:`` list, or is not a list of ``config_name`` / ``data_files``
            entries (one line naming the file).
    """
    import yaml

    path = os.path.join(folder, "README.md")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    block = _readme_header(text)
    if block is None:
        if not text.strip():
            what = "the file is empty" if not text else "the file holds only blank space"
        elif text.splitlines()[0] != "---":
            what = "its first line is not `---`"
        else:
            what = "no `---` line closes the header"
        raise DataSourceError(f"{path}: no YAML header with a `configs:` list ({what}); {README_HEADER_WANT}")
    try:
        header = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        raise DataSourceError(
            f"{path}: its YAML header is not valid YAML ({_first_line(exc)}); {README_HEADER_WANT}"
        ) from None
    if not isinstance(header, dict):
        raise DataSourceError(
            f"{path}: its YAML header is {_yaml_kind(header)}, not a mapping with a `configs:` list; "
            + README_HEADER_WANT
        )
    configs = header.get("configs")
    if configs is None:
        raise DataSourceError(f"{path}: its YAML header has no `configs:` list; {README_HEADER_WANT}")
    if not isinstance(configs, list):
        raise DataSourceError(
            f"{path}: its YAML header's `configs:` is {_yaml_kind(configs)}, not a list; {README_HEADER_WANT}"
        )
    for i, entry in enumerate(configs, 1):
        if not isinstance(entry, dict) or "config_name" not in entry:
            raise DataSourceError(
                f"{path}: entry {i} of its YAML header's `configs:` is {_yaml_kind(entry)}, not a mapping "
                f"with a config_name; {README_HEADER_WANT}"
            )
    try:
        listed: dict[str, dict[str, list[str]]] = {}
        for entry in configs:
            files = entry.get("data_files", [])
            if isinstance(files, str):
                files = [{"split": "train", "path": files}]
            elif isinstance(files, dict):
                files = [{"split": k, "path": v} for k, v in files.items()]
            by_split = listed.setdefault(str(entry["config_name"]), {})
            for item in files:
                paths = item["path"] if isinstance(item["path"], list) else [item["path"]]
                by_split.setdefault(str(item["split"]), []).extend(str(p) for p in paths)
    except (AttributeError, KeyError, TypeError) as exc:
        raise DataSourceError(
            f"{path}: its YAML header is not a configs list ({_first_line(exc)}); expected "
            "`configs:` entries with config_name and data_files, as `swar-bench data generate` writes"
        ) from exc
    return listed


def _vocab_fault(folder: str, params: PasskeySwarParams) -> str | None:
    """What is wrong with ``DIR/vocab.json`` (``None`` when it is the vocabulary
    :func:`~swar_bench.tasks.passkey_swar.write_vocab_json` writes for ``params``)."""
    path = os.path.join(folder, "vocab.json")
    expected = vocab(params).to_dict()
    want = (
        f"expected the {len(expected)} tokens of n_keys={params.n_keys}, n_values={params.n_values} "
        f"(PAD=0 ... {next(reversed(expected))}={len(expected) - 1}), as `swar-bench data vocab` writes"
    )
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError) as exc:
        return f"vocab.json: not readable as JSON ({_first_line(exc)}); {want}"
    if found == expected:
        return None
    if not isinstance(found, dict):
        return f"vocab.json: a JSON {type(found).__name__}, not an object {{token: id}}; {want}"
    wrong = [f"{t}={found[t]!r} (expected {i})" for t, i in expected.items() if t in found and found[t] != i]
    lacking = [t for t in expected if t not in found]
    extra = [t for t in found if t not in expected]
    what = []
    if lacking:
        what.append(f"lacks {len(lacking)} token(s) ({', '.join(lacking[:3])}{', ...' if len(lacking) > 3 else ''})")
    if extra:
        what.append(f"has {len(extra)} unknown token(s) ({', '.join(map(repr, extra[:3]))}{', ...' if len(extra) > 3 else ''})")
    if wrong:
        what.append(f"has wrong ids: {', '.join(wrong[:3])}{', ...' if len(wrong) > 3 else ''}")
    return f"vocab.json: {len(found)} token(s), {'; '.join(what)}; {want}"


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the bytes of ``path`` on disk (hex), read in 1 MiB blocks.

    Raises:
        OSError: the file cannot be read."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _relative(folder: str, path: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(folder)).replace(os.sep, "/")


def read_checksums(folder: str | os.PathLike) -> dict[str, str] | None:
    """``{relative path: sha256 hex}`` of ``DIR/checksums.json``; None when there is none.

    Raises:
        CorruptDataError: the file is not JSON of that form (names it)."""
    path = os.path.join(os.fspath(folder), CHECKSUMS_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            found = json.load(handle)
        table = found["sha256"]
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
            raise TypeError("sha256 is not an object of strings")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptDataError(
            f"{path}: not readable as checksums ({_first_line(exc)}); expected {{\"sha256\": {{\"n32/test-00000-of-00001.parquet\": "
            "\"<hex>\", ...}}}} as `swar-bench data generate` writes"
        ) from None
    return dict(table)


def write_checksums(folder: str | os.PathLike, table: dict[str, str]) -> str:
    """Write ``DIR/checksums.json`` (:data:`CHECKSUMS_FILE`) atomically; returns its path."""
    path = os.path.join(os.fspath(folder), CHECKSUMS_FILE)
    atomic_write_text(path, json.dumps({"sha256": dict(sorted(table.items()))}, indent=1) + "\n")
    return path


def record_checksums(folder: str | os.PathLike) -> str:
    """(Re)write ``DIR/checksums.json`` from the split files as they are on disk now (every file
    of :func:`card_files`): for a folder whose files were replaced on purpose (an edited test
    fixture, a release assembled by hand). Returns its path."""
    folder = os.fspath(folder)
    table = {
        _relative(folder, split_path(folder, config_name(n), split)): file_sha256(split_path(folder, config_name(n), split))
        for n, splits in card_files(folder).items()
        for split in splits
    }
    return write_checksums(folder, table)


def check_checksums(folder: str | os.PathLike, files: Iterable[str | os.PathLike]) -> None:
    """Compare the bytes on disk of each split file of ``files`` (inside the local ``folder``)
    with ``DIR/checksums.json``; nothing to compare without that file (a Hub download).

    Raises:
        CorruptDataError: the first file whose SHA-256 differs from the record, or that the record
            lacks (one line naming the file and what to do)."""
    folder = os.fspath(folder)
    table = read_checksums(folder)
    if table is None:
        return
    for path in files:
        name = _relative(folder, os.fspath(path))
        if name not in table:
            raise CorruptDataError(
                f"{path}: no checksum in {os.path.join(folder, CHECKSUMS_FILE)}; expected every split file of the "
                "folder recorded there (write it with `swar-bench data generate`)"
            )
        if file_sha256(path) != table[name]:
            raise CorruptDataError(
                f"{path}: its SHA-256 differs from {os.path.join(folder, CHECKSUMS_FILE)}: the file changed after it "
                "was written (corrupted?); expected the bytes `swar-bench data generate` wrote (run it again to "
                "rewrite the file)"
            )


def _checksum_faults(folder: str) -> list[str]:
    """``"FILE: what"`` for each split file of the folder whose bytes differ from (or are missing
    from) ``checksums.json``; [] without that file."""
    try:
        table = read_checksums(folder)
    except CorruptDataError as exc:
        return [f"{CHECKSUMS_FILE}: {str(exc).split(': ', 1)[1]}"]
    if table is None:
        return []
    faults = []
    for n, splits in card_files(folder).items():
        for split in splits:
            path = split_path(folder, config_name(n), split)
            name = _relative(folder, path)
            if name not in table:
                faults.append(f"{name}: no checksum in {CHECKSUMS_FILE}")
            elif file_sha256(path) != table[name]:
                faults.append(f"{name}: its SHA-256 differs from {CHECKSUMS_FILE} (corrupted?)")
    return faults


def _release_faults(folder: str | os.PathLike, checksums: bool = True) -> tuple[list[str], list[str]]:
    """``(missing, wrong)``: :func:`release_problems` in two lists, the files (or entries) that
    are absent, and the metadata files present with a wrong content (each ``"FILE: what"``);
    without ``checksums`` the split files' bytes are not hashed (the metadata checks only)."""
    folder = os.fspath(folder)
    missing: list[str] = []
    wrong: list[str] = []
    try:
        listed = _readme_data_files(folder)
    except DataSourceError as exc:
        wrong.append(_named_fault(str(exc), folder))
        listed = None
    readme = os.path.join(folder, "README.md")
    generated_here = listed is None or os.path.isfile(os.path.join(folder, PARAMS_FILE))
    has_readme = listed is not None
    if listed is None:
        if not wrong:
            missing.append("README.md (its configs list is what datasets.load_dataset reads)")
        listed = {}
    else:
        with open(readme, encoding="utf-8", errors="replace") as f:
            generated_here = generated_here or _README_PARAMS_RE.search(f.read()) is not None

    def order(name: str) -> tuple:
        config, split = name.split("/", 1)
        m = _CONFIG_RE.match(config)
        rank = list(SPLIT_SEEDS).index(split) if split in SPLIT_SEEDS else len(SPLIT_SEEDS)
        return (m is None, int(m.group(1)) if m else 0, config, rank, split)

    no_file = [
        f"{config}/{split}"
        for config, by_split in listed.items()
        for split, patterns in by_split.items()
        if not any(glob.glob(os.path.join(folder, p)) for p in patterns)
    ]
    if no_file:
        missing.append(f"the split files README.md lists: {', '.join(sorted(no_file, key=order))}")
    unlisted = [
        f"{config_name(n)}/{split}"
        for n, splits in card_files(folder).items()
        for split in splits
        if split not in listed.get(config_name(n), {})
    ]
    if unlisted and has_readme:
        missing.append(f"README.md entries for the split files {', '.join(unlisted)}")
    if not os.path.isfile(os.path.join(folder, "vocab.json")):
        missing.append("vocab.json")
    if generated_here and not os.path.isfile(os.path.join(folder, PARAMS_FILE)):
        missing.append(PARAMS_FILE)
    if generated_here and card_files(folder) and not os.path.isfile(os.path.join(folder, CHECKSUMS_FILE)):
        missing.append(f"{CHECKSUMS_FILE} (the SHA-256 of every split file)")
    if checksums:
        wrong += _checksum_faults(folder)
    # The record (params.json, else README.md's Parameters line) must be valid parameters, the
    # two must agree, and vocab.json must be the vocabulary of those parameters.
    params = PasskeySwarParams()
    try:
        record = _read_record(folder)
        if record is not None:
            params = record[0]
            if record[1] != readme and os.path.isfile(readme):
                with open(readme, encoding="utf-8", errors="replace") as f:
                    m = _README_PARAMS_RE.search(f.read())
                if m:
                    line = _params_from(_json_or_none(m.group(1)), f"{readme} (Parameters line)")
                    if line != params:
                        have, other = params_diff(params, line)
                        wrong.append(f"README.md: its Parameters line says {other}, params.json {have}")
    except DataSourceError as exc:
        wrong.append(_named_fault(str(exc), folder))
        params = None
    if params is not None and os.path.isfile(os.path.join(folder, "vocab.json")):
        fault = _vocab_fault(folder, params)
        if fault:
            wrong.append(fault)
    return missing, wrong


def _named_fault(message: str, folder: str) -> str:
    """``"FILE: what"`` from a :class:`DataSourceError` message about ``DIR/FILE`` (its path
    shortened to the file name)."""
    for name in ("README.md", PARAMS_FILE):
        path = os.path.join(folder, name)
        for prefix in (f"{path} (Parameters line): ", f"{path}: "):
            if message.startswith(prefix):
                return f"{name}: {message[len(prefix):]}"
    return message


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def release_problems(folder: str | os.PathLike) -> list[str]:
    """What keeps a local folder from being a complete release (empty when it is one): the
    files ``datasets.load_dataset(DIR, "n{N}", split=...)`` needs, and the content of its
    metadata files.

    - ``README.md`` with a ``configs:`` header (without it ``load_dataset`` knows no config; a
      README.md that is empty or has no such header is named as a wrong content);
    - every split file that header lists (a run cut short lists what it did not write);
    - every split file of the release on disk listed in that header (else it cannot be loaded);
    - ``vocab.json``; ``params.json`` for a folder written by ``swar-bench data generate`` (its
      README has a ``Parameters:`` line, or it has no README);
    - ``checksums.json`` for a folder written by ``swar-bench data generate``, and each split file's
      SHA-256 equal to its record there (:data:`CHECKSUMS_FILE`);
    - content: the README header is a configs list; ``params.json`` (else the README's
      ``Parameters:`` line) parses as :class:`PasskeySwarParams`, and the two agree;
      ``vocab.json`` equals the vocabulary of those parameters (of the release's without a record).

    Returns:
        One short phrase per problem: missing ones first, e.g. ``"the split files README.md
        lists: n32/test"``, then wrong contents, e.g. ``"vocab.json: not readable as JSON (...)"``.
    """
    missing, wrong = _release_faults(folder)
    return missing + wrong


def release_report(folder: str | os.PathLike, command: str = "generate", checksums: bool = True) -> str | None:
    """The one line saying what keeps ``folder`` from being a complete release
    (:func:`release_problems`), or ``None`` for a complete one: ``"DIR is not a complete release;
    missing: ... (a `swar-bench data COMMAND` cut short? ...); vocab.json: ..."``. Without
    ``checksums`` the split files are not hashed (the cheap metadata checks a training run makes
    before it reads the files, whose bytes :func:`load_split` then compares)."""
    missing, wrong = _release_faults(folder, checksums)
    parts = []
    if missing:
        parts.append(
            f"missing: {'; '.join(missing)} (a `swar-bench data {command}` cut short? run the "
            "same command again to complete it)"
        )
    parts += wrong
    return f"{os.fspath(folder)} is not a complete release; {'; '.join(parts)}" if parts else None


def check_release(folder: str | os.PathLike, command: str = "generate") -> None:
    """Raise unless :func:`release_problems` finds nothing.

    Raises:
        DataSourceError: one line naming the folder, everything missing or wrong
            (:func:`release_report`), and the command that completes it.
    """
    report = release_report(folder, command)
    if report:
        raise DataSourceError(report)


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


def write_readme(
    out_dir: str | os.PathLike,
    params: PasskeySwarParams | None = None,
    planned: Iterable[tuple[str, str]] = (),
) -> str:
    """(Re)write ``DIR/README.md`` with a YAML ``configs:`` header listing every split file of
    the release present under ``DIR/n{N}/`` (:func:`card_files`; so repeated ``generate`` calls
    accumulate configs) and every ``(config, split)`` of ``planned``, written or not.

    :func:`write_dataset` writes it first with the splits it is about to write, so a folder whose
    writing was cut short lists what it lacks (:func:`release_problems` names it), and again at
    the end."""
    params = params or PasskeySwarParams()
    out_dir = os.fspath(out_dir)
    found = {n: set(splits) for n, splits in card_files(out_dir).items()}
    for config, split in planned:
        found.setdefault(parse_config(config), set()).add(split)
    lines = ["---", "configs:"]
    for n in sorted(found):
        lines += [f"- config_name: {config_name(n)}", "  data_files:"]
        for split in (s for s in SPLIT_SEEDS if s in found[n]):
            lines += [
                f"  - split: {split}",
                f"    path: {config_name(n)}/{split}-00000-of-00001.parquet",
            ]
    lines += ["---", "", "# passkey_swar (generated locally)", ""]
    lines += [
        "Passkey + Sliding-Window Associative Recall, generated by `swar-bench data generate` in the",
        f"layout of the Hub dataset `{HUB_ID}`. Per-example seed = split_seed * 10**12 + N * 10**6 + index;",
        "`swar_bench.tasks.passkey_swar.make_example(seed, N, params)` reproduces an example exactly.",
        "",
        f"Parameters: `{json.dumps(params.to_dict())}`; split seeds `{json.dumps(SPLIT_SEEDS)}`.",
        "",
    ]
    path = os.path.join(out_dir, "README.md")
    atomic_write_text(path, "\n".join(lines))
    return path


def _params_from(fields, where: str) -> PasskeySwarParams:
    if not isinstance(fields, dict) or set(fields) - set(PasskeySwarParams().to_dict()):
        raise DataSourceError(
            f"{where}: expected a JSON object of PasskeySwarParams fields "
            f"({', '.join(PasskeySwarParams().to_dict())})"
        )
    try:
        return PasskeySwarParams(**fields)
    except ValueError as exc:
        raise DataSourceError(f"{where}: {exc}") from exc


def read_params(folder: str | os.PathLike) -> PasskeySwarParams | None:
    """The generator parameters a local folder records: ``DIR/params.json``, else the
    ``Parameters:`` line of a ``DIR/README.md`` written by :func:`write_readme` (folders from
    before ``params.json``); ``None`` when the folder records none (e.g. a download of the Hub
    release, which has the default parameters, docs/TASK.md "Generation").

    Raises:
        DataSourceError: a record that is not valid JSON or not valid parameters (names the file).
    """
    record = _read_record(folder)
    return None if record is None else record[0]


def _read_record(folder: str | os.PathLike) -> tuple[PasskeySwarParams, str] | None:
    """:func:`read_params` and the file it was read from."""
    folder = os.fspath(folder)
    path = os.path.join(folder, PARAMS_FILE)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                fields = json.load(f)
        except (OSError, ValueError) as exc:
            raise DataSourceError(f"{path}: not readable as JSON ({exc})") from exc
        return _params_from(fields, path), path
    readme = os.path.join(folder, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8", errors="replace") as f:
            m = _README_PARAMS_RE.search(f.read())
        if m:
            try:
                fields = json.loads(m.group(1))
            except ValueError as exc:
                raise DataSourceError(f"{readme}: its Parameters line is not JSON ({exc})") from exc
            return _params_from(fields, f"{readme} (Parameters line)"), readme
    return None


def params_diff(a: PasskeySwarParams, b: PasskeySwarParams) -> tuple[str, str]:
    """The fields where ``a`` and ``b`` differ, as ``("w=16", "w=8")`` (comma-separated)."""
    da, db = a.to_dict(), b.to_dict()
    keys = [k for k in da if da[k] != db[k]]
    return ", ".join(f"{k}={da[k]}" for k in keys), ", ".join(f"{k}={db[k]}" for k in keys)


def folder_params(
    folder: str | os.PathLike, params: PasskeySwarParams | None = None, option: str = "--params"
) -> PasskeySwarParams:
    """The parameters to read a local folder with: its record (:func:`read_params`), or
    ``params``, or the release's. ``params`` that differ from the record are an error: the
    folder's data was not generated with them.

    Raises:
        DataSourceError: ``params`` differ from the folder's record (names the fields), or a bad
            record.
    """
    found = _read_record(folder)
    if found is not None and params is not None and params != found[0]:
        have, want = params_diff(found[0], params)
        raise DataSourceError(
            f"{option} {want} differ from {have} recorded in {found[1]}: the folder's data was "
            f"generated with those; leave {option} out to use them"
        )
    return found[0] if found is not None else params or PasskeySwarParams()


def check_folder_params(out_dir: str | os.PathLike, params: PasskeySwarParams) -> None:
    """Before writing ``params``' data into ``out_dir``: the folder's split files (if any) were
    generated with the same parameters (its record, or the release's when it has none).

    Raises:
        DataSourceError: they differ (names the differing fields of both and suggests another
            folder).
    """
    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir) or not card_files(out_dir):
        return  # nothing written yet (a record alone is rewritten)
    found = _read_record(out_dir)
    have = found[0] if found is not None else PasskeySwarParams()
    if have != params:
        old, new = params_diff(have, params)
        where = f"recorded in {found[1]}" if found is not None else 'no params.json: the release\'s, docs/TASK.md "Generation"'
        raise DataSourceError(
            f"{out_dir} holds data generated with {old} ({where}), not {new}: one folder holds "
            "one parameter set; write to another folder (--out) or leave --params as recorded"
        )


def write_params(out_dir: str | os.PathLike, params: PasskeySwarParams) -> str:
    """Write ``DIR/params.json`` (the record read by :func:`read_params`) atomically."""
    path = os.path.join(os.fspath(out_dir), PARAMS_FILE)
    atomic_write_text(path, json.dumps(params.to_dict(), indent=1) + "\n")
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
        progress: show a tqdm progress bar (examples).
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
    params = params or PasskeySwarParams()
    configs = list(configs) if configs is not None else [config_name(n) for n in ALLOWED_N]
    pairs = _check_request(configs, None if splits is None else list(splits))
    if num_examples is not None and not 1 <= int(num_examples) < 10**6:
        raise ValueError(f"num_examples={num_examples!r}: expected an integer in [1, 10**6)")
    out_dir = os.fspath(out_dir)
    if not out_dir:
        raise DataSourceError("out_dir='': expected a folder path")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise DataSourceError(f"out_dir={out_dir!r}: exists and is not a folder")
    check_folder_params(out_dir, params)
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
        or recorded.get(_relative(out_dir, split_path(out_dir, *p)), None) not in (None, file_sha256(split_path(out_dir, *p)))
    ]
    present = {_relative(out_dir, split_path(out_dir, config_name(n), s)) for n, ss in card_files(out_dir).items() for s in ss}
    recorded = {name: digest for name, digest in recorded.items() if name in present}
    for pair in pairs:
        name = _relative(out_dir, split_path(out_dir, *pair))
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

        bar = tqdm(total=sum(sizes[p] for p in todo), unit="ex", desc="passkey_swar", dynamic_ncols=True)
    try:
        for config, split in todo:
            if bar is not None:
                bar.set_postfix_str(f"{config}/{split}")
            n = parse_config(config)
            path = write_split(
                split_path(out_dir, config, split), split, n, sizes[(config, split)], params, bar
            )
            recorded[_relative(out_dir, path)] = file_sha256(path)
            write_checksums(out_dir, recorded)  # after each file: a run cut short keeps what it wrote
    finally:
        if bar is not None:
            bar.close()
    write_readme(out_dir, params)
    return [split_path(out_dir, *p) for p in pairs]


def _first_line(exc: BaseException) -> str:
    """The first line of ``exc`` and of each exception it wraps (``datasets`` wraps the real
    reason, e.g. a corrupt data page, in a generic "error while generating the dataset"), joined
    by ": " on one line."""
    parts: list[str] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(parts) < 4:
        seen.add(id(exc))
        text = str(exc).strip().splitlines()
        line = (text[0] if text else type(exc).__name__)[:300]
        if not any(line in p for p in parts):
            parts.append(line)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return ": ".join(parts)


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
            f"{path}: not a readable parquet file ({_first_line(exc)}); expected a file written "
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
                f"{path}: a column cannot be read ({_first_line(exc)}); expected a parquet file as "
                "`swar-bench data generate` writes it (run it again to rewrite the file)"
            ) from None
        tables.append(table)
    try:
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    except pa.ArrowInvalid as exc:
        raise CorruptDataError(f"{files[0]}: the split files do not share one schema ({_first_line(exc)})") from None


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
            raise _hub_error(
                source, f"config {config!r} split {split!r}: {type(exc).__name__}: {_first_line(exc)}"
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


def verify_dataset(ds, params: PasskeySwarParams | None = None, regenerate: bool = False) -> int:
    """Run the oracle on every example (and, with ``regenerate``, check that ``make_example``
    reproduces each from its seed). Returns the number of examples checked.

    Raises:
        OracleError: the first example that breaks a rule (message names seed, index, position).
        DataSourceError: ``regenerate`` and an example differs from its regeneration.
    """
    params = params or PasskeySwarParams()
    count = 0
    for index, ex in enumerate(iter_examples(ds)):
        verify_example(ex, params, index=index)
        if regenerate:
            again = make_example(ex["seed"], ex["n_writes"], params)
            if not (
                np.array_equal(again["input_ids"], ex["input_ids"])
                and np.array_equal(again["labels"], ex["labels"])
                and again["answer_type"] == ex["answer_type"]
            ):
                raise DataSourceError(
                    f"example seed={ex['seed']} index={index}: differs from make_example(seed, {ex['n_writes']}) "
                    "(expected the stored example to be reproducible from its seed)"
                )
        count += 1
    return count


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
