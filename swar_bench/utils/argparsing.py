"""The argument parser of the commands built on :mod:`argparse` (``swar-bench data``, ``demo``,
``check-mechanism``, the referee's sub-commands, ``study``), and the checks of the values they
share (paths, a seed)."""

from __future__ import annotations

import argparse
import numbers
import os
from collections.abc import Callable, Iterable
from typing import Any

TORCH_MAX_SEED = 2**64 - 1
"""The largest seed ``torch.manual_seed`` takes (``torch.Generator.manual_seed``: an unsigned 64-bit integer)."""


def _is_number(token: str) -> bool:
    """Whether ``token`` (``-1``, ``-0.5``) is a negative number, not an option."""
    try:
        float(token)
    except ValueError:
        return False
    return True


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


class NumberArg:
    """The ``type=`` of a numeric option: the word as typed becomes ``kind`` (``int`` or ``float``)
    when it is one and ``accepts`` it; else :class:`ArgumentParser` refuses it in one line, the word
    as typed and ``expected``: ``--jobs=abc: expected an integer >= 1``, ``--target=0: expected a
    value in (0, 1]``. One wording for a word that is no number and for a number out of range.

    ``expected`` reads after "expected" (``an integer >= 1``); ``accepts`` is the range (``nan``
    fails every comparison, so ``lambda v: v > 0`` refuses it)."""

    def __init__(self, kind: type, expected: str | Callable[[], str], accepts: Callable[[Any], bool] = lambda value: True) -> None:
        self.kind, self._expected, self.accepts = kind, expected, accepts
        self.__name__ = kind.__name__  # argparse names the type in its own messages

    @property
    def expected(self) -> str:
        """What the option takes, after "expected" (a callable ``expected`` is asked only now:
        a bound that needs a heavy import)."""
        return self._expected() if callable(self._expected) else self._expected

    def __call__(self, text: str) -> Any:
        """``text`` as ``kind``.

        Raises:
            ValueError: ``text`` is no ``kind`` or ``accepts`` refuses it (``ArgumentParser`` then
                says the one line)."""
        value = self.kind(text)  # ValueError for a word that is none: ArgumentParser._get_value
        if not self.accepts(value):
            raise ValueError(f"{text!r} is out of range")
        return value


def count_arg(minimum: int, what: str = "") -> NumberArg:
    """:class:`NumberArg` of an integer >= ``minimum`` (``what`` follows: ``of minutes``)."""
    return NumberArg(int, f"an integer >= {minimum}{f' {what}' if what else ''}", lambda value: value >= minimum)


def positive_arg(what: str) -> NumberArg:
    """:class:`NumberArg` of a finite number > 0 (``what``: ``a positive number of seconds``)."""
    import math

    return NumberArg(float, what, lambda value: math.isfinite(value) and value > 0)


def closest_option(typed: str, options: Iterable[str]) -> str | None:
    """The option of ``options`` (``--jobs``) closest to the ``typed`` one (``--jsob``), compared
    without their leading dashes (``swar_bench.utils.text.closest_name``), or None when none is
    close."""
    from swar_bench.utils.text import closest_name

    by_name = {o.lstrip("-"): o for o in options}
    close = closest_name(typed.lstrip("-"), sorted(by_name))
    return by_name[close] if close is not None else None


def unknown_options_message(unknown: list[str], suggestions: dict[str, str | None]) -> str:
    """``unknown option --jsob (did you mean --jobs?)`` (``unknown options --a, --b (did you mean
    --c?)`` for several): the refusal of options no parser knows, each named as typed (without
    its ``=value``) with its suggestion from ``suggestions`` when there is one."""
    shown = ", ".join(f"{flag} (did you mean {suggestions[flag]}?)" if suggestions.get(flag) else flag for flag in unknown)
    return f"unknown option{'s' if len(unknown) > 1 else ''} {shown}"


def _as_typed(token: str) -> str:
    """``--jsob`` of ``--jsob=2``: an option as typed, without its value."""
    return token.partition("=")[0]


def unrecognized_line(message: str, options: Iterable[str], prog: str) -> str | None:
    """argparse's and jsonargparse's ``unrecognized arguments: --seeed 1`` as ``unknown option
    --seeed (did you mean --seed?)`` (:func:`unknown_options_message`, each flag with the closest
    long option of ``options``), followed by ``; expected options of PROG (PROG --help)`` when a
    flag has no close option; stray values alone as ``unexpected argument 'x' (PROG --help)``.
    None for another message."""
    import re

    found = re.fullmatch(r"\s*[Uu]nrecognized arguments: (.*)", message, re.DOTALL)
    if found is None:
        return None
    extras = found.group(1).split()
    flags = [_as_typed(t) for t in extras if t.startswith("-") and len(t) > 1 and not _is_number(t)]
    if not flags:
        return f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(map(repr, extras))} ({prog} --help)"
    known = [o for o in options if o.startswith("--")]
    suggestions = {f: closest_option(f, known) for f in flags}
    line = unknown_options_message(flags, suggestions)
    return line if all(suggestions.values()) else f"{line}; expected options of {prog} ({prog} --help)"


class Spelled(str):
    """A string option value that remembers the spelling of the option that gave it (``option``:
    ``--init_args`` or ``--init-args``), so a refusal names the option as the user typed it."""

    option: str


class SpelledAs(argparse.Action):
    """``action=`` of an option with several spellings (``"--init_args", "--init-args"``): stores
    the value as a :class:`Spelled` string whose ``option`` is the spelling used."""

    def __call__(self, parser, namespace, values, option_string=None):
        value = Spelled(values)
        value.option = option_string or self.option_strings[0]
        setattr(namespace, self.dest, value)


def quoted(value: str) -> str:
    """``value`` as a shell takes it back (``A``, ``'a b'``), a control character as Python writes it."""
    import shlex

    return shlex.quote(value) if value.isprintable() else repr(value)


def spelling(value: Any, default: str) -> str:
    """The option spelling that gave ``value`` (:class:`SpelledAs`), else ``default``."""
    return getattr(value, "option", default)


TYPE_WORDS = {"int": "an integer", "float": "a number"}
"""What an option of ``type=int`` / ``type=float`` takes, as its refusal says it."""


class ArgumentParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose usage errors are one line, and that refuses
    ``--option=--`` and an empty value of a path argument (``type=PathArg(...)``) in one line.

    An unknown option is refused by the (sub-)command that was given it, with its closest
    option: ``swar-bench study status: error: unknown option --jsob (did you mean --jobs?)``
    (:meth:`parse_args`). Abbreviated long options are off (``allow_abbrev=False``): ``--config``
    is not silently ``--configs``.

    A usage error is ``PROG: error: MESSAGE`` on stderr, exit 2: argparse's usage block before
    it, often longer than the screen for these commands, is left to ``--help``.

    Python 3.11's argparse drops a ``--`` given as an option's value and hands the command an
    empty list instead of a string (or of the ``type=`` it asked for), so ``--config=--`` would
    reach the command as ``[]`` and fail there with a traceback. Here it is a usage error
    (exit 2) naming the option, like any other missing value. Sub-parsers made with
    ``add_subparsers`` are of this class too (argparse's default ``parser_class``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def long_options(self) -> list[str]:
        """Every ``--option`` spelling this parser takes (aliases included)."""
        return [s for a in self._actions for s in a.option_strings if s.startswith("--")]

    def canonical(self, option: str | None) -> str | None:
        """The first long spelling of the option ``option`` is a spelling of (``--init-args`` ->
        ``--init_args``, ``swar_bench.mechanisms.check_cli.INIT_ARGS``): what a "did you mean"
        suggests, whichever spelling the typo is closest to."""
        for action in self._actions:
            if option in action.option_strings:
                return next(s for s in action.option_strings if s.startswith("--"))
        return option

    def suggestion(self, typed: str) -> str | None:
        """The option meant by the unknown ``typed`` (:func:`closest_option`), in its first spelling
        (:meth:`canonical`); None when none is close."""
        return self.canonical(closest_option(typed, self.long_options()))

    def chosen_parser(self, namespace: argparse.Namespace) -> ArgumentParser:
        """The (sub-)parser that parsed the last words of the command line: the sub-command
        recorded in ``namespace`` (its ``dest``), recursively, else this parser."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(namespace, action.dest, None) or "")
                if isinstance(chosen, ArgumentParser):
                    return chosen.chosen_parser(namespace)
        return self

    def unknown_message(self, extras: list[str]) -> str:
        """The refusal of the words ``extras`` this parser left: its unknown options with their
        "did you mean" (:func:`unknown_options_message`), else the stray values."""
        flags = [_as_typed(t) for t in extras if t.startswith("-") and len(t) > 1 and not _is_number(t)]
        if not flags:
            return f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(map(repr, extras))} ({self.prog} --help)"
        known = self.long_options()
        suggestions = {f: self.suggestion(f) for f in flags}
        line = unknown_options_message(flags, suggestions)
        if all(suggestions.values()):
            return line
        listed = [o for o in known if o != "--help"]
        if listed:
            return f"{line}; expected one of {', '.join(listed)} ({self.prog} --help)"
        return f"{line}; {self.takes_no_options()} ({self.prog} --help)"

    def takes_no_options(self) -> str:
        """What a parser without options takes, said in place of the options it lacks: ``swar-bench
        study status takes no options, only its argument study: the study file (YAML), e.g. ...``
        (every positional argument, with its help), or ``... takes no options and no arguments``."""
        arguments = [
            a for a in self._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
        ]
        if not arguments:
            return f"{self.prog} takes no options and no arguments"

        def shown(action: argparse.Action) -> str:
            name = action.metavar if isinstance(action.metavar, str) else action.dest
            helped = action.help not in (None, argparse.SUPPRESS)
            return f"{name}: {action.help}" if helped else str(name)

        noun = "argument" if len(arguments) == 1 else "arguments"
        return f"{self.prog} takes no options, only its {noun} {'; '.join(shown(a) for a in arguments)}"

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, remembering the words given this parser (:meth:`required_message`)."""
        import sys

        self._given = list(sys.argv[1:] if args is None else args)
        repeated = self.repeated_message(self._given)
        if repeated:
            self.error(repeated)
        return super().parse_known_args(args, namespace)

    def repeated_message(self, words: list[str]) -> str | None:
        """The refusal of an option of this parser given more than once in ``words``, else None:
        argparse keeps the last value and drops the others without a word, so ``verdict --baseline A
        --challenger B --baseline B`` compared B with itself. ``--baseline given 2 times (A, B);
        expected it once``. Options meant to repeat (``action="append"``, ``count``) pass; words
        after ``--`` or after a sub-command's name (its own parser checks them) are not options
        of this parser."""
        commands = {name for a in self._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}
        repeatable = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
                      argparse._ExtendAction, argparse._HelpAction, argparse._VersionAction)
        given: dict[argparse.Action, list[tuple[str, str | None]]] = {}
        for i, word in enumerate(words):
            if word == "--" or word in commands:
                break
            if not word.startswith("-") or _is_number(word):
                continue
            flag, eq, value = word.partition("=")
            action = self._option_string_actions.get(flag)
            if action is None or isinstance(action, repeatable):
                continue
            if not eq:
                value = words[i + 1] if action.nargs != 0 and i + 1 < len(words) else None
            given.setdefault(action, []).append((flag, value))
        for action, uses in given.items():
            if len(uses) > 1:
                name = self.canonical(uses[0][0])
                spellings = sorted({flag for flag, _ in uses})
                values = [v for _, v in uses if v is not None]
                one_word = action.nargs in (None, "?") and len(values) == len(uses)  # a list option: its first word only
                shown = f" ({', '.join(quoted(v) for v in values)})" if one_word else ""
                also = f" as {', '.join(spellings)}" if len(spellings) > 1 else ""
                return f"{name} given {len(uses)} times{also}{shown}; expected it once"
        return None

    def unknown_flags(self) -> list[str]:
        """The ``--flags`` (as typed, without ``=value``) of the words last given this parser that no
        option of it or of its sub-commands' parsers takes, in order; none after ``--``."""
        given = getattr(self, "_given", [])
        words = given[: given.index("--")] if "--" in given else given
        known = set(self.all_option_strings())
        flags = [_as_typed(t) for t in words if t.startswith("-") and len(t) > 1 and not _is_number(t)]
        return [f for f in flags if f not in known]

    def all_option_strings(self) -> list[str]:
        """Every option spelling of this parser and of its sub-commands' parsers, recursively."""
        found = [s for a in self._actions for s in a.option_strings]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += sub.all_option_strings() if isinstance(sub, ArgumentParser) else []
        return found

    def required_message(self, message: str) -> str | None:
        """argparse's ``the following arguments are required: --config`` when the words given this
        parser also hold an unknown option (``--configs``): the refusal of that option with its
        "did you mean" (:meth:`unknown_message`), the missing arguments that no suggestion names
        after it; None for another message, or when every option given is known."""
        import re

        missing = re.fullmatch(r"the following arguments are required: (.*)", message.strip())
        flags = self.unknown_flags() if missing else []
        if not flags:
            return None
        suggested = {self.suggestion(f) for f in flags}
        unnamed = [n.strip() for n in missing.group(1).split(",") if n.strip() not in suggested]
        line = self.unknown_message(flags)
        return f"{line}; the following arguments are required: {', '.join(unnamed)}" if unnamed else line

    def parse_args(self, args=None, namespace=None):
        """:meth:`argparse.ArgumentParser.parse_args`, an unknown option refused by the sub-command
        it was given to (:meth:`unknown_message`)."""
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self.chosen_parser(namespace)
            parser.error(parser.unknown_message(extras))
        return namespace

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected one value; got '--'")
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str):
        if isinstance(action.type, NumberArg):
            try:
                return action.type(arg_string)
            except (ValueError, OverflowError):
                name = self.canonical(next(iter(action.option_strings), None)) or (action.metavar or action.dest).upper()
                self.error(f"{name}={arg_string}: expected {action.type.expected}")
        if isinstance(action.type, PathArg) and arg_string == "":
            name = "/".join(action.option_strings) or (action.metavar or action.dest).upper()
            self.error(empty_path_message(name, action.type.expected))
        return super()._get_value(action, arg_string)

    def error(self, message: str):
        """Exit 2 with ``PROG: error: MESSAGE``: one line, no usage block. A mistyped choice
        gets a "did you mean" (:func:`choice_message`), and so does a mistyped required option
        (:meth:`required_message`: ``--configs`` for ``--config`` is refused as unknown, not as a
        missing ``--config``); an option without its value says what it takes
        (:meth:`missing_value_message`)."""
        line = (self.required_message(message) or self.missing_value_message(message)
                or self.invalid_value_message(message) or self.missing_arguments_message(message)
                or self.choice_message(message))
        self.exit(2, f"{self.prog}: error: {line}\n")

    def invalid_value_message(self, message: str) -> str | None:
        """argparse's ``argument --num-examples: invalid int value: 'abc'`` as ``--num-examples=abc:
        expected an integer`` (the value as typed, the option in its first spelling). None for
        another message."""
        import re

        found = re.fullmatch(r"argument (\S+): invalid (\w+) value: '(.*)'", message.strip(), re.DOTALL)
        if found is None:
            return None
        names, kind, value = found.groups()
        name = self.canonical(names.split("/")[0]) if names.startswith("-") else names.upper()
        return f"{name}={value}: expected {TYPE_WORDS.get(kind, f'a {kind} value')}"

    def missing_arguments_message(self, message: str) -> str | None:
        """argparse's ``the following arguments are required: --out`` as ``--out is required;
        expected --out OUT (the output folder) (PROG --help)``: each missing argument with its
        metavar and help. None for another message (or a missing sub-command: ``choice_message``)."""
        import re

        missing = re.fullmatch(r"the following arguments are required: (.*)", message.strip())
        if missing is None or any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            return None
        names = [n.strip() for n in missing.group(1).split(",") if n.strip()]
        shown = []
        for name in names:
            action = next((a for a in self._actions if name in a.option_strings or name in (a.dest, a.metavar)), None)
            if action is None:
                return None
            metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
            words = f"{self.canonical(name)} {metavar}" if action.option_strings else metavar
            helped = action.help not in (None, argparse.SUPPRESS)
            shown.append(f"{words} ({str(action.help).rstrip('.')})" if helped else words)
        first = [self.canonical(n) if n.startswith("-") else n.upper() for n in names]
        verb = "is" if len(names) == 1 else "are"
        return f"{' and '.join(first)} {verb} required; expected {'; '.join(shown)} ({self.prog} --help)"

    def missing_value_message(self, message: str) -> str | None:
        """argparse's ``argument --jobs: expected one argument`` (an option given last, or before
        another option, without its value) as ``--jobs: no value given; expected an integer >= 1``:
        the option in its first spelling and what it takes (a :class:`NumberArg`'s or
        :class:`PathArg`'s words, its choices, else ``a value``; ``2 values``, ``one value or
        more`` for a list). None for another message."""
        import re

        found = re.fullmatch(r"argument (\S+): expected (one|at least one|\d+) arguments?", message.strip())
        if found is None:
            return None
        names, count = found.groups()
        action = self._option_string_actions.get(names.split("/")[0])
        if action is None:
            return None
        kind = action.type
        if isinstance(kind, (NumberArg, PathArg)):
            what = kind.expected
        elif action.choices is not None:
            what = f"one of {', '.join(map(str, action.choices))}"
        else:
            what = "a value" if count == "one" else ("one value or more" if count == "at least one" else f"{count} values")
            if isinstance(action.metavar, str):
                what += f" ({action.metavar})"
        if count != "one" and isinstance(kind, (NumberArg, PathArg)):
            what = f"{'one or more' if count == 'at least one' else count} of {what}"
        given = "no value given" if count in ("one", "at least one") else "too few values"
        return f"{self.canonical(names.split('/')[0])}: {given}; expected {what}"

    def choice_message(self, message: str) -> str:
        """argparse's ``argument command: invalid choice: 'generat' (choose from 'generate', ...)``
        as ``unknown command 'generat' (did you mean generate?); expected one of generate, ...
        (PROG --help)`` for a subcommand, and ``argument --split: invalid choice: 'tset' (did you
        mean test?); expected one of train, validation, test`` for an option; a missing subcommand as
        ``no command given; expected one of generate, ... (PROG --help)``; other messages unchanged."""
        import re

        from swar_bench.utils.text import did_you_mean, unknown_name_line

        missing = re.fullmatch(r"the following arguments are required: (.*)", message.strip())
        commands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        if missing and commands and commands[0].dest in missing.group(1).split(", "):
            return f"no command given; expected one of {', '.join(commands[0].choices)} ({self.prog} --help)"
        found = re.fullmatch(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)", message.strip(), re.DOTALL)
        if found is None:
            return message
        name, value, listing = found.groups()
        choices = re.findall(r"'([^']*)'", listing) or [c.strip() for c in listing.split(",")]
        commands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction) and name in (a.dest, a.metavar)]
        if commands:
            return unknown_name_line("command", value, choices, f" ({self.prog} --help)")
        return f"argument {name}: invalid choice: {value!r}{did_you_mean(value, choices)}; expected one of {', '.join(choices)}"
