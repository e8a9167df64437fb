"""The two errors of the data store, and the one-line text of a library's exception.

Every command turns :class:`DataSourceError` into exit 2 (a bad argument or source) and
:class:`CorruptDataError` into exit 1 (a check failed), each as one line."""

from __future__ import annotations


class DataSourceError(ValueError, RuntimeError):
    """A dataset source cannot give the requested data (offline Hub, missing folder, config or
    split, bad layout); the message is one sentence naming the value and what was expected."""


class CorruptDataError(DataSourceError):
    """A split file's bytes are not what was written: its SHA-256 differs from ``checksums.json``,
    or a column cannot be decoded. A fault of the data, not of the command line: every command
    exits 1 on it (the README's "a check failed"), naming the file."""


def first_line(exc: BaseException) -> str:
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


def json_problem(exc: BaseException) -> str:
    """What is wrong with a JSON file that ``json.load`` refused, as one phrase naming where:
    ``not valid JSON (line 5, column 1: expecting ',' delimiter)``, ``not valid JSON (the file
    is empty)``, ``not valid JSON (not UTF-8 text: ...)``, else ``not readable (<reason>)``
    (an ``OSError``). Only ``exc`` itself is read, not the exceptions it was raised while handling."""
    import json

    if isinstance(exc, json.JSONDecodeError):
        if not exc.doc.strip():
            return "not valid JSON (the file is empty)"
        what = exc.msg.removesuffix(" starting at")  # "Unterminated string starting at": the position follows
        return f"not valid JSON (line {exc.lineno}, column {exc.colno}: {what[:1].lower()}{what[1:]})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid JSON (not UTF-8 text: {exc.reason} at byte {exc.start})"
    text = str(exc).strip().splitlines()
    return f"not readable ({getattr(exc, 'strerror', None) or (text[0] if text else type(exc).__name__)})"
