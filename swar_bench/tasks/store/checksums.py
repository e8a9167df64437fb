"""``DIR/checksums.json``: the SHA-256 of every split file as written, compared with the bytes
on disk before a local file is read."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable

from swar_bench.tasks.store.errors import CorruptDataError, json_problem
from swar_bench.tasks.store.layout import CHECKSUMS_FILE, card_files, config_name, split_path
from swar_bench.utils.files import atomic_write_text


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the bytes of ``path`` on disk (hex), read in 1 MiB blocks.

    Raises:
        OSError: the file cannot be read."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def relative_name(folder: str, path: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(folder)).replace(os.sep, "/")


def read_checksums(folder: str | os.PathLike) -> dict[str, str] | None:
    """``{relative path: sha256 hex}`` of ``DIR/checksums.json``; None when there is none.

    Raises:
        CorruptDataError: the file is not JSON of that form (names it)."""
    path = os.path.join(os.fspath(folder), CHECKSUMS_FILE)
    if not os.path.isfile(path):
        return None
    expected = (
        'expected {"sha256": {"n32/test-00000-of-00001.parquet": "<hex>", ...}} as `swar-bench data generate` '
        "writes it (run it again to rewrite the file)"
    )
    try:
        with open(path, encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CorruptDataError(f"{path}: {json_problem(exc)}; {expected}") from None
    table = found.get("sha256") if isinstance(found, dict) else None
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        what = f"a JSON {type(found).__name__}" if not isinstance(found, dict) else (
            'no "sha256" object' if table is None else '"sha256" is not an object of strings')
        raise CorruptDataError(f"{path}: not a checksums file ({what}); {expected}")
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
        relative_name(folder, split_path(folder, config_name(n), split)): file_sha256(split_path(folder, config_name(n), split))
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
        name = relative_name(folder, os.fspath(path))
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


def checksum_faults(folder: str) -> list[str]:
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
            name = relative_name(folder, path)
            if name not in table:
                faults.append(f"{name}: no checksum in {CHECKSUMS_FILE}")
            elif file_sha256(path) != table[name]:
                faults.append(f"{name}: its SHA-256 differs from {CHECKSUMS_FILE} (corrupted?)")
    return faults
