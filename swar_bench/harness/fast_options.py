"""Refuse an unknown option of ``swar-bench fit|validate|test|predict`` before Lightning is imported.

Building the LightningCLI parser needs ``lightning`` (and with it torch, torchmetrics, scipy and
torch._dynamo): 5-10 s on an idle laptop core, 35 s on a loaded one, spent before a mistyped
``--trainer.max_stepz 10`` is refused. The options of the fixed groups (``--trainer.*``,
``--model.*``, ``--data.*``, ``--checkpoint.*``, ...) and the subcommand's own (``--ckpt_path``)
are the parameters of known constructors and methods; they are read (``swar_bench.utils.option_table``) from the source files
with ``ast`` (nothing is imported; a file is located with ``importlib.util.find_spec`` of its
top-level package, which does not import it), as jsonargparse reads them from their signatures.
Only what the parser would refuse is refused: a flag that is no option and no prefix of one
(argparse accepts an unambiguous prefix), in a group whose constructor takes no ``**kwargs``
(those forward to a base class). The keys of a mapping option whose keys are a dataclass's fields
(``--data.mqar.num_kv_pairs``: ``NESTED``) are checked against those fields, so a misspelt one is
named as the command-line option it is; the nested options of a class-typed option
(``--model.mechanism.init_args.*``, ``--trainer.logger.*``) are left to the parser.
``tests/harness/test_fast_options.py`` checks this table against the real parser.
"""

from __future__ import annotations

from swar_bench.utils.option_table import (  # noqa: F401 - the table lives below the layers that read it
    GROUPS,
    NESTED,
    SKIPPED_METHOD_ARGS,
    TOP_LEVEL,
    _class_node,
    _fields,
    _parameters,
    known_options,
    nested_fields,
    own_optimizer_note,
)
from swar_bench.utils.text import closest_name


def unknown_nested(name: str) -> tuple[str, str, str | None] | None:
    """``(mapping option, typed key, closest key or None)`` when the dotted option ``name``
    (``data.mqar.num_kv_pair``) sets a key of a ``NESTED`` mapping option that is none of its
    fields, else None."""
    for option in NESTED:
        if not name.startswith(option + "."):
            continue
        fields = nested_fields(option)
        key = name[len(option) + 1:].split(".")[0]
        if fields is None or key in fields:
            return None
        return option, key, closest_name(key, sorted(fields))
    return None


def unknown_nested_options(argv: list[str]) -> list[tuple[str, str | None]]:
    """The ``--flags`` of ``argv`` that set a key of a ``NESTED`` mapping option that is none of
    its fields, each with the closest option (``--data.mqar.num_kv_pairs``) or None, in order."""
    found = []
    for i, token in enumerate(argv[1:], start=1):
        if not token.startswith("--"):
            continue
        typed, eq, value = token[2:].partition("=")
        if typed in NESTED:  # an inline mapping: --data.mqar='{num_kv_pairs: 8}'
            found += _unknown_inline(typed, value if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
            continue
        unknown = unknown_nested(typed.rstrip("+"))
        if unknown is not None:
            option, _, close = unknown
            found.append((f"--{typed}", f"--{option}.{close}" if close else None))
    return found


def _unknown_inline(option: str, value: str) -> list[tuple[str, str | None]]:
    """The unknown keys of the inline YAML mapping ``value`` given to the ``NESTED`` ``option``."""
    if not value.lstrip().startswith("{"):
        return []
    import yaml  # only for an inline mapping

    try:
        mapping = yaml.safe_load(value)
    except yaml.YAMLError:
        return []  # the parser names it
    found = []
    for key in mapping if isinstance(mapping, dict) else ():
        unknown = unknown_nested(f"{option}.{key}")
        if unknown is not None:
            found.append((f"--{option}.{key}", f"--{option}.{unknown[2]}" if unknown[2] else None))
    return found


def unknown_options(argv: list[str]) -> list[tuple[str, str | None]]:
    """The ``--flags`` of ``argv`` (``[subcommand, *options]``) the parser would refuse as
    unrecognized, and those that set no field of a ``NESTED`` mapping option (which the parser
    passes on unchecked), each with the closest option (``closest_name``) or None, in order."""
    if not argv:
        return []
    table = known_options(argv[0])
    top = table[""]
    found = []
    for i, token in enumerate(argv[1:], start=1):
        if not token.startswith("--") or token == "--":
            continue
        typed, eq, value = token[2:].partition("=")  # as typed, for the message; "+" appends to a list option
        if typed in NESTED:  # an inline mapping: --data.mqar='{num_kv_pairs: 8}'
            found += _unknown_inline(typed, value if eq else (argv[i + 1] if i + 1 < len(argv) else ""))
            continue
        appends = typed.endswith("+")  # --opt+ is no prefix of another option: argparse matches it whole
        name = typed[:-1] if appends else typed  # one "+" only: --opt++ is no option
        group, dot, rest = name.partition(".")
        if not name or top is None:
            continue
        nested = unknown_nested(name)
        if nested is not None:  # a misspelt key of a mapping option: --data.mqar.num_kv_pair
            found.append((f"--{typed}", f"--{nested[0]}.{nested[2]}" if nested[2] else None))
            continue
        if not dot or group not in table:  # a top-level option, or one under a group this table has not
            if group in top or not dot and not appends and any(a.startswith(group) for a in top):
                continue  # an option, or a prefix argparse resolves itself (--ckpt -> --ckpt_path)
            close = closest_name(group, sorted(top))
            found.append((f"--{typed}", f"--{close}{dot}{rest}" if close else None))
            continue
        allowed = table[group]
        first = rest.split(".")[0]
        if allowed is None or first in allowed or "." not in rest and not appends and any(a.startswith(first) for a in allowed):
            continue  # not read here, an option, or a prefix argparse resolves itself
        close = closest_name(first, sorted(allowed))
        found.append((f"--{typed}", f"--{group}.{close}" if close else None))
    return found


def unknown_options_line(argv: list[str], nested_only: bool = False) -> str | None:
    """One line naming every unknown option of ``argv`` with its "did you mean", or None;
    ``nested_only``: only the misspelt keys of ``NESTED`` mapping options (what the parser
    itself would pass on to the data module unchecked)."""
    unknown = unknown_nested_options(argv) if nested_only else unknown_options(argv)
    if not unknown:
        return None
    shown = ", ".join(f"{flag} (did you mean {close}?)" if close else flag for flag, close in unknown)
    noun = "option" if len(unknown) == 1 else "options"
    mappings = [o for o in NESTED if any(flag.startswith(f"--{o}.") for flag, _ in unknown)]
    keys = "; ".join(f"a key of --{o}: {', '.join(sorted(nested_fields(o) or ()))}" for o in mappings)
    if keys and all(any(flag.startswith(f"--{o}.") for o in mappings) for flag, _ in unknown):
        return f"unknown {noun} {shown}; expected {keys}"
    keys = f" ({keys})" if keys else ""
    note = own_optimizer_note([flag for flag, _ in unknown])
    return f"unknown {noun} {shown}; expected options of swar-bench {argv[0]}{keys}{note} (swar-bench {argv[0]} --help)"
