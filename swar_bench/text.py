"""Small text helpers for what the commands print."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 parquet file"``, ``"0 parquet files"``, ``"2 parquet files"``: the count and the noun in
    the number the count needs (English: singular only for exactly 1). ``plural_form`` defaults to
    ``noun + "s"``."""
    return f"{count:,} {noun if count == 1 else (plural_form or noun + 's')}"
