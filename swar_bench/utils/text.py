"""Small text helpers for what the commands print."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 parquet file"``, ``"0 parquet files"``, ``"2 parquet files"``: the count and the noun in
    the number the count needs (English: singular only for exactly 1). ``plural_form`` defaults to
    ``noun + "s"``."""
    return f"{count:,} {noun if count == 1 else (plural_form or noun + 's')}"


def yaml_problem(err: Exception) -> str:
    """What a ``yaml.YAMLError`` says is wrong and where, in a few words for a one-line error:
    ``"expected ',' or ']', but got '<stream end>' at line 2, column 6"`` (PyYAML's ``problem``
    and its 0-based ``problem_mark`` shown 1-based; its class name when it has no problem)."""
    problem = getattr(err, "problem", None) or type(err).__name__
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def inline_mapping(value: str) -> bool:
    """True when ``value`` (given to an option that loads a YAML file, such as ``--config``, and
    naming no file) reads as an inline YAML mapping, which jsonargparse takes in place of a file."""
    import yaml

    try:
        return isinstance(yaml.safe_load(value), dict)
    except yaml.YAMLError:
        return False


def one_edit_apart(a: str, b: str) -> bool:
    """True when ``b`` is ``a`` with one character dropped, inserted, replaced, or two adjacent
    characters swapped (optimal string alignment distance <= 1; Damerau, 1964): the typos a
    suggestion must always catch."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


def closest_name(name: str, names: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The one of ``names`` closest to the mistyped ``name``, or None when none is close: first
    the names one typo away (:func:`one_edit_apart`; for a ``name`` of 3 characters or more), the most similar of them by ``difflib``'s
    ratio; else ``difflib.get_close_matches`` (``cutoff``), which alone misses some single typos
    (``reefree`` for ``referee``: ratio 0.43)."""
    import difflib

    name, names = str(name), [str(n) for n in names]
    # one edit is most of a name of one or two characters: there difflib's ratio alone decides
    near = [n for n in names if one_edit_apart(name, n)] if len(name) >= 3 else []
    if near:
        return max(near, key=lambda n: difflib.SequenceMatcher(None, name, n).ratio())
    close = difflib.get_close_matches(name, names, n=1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean d_model?)`` naming the closest of ``names`` to ``name``
    (:func:`closest_name`), or ``""`` when none is close: the suggestion of every one-line
    refusal of a mistyped name (an option, a key, a command)."""
    close = closest_name(name, names)
    return f" (did you mean {close}?)" if close is not None else ""


def unknown_name_line(what: str, name: str, names: Iterable[str], hint: str = "") -> str:
    """``unknown command 'demoo' (did you mean demo?); expected one of fit, ..., demo (swar-bench
    --help)``: the one line refusing a mistyped ``what`` (``hint`` follows the listing)."""
    names = list(names)
    return f"unknown {what} {name!r}{did_you_mean(name, names)}; expected one of {', '.join(names)}{hint}"


def shown_yaml(value: Any) -> str:
    """``value`` as YAML writes it on one line (``5``, ``[1, 2]``, ``abc``), cut at 60 characters."""
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
    return text if len(text) <= 60 else text[:57] + "..."
