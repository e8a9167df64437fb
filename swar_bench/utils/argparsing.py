"""The argument parser of the commands built on :mod:`argparse` (``swar-bench data``, ``demo``,
``check-mechanism``, the referee's sub-commands, ``study``), and the checks of the values they
share (paths, a seed)."""

from __future__ import annotations

import argparse
import numbers
import os
from collections.abc import Callable
from typing import Any

TORCH_MAX_SEED = 2**64 - 1
"""The largest seed ``torch.manual_seed`` takes (``torch.Generator.manual_seed``: an unsigned 64-bit integer)."""


def check_seed(seed: Any, name: str = "seed", maximum: int = TORCH_MAX_SEED, minimum: int = 0) -> int:
    """``seed`` as an int when it is an integer (``int`` or a numpy integer, not ``bool``, not a
    float) in ``[minimum, maximum]``: the one seed check of the referee (``maximum`` =
    ``TORCH_MAX_SEED``, what ``torch.manual_seed`` takes) and of the conformance check (``maximum``
    = ``swar_bench.mechanisms.conformance.max_seed``, so every example seed it derives stays
    below ``2**63``, docs/TASK.md "Columns").

    Raises:
        ValueError: one line naming ``name=seed`` and the accepted range, e.g.
            ``seed=-1: expected an integer in [0, 18446744073709551615]``.
    """
    integral = isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
    if not integral or not minimum <= int(seed) <= maximum:
        shown = str(int(seed)) if integral else repr(seed)
        raise ValueError(f"{name}={shown}: expected an integer in [{minimum}, {maximum}]")
    return int(seed)


def empty_path_message(option: str, expected: str) -> str:
    """``--out='': expected a folder path``: the one-line refusal of an empty path, shared by every
    command (an empty path would silently mean the current folder)."""
    return f"{option}='': expected {expected}"


def check_path_given(option: str, value: str | os.PathLike | None, expected: str) -> None:
    """Raise ValueError (:func:`empty_path_message`) when a path option's ``value`` is the empty
    string; None (not given) and any other value pass."""
    if value is not None and os.fspath(value) == "":
        raise ValueError(empty_path_message(option, expected))


def check_no_dashes_value(argv: list[str]) -> None:
    """Raise ValueError (one line, as :class:`ArgumentParser` says it) for an ``--option=--`` in
    ``argv``: jsonargparse, like Python 3.11's argparse, drops a ``--`` after ``=`` and hands the
    option an empty list (``--out: Expected str. Got value: []``)."""
    for arg in argv:
        name, eq, value = arg.partition("=")
        if eq and value == "--" and name.startswith("--") and len(name) > 2:
            raise ValueError(f"argument {name}: expected one value; got '--'")


class PathArg:
    """The ``type=`` of a path-valued argument: :class:`ArgumentParser` refuses an empty value in
    one line naming the argument and ``expected`` (``--out='': expected a folder path``); any
    other value is ``convert(value)`` (``str`` by default, e.g. ``pathlib.Path``)."""

    def __init__(self, expected: str, convert: Callable[[str], Any] = str) -> None:
        self.expected = expected
        self.convert = convert
        self.__name__ = "path"  # argparse names the type in its own messages

    def __call__(self, value: str) -> Any:
        return self.convert(value)


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose usage errors are one line, and that refuses
    ``--option=--`` and an empty value of a path argument (``type=PathArg(...)``) in one line.

    A usage error is ``PROG: error: MESSAGE`` on stderr, exit 2: argparse's usage block before
    it, often longer than the screen for these commands, is left to ``--help``.

    Python 3.11's argparse drops a ``--`` given as an option's value and hands the command an
    empty list instead of a string (or of the ``type=`` it asked for), so ``--config=--`` would
    reach the command as ``[]`` and fail there with a traceback. Here it is a usage error
    (exit 2) naming the option, like any other missing value. Sub-parsers made with
    ``add_subparsers`` are of this class too (argparse's default ``parser_class``).
    """

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected one value; got '--'")
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str):
        if isinstance(action.type, PathArg) and arg_string == "":
            name = "/".join(action.option_strings) or (action.metavar or action.dest).upper()
            self.error(empty_path_message(name, action.type.expected))
        return super()._get_value(action, arg_string)

    def error(self, message: str):
        """Exit 2 with ``PROG: error: MESSAGE``: one line, no usage block. A mistyped choice
        gets a "did you mean" (:func:`choice_message`)."""
        self.exit(2, f"{self.prog}: error: {self.choice_message(message)}\n")

    def choice_message(self, message: str) -> str:
        """argparse's ``argument command: invalid choice: 'generat' (choose from 'generate', ...)``
        as ``unknown command 'generat' (did you mean generate?); expected one of generate, ...
        (PROG --help)`` for a subcommand, and ``argument --split: invalid choice: 'tset' (did you
        mean test?); expected one of train, validation, test`` for an option; other messages unchanged."""
        import re

        from swar_bench.utils.text import did_you_mean, unknown_name_line

        found = re.fullmatch(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)", message.strip(), re.DOTALL)
        if found is None:
            return message
        name, value, listing = found.groups()
        choices = re.findall(r"'([^']*)'", listing) or [c.strip() for c in listing.split(",")]
        commands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction) and name in (a.dest, a.metavar)]
        if commands:
            return unknown_name_line("command", value, choices, f" ({self.prog} --help)")
        return f"argument {name}: invalid choice: {value!r}{did_you_mean(value, choices)}; expected one of {', '.join(choices)}"
