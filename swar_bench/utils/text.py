"""Small text helpers for what the commands print."""

from __future__ import annotations


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
