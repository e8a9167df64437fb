"""Where a release's files lie (docs/TASK.md, "Configs and splits")::

    DIR/README.md                               # the dataset card (dataset_card.py)
    DIR/vocab.json
    DIR/params.json                             # the generator parameters (params_file.py)
    DIR/checksums.json                          # the SHA-256 of every split file (checksums.py)
    DIR/n{N}/{split}-00000-of-00001.parquet     # the split files (parquet.py)

and the names of configs and splits: ``n{N}`` with N in ``ALLOWED_N``, train only for N in ``TRAIN_N``."""

from __future__ import annotations

import os
import re

from swar_bench.tasks.passkey_swar import ALLOWED_N, SPLIT_SEEDS, TRAIN_N
from swar_bench.tasks.store.errors import DataSourceError

HUB_ID = "irodkin/passkey_swar"
"""The released dataset on the Hugging Face Hub (docs/TASK.md, "Generation")."""


PARAMS_FILE = "params.json"
"""The generator parameters a local folder's data was written with (JSON object of
:class:`PasskeySwarParams` fields), next to ``vocab.json``."""


COLUMNS = ("input_ids", "labels", "answer_type", "n_writes", "seed")


CONFIG_RE = re.compile(r"^n([1-9][0-9]*)$")


CHECKSUMS_FILE = "checksums.json"
"""Beside ``params.json``: ``{"sha256": {"n32/validation-00000-of-00001.parquet": "<hex>", ...}}``,
the SHA-256 of every split file as written by ``swar-bench data generate`` (a Hub dataset's files
carry theirs in the Hub's LFS pointers the same way). ``verify``, ``check`` and every read of a
local folder (``fit --data.source DIR``) compare a file's bytes with it before reading the file."""


def config_name(n_writes: int) -> str:
    """``"n{N}"``, the config of ``N`` writes."""
    return f"n{int(n_writes)}"


def parse_config(config: str) -> int:
    """``N`` of a config name ``"n{N}"``.

    Raises:
        DataSourceError: not of the form ``n{N}`` with ``N >= 1``.
    """
    m = CONFIG_RE.match(str(config))
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
