"""The argument parser of the commands built on :mod:`argparse` (``swar-bench data``, ``demo``,
``check-mechanism``, the referee's sub-commands, ``scripts/results.py``)."""

from __future__ import annotations

import argparse


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose usage errors are one line, and that refuses
    ``--option=--`` in one line.

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

    def error(self, message: str):
        """Exit 2 with ``PROG: error: MESSAGE``: one line, no usage block."""
        self.exit(2, f"{self.prog}: error: {message}\n")
