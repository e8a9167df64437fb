"""Small text helpers for what the commands print."""

from __future__ import annotations

from collections.abc import Iterable


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


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean d_model?)`` naming the closest of ``names`` to ``name``
    (``difflib.get_close_matches``, cutoff 0.6), or ``""`` when none is close: the suggestion of
    every one-line refusal of a mistyped name (an option, a key, a command)."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def unknown_name_line(what: str, name: str, names: Iterable[str], hint: str = "") -> str:
    """``unknown command 'demoo' (did you mean demo?); expected one of fit, ..., demo (swar-bench
    --help)``: the one line refusing a mistyped ``what`` (``hint`` follows the listing)."""
    names = list(names)
    return f"unknown {what} {name!r}{did_you_mean(name, names)}; expected one of {', '.join(names)}{hint}"
