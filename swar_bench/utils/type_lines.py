"""A value of the wrong type for a numeric option, as the one line of every other refusal of it.

jsonargparse refuses ``--seed=1.5``, ``--grad_clip=nan``, ``--trainer.max_steps=abc`` or
``--ranges=[abc]`` in its own words (``Expected int. Got value: 1.5``, ``Expected one of float,
None. Got value: nan``), naming the type, not what the option takes. :func:`type_refusal_line`
says it as the option's range check does: the option and the value as typed, then what the
option expects (``--seed=1.5: expected an integer in [0, 18446744073709551615]``), or the
``--config`` file and its key that set it (``--config=/abs/run.yaml: seed=1.5: expected ...``); a
list item is named with its index (``--ranges=[abc]: ranges[0]=abc: expected an integer >= 6``).

What an option expects comes from the command (``expected``: the referee's
``swar_bench.referee.settings.expected_tail``, fit's ``swar_bench.harness.values.expected_tail``),
else from the type: ``an integer``, ``a finite number`` (nan and inf are refused), ``... or null``.
Used by ``config_errors.parse_error_line``; imports nothing of the project.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

NUMERIC = {"int", "float", "bool", "None"}
"""The types of a numeric option's refusal (``Expected one of bool, int``, ``Expected one of float, None``)."""

Expected = Callable[[str], "str | None"]
"""An option's tail after its value, for a command's own options: ``": expected an integer >= 1"``
or ``" is invalid; expected a positive finite learning rate"`` (the form of its range check);
``OPTION[]`` asks for the tail of one item of a list option. None: not known."""


def numeric_types(reason: str) -> set[str] | None:
    """The types of jsonargparse's refusal ``reason`` (type reprs already read: ``Expected int. Got
    value: abc``, ``Expected one of float, None. Got value: nan``) when they are those of a
    number (int or float, with bool or None), else None."""
    found = re.fullmatch(r"Expected (?:one of )?([\w, ]+)\. Got value:.*", reason, re.DOTALL)
    if found is None:
        return None
    types = {t.strip() for t in found.group(1).split(",")}
    return types if types <= NUMERIC and types & {"int", "float", "bool"} else None


def generic_expected(types: set[str]) -> str:
    """What a value of ``types`` is, in words: ``an integer``, ``a finite number or null``, ``true,
    false or an integer``."""
    words = ["null"] if "None" in types else []
    words += ["true", "false"] if "bool" in types else []
    if types & {"int", "float"}:
        words.append("a finite number" if "float" in types else "an integer")
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]


def spelled(value: Any) -> str:
    """``value`` as YAML and the command line spell it: ``true``, ``null``, ``[0.9, abc]``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(spelled(v) for v in value) + "]"
    return str(value)


def _as_typed(got: str) -> str:
    """jsonargparse's ``Got value`` of a scalar as YAML spells it (``True`` -> ``true``)."""
    return {"True": "true", "False": "false", "None": "null"}.get(got, got)


def _config_node(source: str, option: str) -> Any:
    """The value of the dotted ``option`` in the file of ``source`` (``--config=/abs/run.yaml``), else None."""
    import yaml

    try:
        with open(source.removeprefix("--config="), encoding="utf-8") as handle:
            node = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    for part in option.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _item(whole: Any, got: str) -> int | None:
    """The index of the item of the list ``whole`` that jsonargparse refused as ``got``, else None."""
    if not isinstance(whole, list):
        return None
    return next((i for i, item in enumerate(whole) if _as_typed(got) in (spelled(item), str(item))), None)


def type_refusal_line(option: str, reason: str, got: str, typed: str | None, source: str | None,
                      expected: Expected | None = None, note: str = "",
                      fallback: Callable[[str], str | None] | None = None) -> str | None:
    """The one line for jsonargparse's type refusal ``reason`` of the dotted ``option`` (its ``Got
    value`` is ``got``) when the option takes a number (:func:`numeric_types`), else None.

    ``typed``: the whole value as typed on the command line (None when ``source``, the
    ``--config=FILE`` that set it, did); ``expected``: the command's tails (:data:`Expected`),
    ``fallback``: what a float option given nan or inf expects (``config_errors.FINITE_FLOAT_EXPECTED``);
    ``note``: what follows the line (`` (an argument of swar_bench.mechanisms.GRU)``)."""
    types = numeric_types(reason)
    if types is None:
        return None
    import yaml

    def tail(key: str) -> str:
        known = expected(key) if expected is not None else None
        finite = fallback(key) if fallback is not None and not key.endswith("[]") else None
        return known or (f" is invalid; expected {finite}" if finite else f": expected {generic_expected(types)}")

    if source is not None:
        whole: Any = _config_node(source, option)
        lead = f"{source}: {option}={spelled(whole) if isinstance(whole, list) else _as_typed(got)}"
        item_lead = f"{source}: {option}"
    else:
        shown = typed if typed is not None else _as_typed(got)
        try:
            whole = yaml.safe_load(shown) if shown.lstrip().startswith("[") else None
        except yaml.YAMLError:
            whole = None
        lead = item_lead = f"--{option}={shown}"
    index = _item(whole, got)
    if index is None or (expected is not None and expected(option)):  # a scalar, or a list said as a whole (betas)
        return f"{lead}{tail(option)}{note}"
    item = f"{option}[{index}]={_as_typed(got)}"
    return f"{item_lead}: {item}{tail(option + '[]')}{note}" if source is None else f"{item_lead}[{index}]={_as_typed(got)}{tail(option + '[]')}{note}"
