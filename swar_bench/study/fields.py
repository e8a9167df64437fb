"""The values of a study file as a user writes them: the one-line error of a study
(:class:`StudyError`), numbers (``1e-3`` too, which YAML 1.1 reads as text), counts, fractions,
learning-rate lists, unknown keys and an entry's name in an error (``swar_bench.study.spec``,
``swar_bench.study.mqar``, ``swar_bench.study.slurm_spec``)."""

from __future__ import annotations

import math
import re
from typing import Any

from swar_bench.utils.text import closest_name

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


class StudyError(ValueError):
    """A study file, or a request on it, that cannot be run: the message is one line."""


def _unknown(keys: set[str], allowed: set[str], where: str) -> None:
    for key in sorted(keys - allowed):
        close = closest_name(key, sorted(allowed))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise StudyError(
            f"{where}: unknown key {key!r}{hint}; expected some of {', '.join(sorted(allowed))}"
        )


INTEGER_TEXT = re.compile(r"[-+]?[0-9]+")
NUMBER_TEXT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def number(value: Any, integer: bool = False) -> int | float | None:
    """A number of a study file as a user writes it, or None when ``value`` is none.

    A number field takes an int, a finite float, or the text of a decimal number: YAML 1.1 (which
    PyYAML reads) takes ``1e-3``, ``1E-3`` and ``1.0e3`` (no dot, or no sign in the exponent) for
    text, where the fit configs' parser (jsonargparse) reads a number, and so does a study file.
    An integer field (``integer``) takes an int or the text of one (``"16"``, as jsonargparse
    does), never a float or ``1.5`` / ``1e3`` text (jsonargparse refuses them too). None for a
    bool (YAML's ``true``, ``yes``, ``on``), other text (hex, ``1_000``, ``inf``), NaN and infinity.
    """
    if isinstance(value, str):
        text = value.strip()
        if (INTEGER_TEXT if integer else NUMBER_TEXT).fullmatch(text) is None:
            return None
        value = int(text) if integer else float(text)
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return None
    if integer:
        return value
    try:
        value = float(value)
    except OverflowError:  # an int beyond any float
        return None
    return value if math.isfinite(value) else None


def _count(value: Any, what: str, low: int = 1, high: int | None = None) -> int:
    """An integer field of a study file in ``[low, high]`` (no upper bound when ``high`` is None).

    Raises:
        StudyError: one line naming the field, the value and the range."""
    count = number(value, integer=True)
    if count is None or count < low or (high is not None and count > high):
        expected = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise StudyError(f"{what}={value!r} is invalid; expected {expected}")
    return count


MAX_SEEDS = 1000
"""The most seeds a mechanism of a study runs (each a whole fit and test): more is a typo, and the
plan of runs is made before any runs (``seeds: 99999999999`` ran out of memory making it)."""


def _rates(value: Any, what: str, allow_empty: bool = False) -> tuple[float, ...]:
    expected = "expected a list of distinct positive learning rates"
    if not isinstance(value, list) or not (value or allow_empty):
        raise StudyError(f"{what}={value!r} is invalid; {expected}")
    rates = tuple(number(v) for v in value)
    for i, (v, rate) in enumerate(zip(value, rates)):
        if rate is None or rate <= 0:
            raise StudyError(f"{what}[{i}]={v!r} is invalid; expected a positive learning rate, a number such as 1e-3")
    if len(set(rates)) != len(rates):
        raise StudyError(f"{what}={value!r} is invalid; {expected}")
    return rates


def _fraction(value: Any, what: str) -> float:
    fraction = number(value)
    if fraction is None or not 0 <= fraction <= 1:
        raise StudyError(f"{what}={value!r} is invalid; expected a number in [0, 1]")
    return fraction


def named(at: str, entry: dict[str, Any]) -> str:
    """``at (name)`` when the entry (a mechanism of a study, an entry of an MQAR study) has a valid
    name, else ``at``: ``s.yaml: mechanisms[0] (GRU_tiny)``, ``s.yaml: entries[4] (Mamba_T64_d64)``."""
    name = entry.get("name")
    return f"{at} ({name})" if isinstance(name, str) and NAME.match(name) else at
