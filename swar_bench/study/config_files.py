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


def config_keys_problem(path: str | Path, command: str = "fit") -> str | None:
    """One line naming the first key of the config file ``path`` that ``swar-bench <command>``
    would refuse (a top-level key, or a key of an option group: ``data.eval_exampels``, or of a
    mapping option of known fields: ``data.mqar``), with the closest key; None when every key is
    one (or the file cannot be read: ``read_budget`` names that). The keys are read without
    importing Lightning (``swar_bench.utils.option_table``), as ``fit`` itself checks them, so
    ``study status`` and ``run`` refuse a typo before a fit fails on it. The ``init_args`` of a class
    option (``trainer.logger``, each of ``trainer.callbacks``, ``model.mechanism``) are checked
    against the class's constructor (which imports the class's module); the mechanism's are also
    checked, with the study's own ``init_args``, by ``swar_bench.study.spec.check_init_args``.

    e.g. ``config base.yaml: unknown key data.eval_exampels (did you mean data.eval_examples?);
    expected a key of swar-bench fit (swar-bench fit --help)``."""
    import yaml

    from swar_bench.utils.option_table import known_options, nested_fields
    from swar_bench.utils.text import did_you_mean

    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(raw, dict):
        return None
    table = known_options(command)

    def line(key: str, allowed: Any, prefix: str) -> str:
        close = did_you_mean(key.rsplit(".", 1)[-1], sorted(allowed)).replace("mean ", f"mean {prefix}")
        return f"config {path}: unknown key {key}{close}; expected a key of swar-bench {command} (swar-bench {command} --help)"

    for group, value in raw.items():
        if table[""] is not None and group not in table[""]:
            return line(str(group), table[""], "")
        allowed = table.get(group)
        if allowed is None or not isinstance(value, dict) or "class_path" in value:
            continue
        for key, inner in value.items():
            if key not in allowed:
                return line(f"{group}.{key}", allowed, f"{group}.")
            fields = nested_fields(f"{group}.{key}")
            for field in inner if fields is not None and isinstance(inner, dict) else ():
                if field not in fields:
                    return line(f"{group}.{key}.{field}", fields, f"{group}.{key}.")
            problem = _class_args_problem(path, f"{group}.{key}", inner)
            if problem is not None:
                return problem
    return None


def _class_args_problem(path: str | Path, key: str, value: Any) -> str | None:
    """The first unknown ``init_args`` key of a class given as ``{class_path, init_args}`` at option
    ``key`` (or of each such item of a list: ``trainer.callbacks``), found as ``fit`` finds it
    (:func:`swar_bench.config_errors.value_keys`: a logger's ``**kwargs`` followed as jsonargparse
    follows them); None when every key is one, or the class cannot be read (``fit`` then says what
    it says)."""
    from swar_bench.config_errors import value_keys

    takes: dict[str, str] = {}
    found = value_keys(key, value, takes)
    if not found:
        return None
    unknown, close = found[0]
    where = unknown.rsplit(".", 1)[0]
    suggestion = f" (did you mean {close}?)" if close else ""
    return f"config {path}: unknown key {unknown}{suggestion}; expected {takes[where]}"


def refuse_config_typos(paths: list[str | None], where: str) -> None:
    """Refuse the first key of the config files ``paths`` (the ``--config`` files a study's fits
    read; None skipped, each once) that ``swar-bench fit`` would refuse (:func:`config_keys_problem`).

    Raises:
        StudyError: ``<where>: config PATH: unknown key KEY (did you mean ...?); expected ...``."""
    from swar_bench.study.spec import StudyError

    for path in dict.fromkeys(p for p in paths if p is not None):
        problem = config_keys_problem(path)
        if problem is not None:
            raise StudyError(f"{where}: {problem}")


def reusable(path: Path, record: dict[str, Any], *, compatible_code: list[str], code_fingerprint: str | None,
             checkout_fingerprint: str, rerun_stale: bool) -> dict[str, Any] | None:
    """Whether a study's record at ``path`` (already known to hold the same command) is reused.

    Returns ``record`` when it is of compatible code (``provenance.compatible``: the study's pin
    ``code_fingerprint``, or this checkout's code, or a commit of ``compatible_code``) and its
    config files hash as they did (:func:`config_change`); None when it is stale and
    ``rerun_stale`` says to run it again.

    Raises:
        StudyError: the record is stale (other code, or a config file changed since its run) and
            ``rerun_stale`` is not set; one line naming the record, why, and what to pass.
    """
    from swar_bench.study import provenance
    from swar_bench.study.spec import StudyError

    if provenance.compatible(record.get("code"), compatible_code, code_fingerprint):
        change = config_change(record)  # None for a record that keeps no config_files
        if change is None or rerun_stale:
            return record if change is None else None
        raise StudyError(
            f"record {path} is stale: {change} since its run read it; "
            "expected --rerun-stale to run it again with the file as it is now"
        )
    if rerun_stale:
        return None
    code = record.get("code") or {}
    raise StudyError(
        f"record {path} was made by other code (commit {str(code.get('commit'))[:10]}, fingerprint "
        f"{code.get('fingerprint')}; {'the study is pinned to' if code_fingerprint else 'this checkout has'} "
        f"{code_fingerprint or checkout_fingerprint}); expected --rerun-stale to run it again, or its commit "
        "in the study's compatible_code"
    )
