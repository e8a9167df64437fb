"""The options of `swar-bench data`, checked before any work: each bad value is one line naming
the option, the value and what was expected (:class:`UsageError`, exit 2)."""

from __future__ import annotations

import json
import os
import sys

from swar_bench.tasks.hub_io import (
    CONFIGS_SECTION,
    DataSourceError,
    card_configs_text,
    config_name,
    folder_params,
    parse_config,
    resolve_source,
)
from swar_bench.tasks.passkey_swar import ALLOWED_N, SPLIT_SEEDS, PasskeySwarParams
from swar_bench.utils.files import PROBE_PREFIX, name_limits, nearest_existing, probe_write

GENERATE = "generate"


class UsageError(ValueError):
    """A bad option of `swar-bench data` (exit 2), one line naming the option and the value."""


def csv_list(value: str | None, option: str) -> list[str] | None:
    """A comma-separated option: ``None`` when not given; an error when given but empty, when an
    item between its commas is empty (``n32,,n64``, ``n32,``: a name left out, or a typo) or when
    a name repeats."""
    if value is None:
        return None
    parts = [x.strip() for x in value.split(",")]
    items = [x for x in parts if x]
    if items and len(items) < len(parts):
        where = ", ".join(str(i + 1) for i, x in enumerate(parts) if not x)
        raise UsageError(f"{option}={value!r}: item {where} is empty; expected names separated by single commas, "
                         f"e.g. {','.join(items)}")
    if not items:
        raise UsageError(
            f"{option}={value!r}: expected a comma-separated list, e.g. "
            + ("n32,n64" if option == "--configs" else "validation,test")
            + " (leave the option out for the default)"
        )
    twice = sorted({x for x in items if items.count(x) > 1}, key=items.index)
    if twice:
        raise UsageError(
            f"{option}={value!r}: {', '.join(twice)} given more than once; expected each once"
        )
    return items


def card_config_option(config: str, option: str = "--configs", *, single: bool = False) -> str:
    """``config`` when it is a config of the task (``n32`` .. ``n16384``); else a one-line error
    naming ``option`` (``--configs``, ``--config``), the value and the configs, with ``n{N}`` as a
    suggestion for a bare or misspelt number (``32``, ``N32``, ``n0032``). The configs are what
    the option expects: ``one of`` them for an option of one config (``single``, ``--config``),
    ``some of`` them for a list (``--configs``)."""
    try:
        n = parse_config(config)
    except DataSourceError:
        n = None
    if n in ALLOWED_N and config == config_name(n):
        return config
    digits = config.strip().lstrip("nN")
    guess = config_name(int(digits)) if digits.isdigit() and int(digits) in ALLOWED_N else None
    raise UsageError(
        f"{option}: {config!r} is not a passkey_swar config (N in 32..16384, powers of 2; {CONFIGS_SECTION}); "
        f"expected {'one' if single else 'some'} of {card_configs_text()}"
        + (f"; did you mean {guess}?" if guess and guess != config else "")
    )


def folder_configs(source: str) -> list[str]:
    """The passkey_swar configs present as folders in a local ``source``, in order of N; folders named
    like a config but not one (e.g. ``n7``) are named on stderr as skipped."""
    card, skipped = [], []
    for name in os.listdir(source):
        if os.path.isdir(os.path.join(source, name)) and name[:1] == "n" and name[1:].isdigit():
            (card if int(name[1:]) in ALLOWED_N and name[1] != "0" else skipped).append(name)
    for name in sorted(skipped):
        print(
            f"skipping {os.path.join(source, name)}: not a passkey_swar config "
            f"(expected one of {card_configs_text()})",
            file=sys.stderr,
        )
    return sorted(card, key=parse_config)


def configs_option(value: str | None, source: str | None = None) -> list[str]:
    """The --configs list (each a passkey_swar config); by default those present in a local
    folder ``source``, else all of the release's."""
    configs = csv_list(value, "--configs")
    if configs is not None:
        return [card_config_option(c) for c in configs]
    if source not in (None, GENERATE) and os.path.isdir(source):
        found = folder_configs(source)
        if not found:
            raise DataSourceError(
                f"no passkey_swar config folder under {source!r}: expected the Hub layout "
                f"{source}/n{{N}}/{{split}}-00000-of-00001.parquet with N in 32..16384"
            )
        return found
    return [config_name(n) for n in ALLOWED_N]


def shown(value: str, limit: int = 100) -> str:
    """``value`` for a one-line message: its first ``limit`` characters and its length when longer."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value)} characters)"


def check_path_names(option: str, value: str, base: str) -> None:
    """No component of ``value`` is longer than the file system under ``base`` (its nearest
    existing folder) allows, nor the whole path (``NAME_MAX`` / ``PATH_MAX``, usually 255 / 4096
    bytes): the OS would fail only when the first file is created, with ``[Errno 36]``."""
    name_max, path_max = name_limits(base)
    for part in value.split(os.sep):
        size = len(os.fsencode(part))
        if size > name_max:
            raise UsageError(
                f"{option}={shown(value)}: the name is too long (a path component of {size} "
                f"bytes; the file system allows {name_max} per name)"
            )
    size = len(os.fsencode(os.path.abspath(value)))
    if size >= path_max:
        raise UsageError(
            f"{option}={shown(value)}: the name is too long ({size} bytes as an absolute path; "
            f"the file system allows {path_max - 1})"
        )


def check_out_folder(option: str, value: str, folder: str | None = None) -> None:
    """``folder`` (default: ``value``, the option's value) exists as a folder or can be
    created, and can be written to; checked before any work starts by creating (and removing)
    a temporary file in it or in its nearest existing parent (permission bits alone do not tell,
    e.g. for root or under ``/proc``). An empty value, or a name longer than the file system
    allows, is refused by name."""
    if not value:
        raise UsageError(f"{option}='': expected a {'folder' if folder is None else 'file'} path")
    folder = value if folder is None else folder
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"{option}={value}: {folder} is not a folder")
    base = str(nearest_existing(folder))
    if not os.path.isdir(base):
        raise UsageError(f"{option}={value}: {base} is not a folder")
    check_path_names(option, value, base)
    try:
        probe_write(base, prefix=PROBE_PREFIX)
    except OSError as exc:
        raise UsageError(
            f"{option}={value}: cannot create a file in {base} ({exc.strerror or exc})"
        ) from exc


def check_out_file(option: str, value: str) -> None:
    """``option=value`` names a file that can be written (its folder exists or can be created)."""
    if not value:
        raise UsageError(f"{option}='': expected a file path")
    if os.path.isdir(value):
        raise UsageError(f"{option}={value}: {value} is a folder; expected a file name")
    check_out_folder(option, value, os.path.dirname(os.path.abspath(value)))


def splits_option(value: str | None) -> list[str] | None:
    """The ``--splits`` list (each a split of ``SPLIT_SEEDS``), None when not given; a
    :class:`UsageError` naming every name that is no split, each with the split it is closest to:
    ``--splits: 'tset' is not a split (did you mean test?); expected some of train,validation,test``."""
    from swar_bench.utils.text import did_you_mean

    splits = csv_list(value, "--splits")
    unknown = [s for s in splits or [] if s not in SPLIT_SEEDS]
    if unknown:
        if len(unknown) == 1:
            named = f"{unknown[0]!r} is not a split{did_you_mean(unknown[0], SPLIT_SEEDS)}"
        else:
            named = ", ".join(f"{s!r}{did_you_mean(s, SPLIT_SEEDS)}" for s in unknown) + " are not splits"
        raise UsageError(f"--splits: {named}; expected some of {','.join(SPLIT_SEEDS)}")
    return splits


def params_option(value: str | None) -> PasskeySwarParams:
    if not value:
        return PasskeySwarParams()
    from swar_bench.utils.yaml_keys import DuplicateKey, json_unique

    try:
        fields = json_unique(value)
    except DuplicateKey as exc:
        raise UsageError(f"--params={value!r}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--params={value!r}: expected a JSON object, e.g. '{{\"w\": 8}}' ({exc.msg})"
        ) from exc
    if not isinstance(fields, dict):
        raise UsageError(f"--params={value!r}: expected a JSON object of PasskeySwarParams fields")
    unknown = set(fields) - set(PasskeySwarParams().to_dict())
    if unknown:
        raise UsageError(
            f"--params: unknown field(s) {sorted(unknown)}; expected some of {sorted(PasskeySwarParams().to_dict())}"
        )
    try:
        return PasskeySwarParams(**fields)
    except ValueError as exc:  # names the field as PasskeySwarParams.w: name the option the user typed
        raise UsageError(f"--params: {str(exc).removeprefix('PasskeySwarParams.')}") from None


def source_option(option: str, source: str) -> str:
    """``source`` as read (:func:`resolve_source`): ``generate``, the local folder it names
    (``~`` expanded), or a Hub id ``owner/name``. A file, a missing local path or a bare name is
    a one-line error at once, not a Hub request."""
    if source == GENERATE:
        return source
    folder = resolve_source(source, option)
    return source if folder is None else folder


def source_params(value: str | None, source: str) -> PasskeySwarParams:
    """The parameters to read ``source`` with: a local folder's record (``--params``, when
    given, must equal it), else ``--params`` or the release's."""
    if source != GENERATE and os.path.isdir(source):
        return folder_params(source, params_option(value) if value else None)
    return params_option(value)


def num_examples_option(value: int | None) -> int | None:
    if value is not None and not 1 <= value < 10**6:
        raise UsageError(f"--num-examples={value}: expected an integer in [1, 10**6)")
    return value
