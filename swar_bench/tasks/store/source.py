"""The one reading of a dataset source: a local folder, or a Hub id ``owner/name`` (asked once
per run)."""

from __future__ import annotations

import os
import re

from swar_bench.tasks.store.errors import DataSourceError, first_line
from swar_bench.tasks.store.layout import HUB_ID

# A Hugging Face Hub repository id "owner/name" (huggingface_hub's validate_repo_id: letters,
# digits, "_", "-", "." with a letter/digit/"_" at both ends of each part; no "--" or "..").
_HUB_ID_RE = re.compile(r"(?a)^\w(?:[\w.-]*\w)?/\w(?:[\w.-]*\w)?$")


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


def hub_error(source: str, reason: str) -> DataSourceError:
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
            _HUB_TRIED[source] = hub_error(source, f"{type(exc).__name__}: {first_line(exc)}")
    if _HUB_TRIED[source] is not None:
        raise _HUB_TRIED[source]
