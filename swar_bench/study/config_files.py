"""What the config files of a study's run said: a record whose config file has changed since is stale.

A record keeps its run's command line, which names the config files a fit or test reads
(``--config PATH``) but not what they held: editing a budget or mechanism config leaves the command,
and so the record, as it was. ``study run`` therefore writes into every fit and test record (and into
a fit's attempt file, ``swar_bench.study.attempts``)

    "config_files": {"configs/results_frontier.yaml": "3f1c0a9b2d4e5f60", ...}

one entry per ``--config`` file of the command (its path as the command gives it), valued by
:func:`content_hash` of the file as the run started. ``status`` and ``run`` call a record stale when
a file of it now hashes otherwise (:func:`config_change`: ``config file PATH changed``), as they do a
record of other code; ``report`` and ``site`` leave it out. The hash is of what the YAML says (its
parsed value, keys sorted), not of its bytes: a comment or a re-indentation changes no run and makes
no record stale. A record without ``config_files`` (written before they were kept) is judged by its
command and code alone, as it always was.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

KEY = "config_files"
"""The record's (and the attempt file's) key of ``{path: content hash}``."""


def config_paths(args: list[str]) -> list[str]:
    """The ``--config`` files of a ``swar-bench`` argument list (``--config X`` or
    ``--config=X``), in order, each once."""
    paths: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--config" and i + 1 < len(args):
            path = args[i + 1]
        elif arg.startswith("--config="):
            path = arg[len("--config=") :]
        else:
            continue
        if path not in paths:
            paths.append(path)
    return paths


def content_hash(path: str | Path) -> str | None:
    """SHA-256 (hex, first 16 digits) of what the YAML file ``path`` says: its parsed value as
    JSON with sorted keys (of its bytes when it is not YAML); None when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return _hash_of(data)


@functools.lru_cache(maxsize=64)
def _hash_of(data: bytes) -> str:
    """:func:`content_hash` of a file's bytes (kept per content: ``study status`` reads the same
    few files for every record, and parses each content once)."""
    import yaml

    try:
        text = json.dumps(yaml.safe_load(data.decode("utf-8")), sort_keys=True, default=str)
        payload = b"yaml\0" + text.encode()
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError, TypeError, ValueError):
        payload = b"bytes\0" + data
    return hashlib.sha256(payload).hexdigest()[:16]


def config_hashes(args: list[str]) -> dict[str, str | None]:
    """``{path: content_hash(path)}`` for every ``--config`` file of ``args`` (:func:`config_paths`)."""
    return {path: content_hash(path) for path in config_paths(args)}


def config_change(record: dict[str, Any] | None) -> str | None:
    """Why ``record`` no longer says what its config files say now, in a few words:
    ``"config file configs/x.yaml changed"`` (the first file whose :func:`content_hash` differs
    from the one recorded, or that cannot be read now) or ``"its config_files cannot be read"``
    (not a mapping of paths to hashes); None when every file is as it was, or the record keeps no
    ``config_files`` (an older record: its command and code judge it alone)."""
    if not isinstance(record, dict) or KEY not in record:
        return None
    saved = record[KEY]
    if not isinstance(saved, dict) or not all(isinstance(p, str) for p in saved):
        return f"its {KEY} cannot be read"
    for path, recorded in saved.items():
        now = content_hash(path)
        if now is None or now != recorded:
            return f"config file {path} changed"
    return None
