"""A refused option as one line: jsonargparse's nested messages turned into one sentence naming the
option (or the ``--config`` file it came from), the value and what was expected.

Shared by every command that parses options with jsonargparse (``swar-bench fit|validate|test|predict``,
``demo`` and ``referee``), so it sits below all of them and imports only the mechanisms' name
resolver (``swar_bench.mechanisms.registry``) and the zoo's names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from swar_bench.utils.text import closest_name, did_you_mean


def mechanism_names() -> list[str]:
    """Names of the mechanisms of the zoo (``swar_bench.mechanisms.MECHANISMS``)."""
    from swar_bench.mechanisms import MECHANISMS

    return sorted(MECHANISMS)


def one_line(message: str) -> str:
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    return " ".join(lines[:1]) if lines else "invalid arguments"


def joined(message: str) -> str:
    """All lines of a (jsonargparse) message in one line: the first line alone may be only a
    heading such as ``Parser key "d_model":``."""
    return " ".join(ln.strip() for ln in str(message).splitlines() if ln.strip()) or "invalid arguments"


def option_source(argv: list[str], key: str, got: str | None = None) -> str | None:
    """Where the value of the dotted option ``key`` (e.g. ``model.mechanism.init_args.d_model``)
    that jsonargparse refused comes from: ``"--config=<absolute path>"`` for a ``--config`` file
    of ``argv``, None for the command line (or when nothing in ``argv`` sets it). The last setting
    whose value reads as ``got`` (jsonargparse's ``Got value:``), else the last setting: a file is
    refused when it is loaded, before the options after it are read."""
    import yaml

    parts = key.split(".")
    flags = {f"--{key}", "--" + ".".join(p for p in parts if p != "init_args")}
    settings: list[tuple[str | None, str]] = []

    def lookup(node: Any, rest: list[str]) -> Any:
        for part in rest:
            node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        return node

    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if name in flags:
            settings.append((None, value))
        elif name.startswith("--") and key.startswith(name[2:] + ".") and value.lstrip().startswith("{"):
            try:  # an inline mapping: --model.mechanism='{"class_path": "GRU", "init_args": {...}}'
                node = lookup(yaml.safe_load(value), parts[len(name[2:].split(".")):])
            except yaml.YAMLError:
                continue
            if node is not _MISSING:
                settings.append((None, str(node)))
        elif name == "--config" and (eq or i + 1 < len(argv)):
            path = value if eq else argv[i + 1]
            try:
                with open(path, encoding="utf-8") as handle:
                    node = yaml.safe_load(handle)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            node = lookup(node, parts)
            if node is not _MISSING:
                settings.append((f"--config={os.path.abspath(path)}", str(node)))
    matching = [source for source, value in settings if got is not None and value == got]
    return matching[-1] if matching else (settings[-1][0] if settings else None)


_MISSING = object()


def parse_error_line(message: str, argv: list[str] | None = None, expected: Callable[[str], str | None] | None = None) -> str:
    """Turn a jsonargparse error into one sentence naming the option, the value and what was
    expected. jsonargparse nests its messages, one heading line per level (``Parser key
    "model.mechanism":`` / ``Problem with given class_path 'C':`` / ``Parser key "d_model":`` /
    ``Expected a <class 'int'>. Got value: abc``): the headings become the dotted option
    (``--model.mechanism.init_args.d_model``), the innermost lines the reason. A value read from
    a ``--config`` file in ``argv`` is named with the file (``--config=/abs/run.yaml:
    model.mechanism.init_args.d_model: ...``). A value of the wrong type for a numeric option is
    said as its range check says it (``utils.type_lines.type_refusal_line``; ``expected``: the command's
    wording of what each option takes, ``utils.type_lines.Expected``)."""

    key = re.match(r'Parser key "([^"]+)"', message)
    from swar_bench.class_item_errors import class_item_line

    item = class_item_line(message, argv or [])  # an init arg inside a class given as a whole value
    if item is not None:
        return item
    nested = nested_class_arg_line(message, argv or [])
    if nested is not None:
        return nested
    if key and key.group(1) == "model.mechanism":
        unknown = re.search(r"dot import path string: (\S+)", message) or re.search(
            r"Expected a path but (\S+) either not accessible", message
        )
        if unknown:
            names = ", ".join(mechanism_names())
            return (
                f"unknown mechanism {unknown.group(1)!r} for --model.mechanism; expected a ContextMechanism "
                f"class path, e.g. one of swar_bench.mechanisms: {names}"
            )
    unknown_class = unknown_class_line(message, argv or [])
    if unknown_class is not None:
        return unknown_class
    required = required_args_line(message, argv or [])
    if required is not None:
        return required
    missing = re.fullmatch(r"the following arguments are required: (.+)", message.strip())
    if missing and not key:
        return missing_options_line(missing.group(1))
    if not key:
        return joined(message)
    keys, class_path = [], None
    # an inline mapping is also tried as a file path first: that attempt is not the user's problem
    lines = [
        ln.strip().removeprefix("- ")
        for ln in message.splitlines()
        if ln.strip() and not ln.strip().startswith("- Expected a path but")
    ]
    while lines:
        heading = re.fullmatch(r'Parser key "([^"]+)":\s*(.*)', lines[0]) or re.fullmatch(
            r"Problem with given class_path '([^']+)':\s*(.*)", lines[0]
        )
        if heading is None:
            break
        if lines[0].startswith("Problem"):
            class_path = heading.group(1)
            keys.append("init_args")
        else:
            keys.append(heading.group(1))
        lines = ([heading.group(2)] if heading.group(2) else []) + lines[1:]
    reason = " ".join(lines) or "invalid value"
    got = re.search(r"(?:Got value|Given value):(?: (.*))?$", reason)
    value = (got.group(1) or "") if got else None
    union = re.match(r"Does not validate against any of the Union subtypes\s*Subtypes: \[(.*)\]\s*Errors:", reason)
    if union and value is not None:  # "Subtypes: [...] Errors: - ... Given value type: ... Given value: abc"
        types = re.sub(r"<class '([^']+)'>", r"\1", union.group(1)).replace("NoneType", "None")
        reason = f"Expected one of {types}. Got value: {value}"
    # "Expected a <class 'int'>" reads "Expected int"; other type reprs lose their "<class ...>" too
    reason = re.sub(r"<class '([^']+)'>", r"\1", re.sub(r"Expected an? <class '([^']+)'>", r"Expected \1", reason))
    plain, note = reason, ""  # the reason before what it is an argument of
    rejected = re.fullmatch(r"Option '([^']+)' is not accepted", reason)
    if rejected and class_path == "torch.nn.Module":  # init args given while no mechanism was chosen yet
        keys.append(rejected.group(1))
        flag = "--" + ".".join(keys[: keys.index("init_args")])
        return (f"--{'.'.join(keys)}: given before any mechanism was chosen; expected {flag}=NAME "
                f"(or a --config naming one) before the mechanism's init args")
    if rejected and class_path is not None:
        keys.append(rejected.group(1))
        from swar_bench.mechanisms.registry import accepted_args

        accepted = accepted_args(class_path)
        reason = f"not an argument of {class_path}{did_you_mean(rejected.group(1), accepted)}" + (
            f"; expected one of {', '.join(accepted)}" if accepted else "")
    elif class_path is not None and keys[-1] == "init_args":
        reason += f" (expected a mapping of {class_path}'s arguments)"
    elif class_path is not None:
        note = f" (an argument of {class_path})"
        reason += note
    option = ".".join(keys)
    source = option_source(argv or [], option, value)
    got = value
    if value is not None and source is None:  # as typed: jsonargparse shows null as None, NaN as nan
        value = typed_value(argv or [], option, "") or value
    if got is not None:
        from swar_bench.utils.type_lines import type_refusal_line

        typed = type_refusal_line(option, plain, got, value if source is None else None, source, expected, note,
                                  FINITE_FLOAT_EXPECTED.get)
        if typed is not None:
            return typed
    if value is not None and re.fullmatch(LIST_TYPES, reason):
        return list_expected_line(option, value, source)
    size = re.match(r"Expected a tuple with (\d+) elements\. Got value:", reason)
    if value is not None and size is not None:  # --model.betas=[0.9]: the option's own words, else the count
        known = expected(option) if expected is not None else None
        lead = f"{source}: {option}={value}" if source is not None else f"--{option}={value}"
        return f"{lead}{known or f': expected {size.group(1)} values'}{note}"
    from swar_bench.utils.choices import choices_line

    choices = choices_line(option, value, reason, source) if value is not None else None  # a Literal's values
    if choices is not None:
        return choices
    return f"{source}: {option}: {reason}" if source is not None else f"--{option}: {reason}"


SUBCOMMANDS = ("fit", "validate", "test", "predict")
"""LightningCLI's subcommands: jsonargparse names a missing option under its subcommand (``fit.model.mechanism``)."""

MECHANISM_EXAMPLES = {"model.mechanism": "configs/quickstart.yaml", "mechanism": "configs/referee/quick.yaml"}
"""The option that names the mechanism, by command (LightningCLI's, the referee's), and a config file naming one."""


def missing_options_line(names: str) -> str:
    """jsonargparse's ``the following arguments are required: fit.model.mechanism`` (``names``: its
    comma-separated list) as the options the user types, with the config file that would set
    them: ``missing required option --model.mechanism; expected a --config FILE that sets it
    (e.g. configs/quickstart.yaml) or the option itself; the mechanism is a name of the zoo (e.g.
    GatedDeltaNet, docs/MECHANISMS.md) or a class path``. Never the internal key with its subcommand."""
    options = [re.sub(rf"^(?:{'|'.join(SUBCOMMANDS)})\.", "", n.strip()).lstrip("-") for n in names.split(",") if n.strip()]
    mechanism = next((o for o in options if o in MECHANISM_EXAMPLES), None)
    many = len(options) > 1
    line = (f"missing required option{'s' if many else ''} {', '.join(f'--{o}' for o in options)}; expected a --config "
            f"FILE that sets {'them' if many else 'it'}")
    line += f" (e.g. {MECHANISM_EXAMPLES[mechanism]})" if mechanism else ""
    line += f" or the option{'s' if many else ''} {'themselves' if many else 'itself'}"
    if mechanism:
        line += f"; --{mechanism} is a name of the zoo (e.g. GatedDeltaNet, docs/MECHANISMS.md) or a class path"
    return line


LIST_TYPES = r"Expected (?:collections\.abc\.)?(?:Sequence|Iterable|list|tuple)(?:\[.*\])?\. Got value:(?: .*)?"
"""jsonargparse's refusal of a value that is no list for an option that takes one (``Expected
collections.abc.Sequence. Got value: n32``), its type reprs already read."""

LIST_EXAMPLES = {"model.betas": "[0.9, 0.95]"}
"""The example a list option's refusal shows, by option (default: the value in brackets)."""


def list_expected_line(option: str, value: str, source: str | None) -> str:
    """``--data.train_configs=n32: expected a list, e.g. --data.train_configs=[n32]`` (``source``:
    the ``--config`` file that set the value, else None for the command line): the one line for
    a value that is no list given to an option that takes one."""
    inner = value.strip().strip("[]").strip()
    if option.removeprefix("data.") in ("train_configs", "val_configs", "test_configs"):
        inner = inner if allowed_n(inner) else "n32"  # an example the option takes, never the refused value in brackets
    elif not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", inner, re.IGNORECASE):
        inner = ""  # a word, null or nan in brackets is no example: the default one
    example = LIST_EXAMPLES.get(option) or "[" + (inner or "32, 64") + "]"
    if source is not None:
        return f"{source}: {option}={value}: expected a list, e.g. {option}: {example}"
    return f"--{option}={value}: expected a list, e.g. --{option}={example}"


def allowed_n(item: Any) -> bool:
    """True when ``item`` reads as a passkey_swar N (``32`` or ``"n32"``); whether that N is
    allowed is the data module's check."""
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        return False
    return re.fullmatch(r"[nN]?\d+", str(item).strip()) is not None


def nested_class_arg_line(message: str, argv: list[str]) -> str | None:
    """The one line for an argument of a class-typed option given on the command line
    (``--trainer.logger.*``, ``--trainer.profiler.*``, ``--trainer.callbacks.*``), the option as
    typed in ``argv``: a misspelt one as ``unknown option --trainer.logger.init_args.save_dirr (did
    you mean --trainer.logger.init_args.save_dir?); expected an argument of
    lightning.pytorch.loggers.TensorBoardLogger: comment, ...``, a refused value as
    ``--trainer.logger.init_args.log_graph: Expected bool. Got value: abc (an argument of ...)``.
    jsonargparse refuses either as a value of the whole option (``Parser key "trainer.logger":
    Does not validate against any of the Union subtypes ... Given value: NestedArg(key='save_dirr',
    ...)``), which the generic reading blames on the ``--config`` file that set the option. None
    for any other message. The accepted arguments are those the parser takes
    (:func:`class_arguments`, ``**kwargs`` followed), as for the same typo in a ``--config`` file."""
    key = re.match(r'Parser key "([^"]+)"', message)
    given = re.search(r"Given value: NestedArg\(key='([^']+)', val=(.*)\)\s*$", message)
    # the first class tried is the one given; later ones are the option's base classes
    first = re.search(r"Problem with given class_path '([^']+)':\s*(.*?)(?=\n\s*- |\n\s*Given value type|$)", message, re.DOTALL)
    if key is None or given is None:
        return None
    option, name = key.group(1), given.group(1)
    flags = [a.partition("=")[0] for a in argv if a.startswith(f"--{option}.")]
    typed = next((f for f in reversed(flags) if f.rstrip("+").rsplit(".", 1)[-1] == name), f"--{option}.init_args.{name}")
    if first is None:  # --trainer.logger=false --trainer.logger.init_args.save_dir=x
        return f"{typed}: an argument given while --{option} names no class; expected --{option}=CLASS_PATH before its arguments"
    class_path, body = first.group(1), " ".join(first.group(2).split())
    rejected = re.fullmatch(r"(?:- )?Option '([^']+)' is not accepted", body)
    if rejected is None:
        refused = re.fullmatch(r'(?:- )?Parser key "([^"]+)":\s*(.*)', body)
        if refused is None or refused.group(1) != name:
            return None
        reason = re.sub(r"<class '([^']+)'>", r"\1", re.sub(r"Expected an? <class '([^']+)'>", r"Expected \1", refused.group(2)))
        from swar_bench.class_item_errors import class_value_line

        return class_value_line(typed.removeprefix("--").rstrip("+"), reason, class_path, argv)
    accepted = class_arguments(class_path, follow_kwargs=True) or []
    close = closest_name(name, accepted)
    suggestion = f" (did you mean {typed.rstrip('+')[: -len(name)]}{close}?)" if close else ""
    listed = f": {', '.join(accepted)}" if accepted else ""
    return f"unknown option {typed}{suggestion}; expected an argument of {class_path}{listed}"


NOT_CLASSES = ("NoneType", "bool", "str", "int", "float", "list", "dict", "tuple")
"""Types of a Union option that are not a class the option names by its path (``Subtypes``)."""


def class_choices(bases: list[type]) -> list[str]:
    """The names of the public subclasses of ``bases`` (excluding the bases) in the ``__all__`` of
    each base's package (``lightning.pytorch.callbacks`` for ``Callback``) and of
    ``swar_bench.callbacks``, sorted: what ``--trainer.callbacks+=NAME`` and its like take by name."""
    import importlib

    names: set[str] = set()
    for package in dict.fromkeys([*(b.__module__.rsplit(".", 1)[0] for b in bases), "swar_bench.callbacks"]):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        for name in getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]:
            try:
                found = getattr(module, name, None)
            except Exception:  # noqa: BLE001, S112 - a lazily imported optional dependency: not offered
                continue
            if isinstance(found, type) and found not in bases and issubclass(found, tuple(bases)):
                names.add(name)
    return sorted(names)


def unknown_class_line(message: str, argv: list[str]) -> str | None:
    """``unknown Callback class 'NoSuch' for --trainer.callbacks (did you mean ...?); expected a
    Callback class name or path, e.g. one of AnswerTypeAccuracy, ...``: the one line for a class
    name that names no class, given to a class-typed option (``--trainer.callbacks``,
    ``--trainer.logger``, ``--trainer.plugins``; led by the ``--config`` file that gave it), in
    place of jsonargparse's "Expected one of <types>. Got value: NoSuch". None for another message."""
    import importlib

    key = re.match(r'Parser key "([^"]+)"', message)
    subtypes = re.search(r"Subtypes: \[(.*)\]", message)
    name = re.search(r"Expected a dot import path string: (\S+)", message) or re.search(
        r"Problem with given class_path '([^']+)':\s*(?:No module named|module '[^']*' has no attribute)", message)
    if key is None or subtypes is None or name is None or key.group(1) == "model.mechanism":
        return None
    bases = []
    for path in dict.fromkeys(re.findall(r"<class '([\w.]+)'>", subtypes.group(1))):
        module, _, attribute = path.rpartition(".")
        if attribute in NOT_CLASSES or not module:
            continue
        try:
            bases.append(getattr(importlib.import_module(module), attribute))
        except (ImportError, AttributeError):
            continue
    if not bases:
        return None
    option, typed = key.group(1), name.group(1)
    typed = typed_value(argv, option, typed)  # the message cuts the value at its first space
    kinds = ", ".join(b.__name__ for b in bases[:-1]) + (" or " if len(bases) > 1 else "") + bases[-1].__name__
    choices = class_choices(bases)
    listing = f", e.g. one of {', '.join(choices)}" if choices else ""
    # a class name is suggested only when it is a small edit away (NoSuchLogger is not CSVLogger)
    close = closest_name(typed.strip("[]").rsplit(".", 1)[-1], choices, cutoff=0.8)
    suggestion = f" (did you mean {close}?)" if close else ""
    left_open = open_brackets(typed) if typed.lstrip()[:1] in ("[", "{") else []  # a value opened as JSON
    unclosed, unclosed_mapping = left_open[:1] == ["["], left_open[:1] == ["{"]

    def rest(flag: str) -> str:  # never str.format: the typed name may hold braces
        if unclosed_mapping:
            named = re.search(r'"class_path"\s*:\s*"([\w.]+)"', typed)
            example = named.group(1) if named and named.group(1) in choices else (close or (choices or ["NAME"])[0])
            return (f"unclosed mapping {typed!r} for {flag}; expected a mapping closed by }}, e.g. "
                    f'{flag}={{"class_path": "{example}"}}, or a {kinds} class name or path')
        if unclosed:
            return (f"unclosed list {typed!r} for {flag}; expected a list closed by ], e.g. "
                    f"{flag}=[{close or (choices or ['NAME'])[0]}], or a {kinds} class name or path")
        return f"unknown {kinds} class {typed!r} for {flag}{suggestion}; expected a {kinds} class name or path{listing}"

    typed_here = any(a.partition("=")[0].rstrip("+") == f"--{option}" and typed in a for a in argv) or any(
        a.rstrip("+") == f"--{option}" and i + 1 < len(argv) and typed in argv[i + 1] for i, a in enumerate(argv))
    source = None if typed_here else option_source(argv, option)
    return f"{source}: {rest(option)}" if source is not None else rest(f"--{option}")


def open_brackets(text: str) -> list[str]:
    """The brackets (``[`` or ``{``) of ``text`` left open at its end, outermost first, outside
    double-quoted strings: ``'{"a": {"b": 1}'`` -> ``["{"]``; ``[]`` for a balanced text."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack and stack[-1] == {"]": "[", "}": "{"}[ch]:
            stack.pop()
    return stack


def typed_value(argv: list[str], option: str, typed: str) -> str:
    """The whole command-line value of ``--option`` that holds ``typed`` (``--option=VALUE`` or
    ``--option VALUE``, the last one given: the one parsed; jsonargparse's messages quote a value
    only up to its first space, and after parsing it), else ``typed``."""
    for i, arg in reversed(list(enumerate(argv))):
        flag, eq, value = arg.partition("=")
        if eq and flag.rstrip("+") == f"--{option}" and typed in value:
            return value
        if arg.rstrip("+") == f"--{option}" and i + 1 < len(argv) and typed in argv[i + 1]:
            return argv[i + 1]
    return typed


ARG_EXAMPLES = {"monitor": "val/loss"}
"""An example value of a required init arg, by name, for the line that says it is missing."""


def required_args_line(message: str, argv: list[str]) -> str | None:
    """``EarlyStopping needs --trainer.callbacks.monitor (e.g. val/loss)``: the one line for a class
    given to a class-typed option without an init arg its constructor requires (jsonargparse's
    "the following arguments are required: monitor" inside an "Expected one of list[...]"), led
    by the ``--config`` file that gave the class when the command line did not. None for another
    message."""
    key = re.match(r'Parser key "([^"]+)"', message)
    found = re.search(r"Problem with given class_path '([^']+)':\s*the following arguments are required: ([\w, ]+)",
                      message)
    if key is None or found is None:
        return None
    option, class_path = key.group(1), found.group(1)
    names = [n.strip() for n in found.group(2).split(",") if n.strip()]
    short = class_path.rsplit(".", 1)[-1]
    typed_here = any(a.partition("=")[0].rstrip("+") == f"--{option}" for a in argv)
    source = None if typed_here else option_source(argv, option)
    if option == "model.mechanism":  # torch.nn.GRU: its arguments are not what is wrong with it
        line = _not_a_mechanism(class_path)
        if line is not None:
            return f"{source}: model.mechanism={class_path}: {line}" if source else f"--{option}={class_path}: {line}"
    flags = [f"{option}.init_args.{n}" if source is not None else f"--{option}.{n}" for n in names]
    shown = " and ".join(f"{flag} (e.g. {ARG_EXAMPLES[n]})" if n in ARG_EXAMPLES else flag for flag, n in zip(flags, names))
    line = f"{short} needs {shown}; expected the required {'argument' if len(names) == 1 else 'arguments'} of {class_path}"
    return f"{source}: {line}" if source is not None else line


def _not_a_mechanism(class_path: str) -> str | None:
    """``GRU is not a ContextMechanism (...); expected ...`` for an importable class that is no
    mechanism, else None."""
    from swar_bench.mechanisms.protocol import PROTOCOL_EXPECTED, class_not_a_mechanism
    from swar_bench.mechanisms.registry import resolve_class

    try:
        problem = class_not_a_mechanism(resolve_class(class_path))
    except ValueError:
        return None
    return None if problem is None else f"{problem}; {PROTOCOL_EXPECTED}"


FINITE_FLOAT_EXPECTED = {"model.lr": "a positive finite learning rate", "lr": "a positive finite learning rate",
                         "collective_timeout": "a positive number of seconds"}
"""What a float option given ``nan`` or ``inf`` expects, by option (default: a finite number)."""


def unknown_config_keys(config: Any, options: set[str], prefix: str = "", groups: frozenset[str] | set[str] = frozenset(),
                        takes: dict[str, str] | None = None, fields: Callable[[str], Any] | None = None
                        ) -> list[tuple[str, str | None]]:
    """Every key of a ``--config`` mapping that names no option, with the closest option of its
    level (``closest_name``) or None: ``[("trainer.max_step", "trainer.max_steps")]``.

    ``options`` are the parser's dotted option names (``trainer.max_steps``, ``model.mechanism``),
    ``groups`` those of them that only load a group of options from a file (``--trainer FILE``);
    a key that is a group of options (``trainer``) is looked into when it holds a mapping. The
    value of an option that is a class (``class_path`` and ``init_args``: ``model.mechanism``,
    ``trainer.callbacks``' items) has its ``init_args`` keys checked against the class's
    constructor arguments (:func:`value_keys`, nested classes too), and a mapping option of known
    fields (``fields(option)``: ``data.mqar`` -> ``swar_bench.harness.fast_options.nested_fields``)
    its keys against those fields; ``takes``, when given, receives what
    each such mapping with an unknown key takes (``{"model.mechanism.init_args": "the arguments
    of GRU (vocab_size, ...)"}``). jsonargparse stops at the first unknown key and names neither
    the file nor an alternative."""
    found: list[tuple[str, str | None]] = []
    if not isinstance(config, dict):
        return found
    level = sorted({o[len(prefix):].split(".")[0] for o in options if o.startswith(prefix) and not o.endswith(".help")})
    for name, value in config.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and (key in groups or key not in options) and any(o.startswith(key + ".") for o in options):
            found += unknown_config_keys(value, options, key + ".", groups, takes, fields)  # a group of options
            continue
        if key in options:
            found += value_keys(key, value, {} if takes is None else takes, fields)
            continue
        if any(o.startswith(key + ".") for o in options):
            continue
        close = closest_name(str(name), level)
        found.append((key, prefix + close if close else None))
    return found


def class_arguments(class_path: Any, follow_kwargs: bool = False) -> list[str] | None:
    """The keyword arguments of the constructor of ``class_path`` (a zoo name or a dotted path), in
    order; None when the class cannot be resolved, has no signature or takes ``**kwargs``.
    ``follow_kwargs``: for a constructor with ``**kwargs``, the arguments jsonargparse resolves
    them to (what its parser accepts: ``TensorBoardLogger``'s ``**kwargs`` are ``SummaryWriter``'s
    ``max_queue``, ``flush_secs``, ...), sorted; None when it cannot."""
    import inspect

    from swar_bench.mechanisms.registry import resolve_class

    try:
        cls = resolve_class(str(class_path))
        params = list(inspect.signature(cls).parameters.values())
    except (ValueError, TypeError, ImportError, AttributeError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return _parser_arguments(cls) if follow_kwargs else None
    return [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def _parser_arguments(cls: type) -> list[str] | None:
    """The constructor arguments of ``cls`` that jsonargparse's parser takes (its
    ``add_class_arguments``), sorted; None when it cannot read them."""
    from jsonargparse import ArgumentParser

    try:
        parser = ArgumentParser(exit_on_error=False)
        parser.add_class_arguments(cls, "x", fail_untyped=False)
    except Exception:  # noqa: BLE001 - any failure: not checked here, the parser says what it says
        return None
    return sorted({a.dest.split(".")[1] for a in parser._actions if a.dest.startswith("x.")}) or None


def value_keys(key: str, value: Any, takes: dict[str, str], fields: Callable[[str], Any] | None = None
               ) -> list[tuple[str, str | None]]:
    """The unknown keys inside the value of the option ``key`` with their closest valid key: the
    ``init_args`` of a ``class_path`` mapping (:func:`class_arguments`; a list of them as
    ``key[i]``; init args that are classes themselves looked into), or the keys of a mapping
    option whose fields ``fields(key)`` gives (None: not known). ``takes`` receives
    ``{mapping: what it takes}`` for each mapping with an unknown key."""
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in value_keys(f"{key}[{i}]", item, takes, fields)]
    if not isinstance(value, dict):
        return []
    if "class_path" in value:
        # a class under trainer (a logger, a callback) may forward **kwargs: checked as the parser checks them
        init_args, accepted = value.get("init_args"), class_arguments(value["class_path"], key.startswith("trainer."))
        if not isinstance(init_args, dict):
            return []
        where, described = f"{key}.init_args", f"the arguments of {value['class_path']}"
    else:
        known = fields(key) if fields is not None else None
        init_args, accepted = value, sorted(known) if known is not None else None
        where, described = key, "the keys"
    found: list[tuple[str, str | None]] = []
    for name, arg in init_args.items():
        if accepted is None or name in accepted:
            found += value_keys(f"{where}.{name}", arg, takes, fields) if accepted is not None else []
            continue
        close = closest_name(str(name), accepted)
        found.append((f"{where}.{name}", f"{where}.{close}" if close else None))
        takes[where] = f"{described} ({', '.join(accepted)})"
    return found


def config_files_line(args: list[str], options: set[str], command: str, groups: frozenset[str] | set[str] = frozenset(),
                      fields: Callable[[str], Any] | None = None, named: Callable[[str], str] = os.path.abspath) -> str | None:
    """One line naming every key of the ``--config`` files of ``args`` (``--config F`` or
    ``--config=F``) that names no option of ``options`` (:func:`unknown_config_keys`), by file
    (``named(F)``: the absolute path, or the path as typed), each with a "did you mean"
    (:func:`unknown_keys_line`, ``swar-bench COMMAND``; an inline mapping ``--config='{seed: 1}'`` as
    typed); None when every key is an option (the parser's own message then stands). A file that
    cannot be read is left to the parser."""
    import yaml

    lines = []
    for i, arg in enumerate(args):
        path = args[i + 1] if arg == "--config" and i + 1 < len(args) else arg.split("=", 1)[1] if arg.startswith("--config=") else None
        if path is None:
            continue
        takes: dict[str, str] = {}  # what a class's init_args / a mapping option with a typo takes
        try:
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    config, shown = yaml.safe_load(handle), named(path)
            else:  # inline YAML (--config='{seed: 1}'), named as typed
                config, shown = (yaml.safe_load(path) if path.lstrip().startswith("{") else None), path
            unknown = unknown_config_keys(config, options, groups=groups, takes=takes, fields=fields)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if unknown:
            lines.append(unknown_keys_line(f"--config={shown}", unknown, command, takes))
    return "; ".join(lines) if lines else None


def unknown_keys_line(source: str, unknown: list[tuple[str, str | None]], command: str,
                      takes: dict[str, str] | None = None) -> str:
    """One line naming every unknown key of ``source`` (``--config=/abs/run.yaml`` or the command
    line), each with its suggestion: ``--config=/abs/run.yaml: unknown keys trainer.max_step (did
    you mean trainer.max_steps?), model.lrr (did you mean model.lr?); expected options of
    swar-bench fit (swar-bench fit --help)``, then what each mapping of ``takes`` takes (``, and
    for model.mechanism.init_args the arguments of GRU (vocab_size, ...)``)."""
    shown = ", ".join(f"{key} (did you mean {close}?)" if close else key for key, close in unknown)
    noun = "key" if len(unknown) == 1 else "keys"
    from swar_bench.utils.option_table import own_optimizer_note

    note = own_optimizer_note([key for key, _ in unknown])
    line = f"{source}: unknown {noun} {shown}; expected options of swar-bench {command}{note} (swar-bench {command} --help)"
    return line + "".join(f", and for {where} {what}" for where, what in (takes or {}).items())
