"""The referee's refusal of a setting, named where the user set it.

``evaluate`` and the seed checks name a setting by its keyword (``seed=-1: expected an integer in
[0, 18446744073709551615]``); ``swar-bench referee`` reads that keyword from an option or from a
``--config`` file. :func:`option_line` turns the line into the one the user can act on: the option
as typed with the value as typed (``--seed=-1: expected ...``), or the config file holding the key
(``--config=run.yaml: seed=-1: expected ...``), whichever set the value last (a later setting
replaces an earlier one, as jsonargparse reads them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

SETTING = re.compile(r"(?P<key>[a-z_]+)(?P<index>\[\d+\])?=(?P<value>.*?)(?P<rest>(?:: | is ).*)", re.DOTALL)
"""A line that names a setting: ``key=value: ...``, ``key[i]=value: ...`` or ``key=value is ...``."""


def config_mapping(value: str) -> Any:
    """The YAML of the ``--config`` value ``value`` (a file, else inline YAML); None when unreadable."""
    import yaml

    try:
        if os.path.isfile(value):
            with open(value, encoding="utf-8") as handle:
                return yaml.safe_load(handle)
        return yaml.safe_load(value)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def last_setting(argv: list[str], key: str) -> tuple[str, str] | None:
    """Where ``argv`` sets ``key`` last: ``("--key", value as typed)`` for the option,
    ``("--config", the file as typed)`` for a ``--config`` mapping holding ``key``; None if nowhere."""
    found = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if not eq:
            if i + 1 >= len(argv):
                continue
            value = argv[i + 1]
        if name == f"--{key}":
            found = (name, value)
        elif name == "--config":
            mapping = config_mapping(value)
            if isinstance(mapping, dict) and key in mapping:
                found = (name, value)
    return found


def option_line(message: str, argv: list[str], keys: Iterable[str]) -> str:
    """``message`` naming a setting of ``keys`` by its keyword, led by where ``argv`` set it:
    ``seed=-1: ...`` becomes ``--seed=-1: ...`` (the value as typed) or ``--config=run.yaml:
    seed=-1: ...``; ``ranges[0]=-8: ...`` becomes ``--ranges=[-8,16]: ranges[0]=-8: ...``. Any
    other message, or a setting ``argv`` does not set, is returned unchanged."""
    found = SETTING.fullmatch(message)
    if found is None or found["key"] not in set(keys):
        return message
    where = last_setting(argv, found["key"])
    if where is None:
        return message
    option, value = where
    if option == "--config":
        return f"--config={value}: {message}"
    if found["index"]:
        return f"{option}={value}: {message}"
    return f"{option}={value}{found['rest']}"


def empty_key_line(shown: str, config: dict) -> str | None:
    """``--config='F': mechanism: is empty (YAML null); expected ...`` for the first key of the
    referee config ``config`` left empty (jsonargparse said only ``Unexpected config: mechanism:``,
    naming no file), else None. ``shown``: the option and file as the refusal names them."""
    key = next((k for k, v in config.items() if v is None), None)
    if key is None:
        return None
    return f"{shown}: {key}: is empty (YAML null); expected a value (or options) under {key}:, or no {key}: line"


def config_problem(value: str) -> str | None:
    """Why ``--config value`` is not a YAML mapping of referee options, or None when it is one.

    jsonargparse reports an empty file, a folder or a YAML list only as ``Unexpected config: ...``
    (nothing after the colon for an empty file); this names the file and what was expected. A
    value that is not a file is inline YAML to jsonargparse: fine if it is a mapping.
    """
    import yaml

    from swar_bench.utils.text import inline_mapping, yaml_problem
    from swar_bench.utils.yaml_keys import DuplicateKey, load_unique

    expected = "expected a YAML mapping of referee options (mechanism, ranges, seed, ...)"
    shown = f"--config={value!r}"
    if os.path.isdir(value):
        return f"{shown} is a folder; {expected} in a file"
    if not os.path.isfile(value):
        if not value.strip():
            return f"{shown} is empty; expected the path of a YAML file of referee options"
        return None if inline_mapping(value) else f"{shown}: no such file; {expected} in a file"
    try:
        with open(value, encoding="utf-8") as f:
            loaded = load_unique(f)
    except DuplicateKey as e:  # YAML would keep the last value without a word
        return f"{shown}: {e}"
    except (OSError, UnicodeDecodeError) as e:
        return f"{shown} cannot be read ({getattr(e, 'strerror', None) or e}); {expected}"
    except yaml.YAMLError as e:
        return f"{shown} is not valid YAML ({yaml_problem(e)}); {expected}"
    if loaded is None:
        return f"{shown} is empty (no options in it); {expected}"
    if not isinstance(loaded, dict):
        kind = "a YAML list" if isinstance(loaded, list) else f"the single YAML value {loaded!r}"
        return f"{shown} holds {kind}, not a mapping; {expected}"
    return empty_key_line(shown, loaded)  # `mechanism:` with nothing under it
