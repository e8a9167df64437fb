"""The one line for an init arg refused inside a class given to a class-typed option (``--trainer.callbacks``,
``--trainer.logger``, ``--trainer.profiler``, ``--trainer.plugins``) as a whole value: an inline JSON
list on the command line (``--trainer.callbacks=[{"class_path": "EarlyStopping", "init_args":
{"monitr": "x"}}]``), a ``--config`` file's mapping (``log_graph: maybe``), or a nested
``--trainer.callbacks.every_n_train_steps=abc`` whose type is a Union. jsonargparse nests the
refusal of the class under "Does not validate against any of the Union subtypes" of the option;
:func:`class_item_line` reads the first class tried (the one given) and names the init arg, its
value and what was expected."""

from __future__ import annotations

import re

from swar_bench.config_errors import class_arguments, option_source, typed_value
from swar_bench.utils.text import did_you_mean


def typed_flag(argv: list[str], option: str, name: str) -> str:
    """The dotted option of the init arg ``name`` of the class-typed ``option`` as ``argv`` typed it
    (``trainer.logger.max_queue`` or ``trainer.logger.init_args.max_queue``, the last one given),
    else ``OPTION.init_args.NAME``."""
    flags = [a.partition("=")[0].removeprefix("--").rstrip("+") for a in argv if a.startswith(f"--{option}.")]
    return next((f for f in reversed(flags) if f.rsplit(".", 1)[-1] == name), f"{option}.init_args.{name}")


def class_value_line(option: str, reason: str, class_path: str, argv: list[str], source: str | None = None) -> str:
    """The one line for a value refused for an init arg of ``class_path`` given to a class-typed
    option, said as every other option's refused value is: the dotted ``option`` and the value as
    typed, then what it expects, ``--trainer.logger.max_queue=abc: expected an integer (an argument
    of lightning.pytorch.loggers.TensorBoardLogger)``, or the ``--config`` file and key that set it
    (``source``: ``--config=/abs/run.yaml: trainer.logger.init_args.max_queue=abc: ...``).
    ``reason``: jsonargparse's ``Expected int. Got value: abc`` (``utils.type_lines``) or
    ``Got value: 0; expected a positive integer``; another reason is kept as it is."""
    from swar_bench.utils.type_lines import type_refusal_line

    note = f" (an argument of {class_path})"
    got = re.search(r"Got value: (.*?)(?:; expected (.*))?$", reason)
    if got is not None:
        typed = None if source is not None else typed_value(argv, option, "") or None  # None: not on the command line
        if got.group(2) is not None:  # our own range check of the value
            lead = f"{source}: {option}={got.group(1)}" if source is not None else f"--{option}={typed or got.group(1)}"
            return f"{lead}: expected {got.group(2)}{note}"
        line = type_refusal_line(option, reason, got.group(1), typed, source, note=note)
        if line is not None:
            return line
    return f"{source}: {option}: {reason}{note}" if source is not None else f"--{option}: {reason}{note}"


def _type_names(text: str) -> str:
    return re.sub(r"<class '([^']+)'>", r"\1", text).replace("NoneType", "None")


def first_problem(message: str) -> tuple[str, list[str]] | None:
    """``(class_path, body lines)`` of the first "Problem with given class_path 'C':" of
    ``message``: the lines indented below it, stripped. None when there is none."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        found = re.match(r"(\s*)- Problem with given class_path '([^']+)':\s*(.*)$", line)
        if found is None:
            continue
        indent, body = len(found.group(1)), [found.group(3)] if found.group(3) else []
        for below in lines[i + 1:]:
            if below.strip() and len(below) - len(below.lstrip()) <= indent:
                break
            body.append(below.strip())
        return found.group(2), [b for b in body if b]
    return None


def reason_of(lines: list[str]) -> str | None:
    """``Expected int. Got value: abc`` / ``Expected one of int, None. Got value: abc`` from the
    lines of jsonargparse's refusal of one value (a plain one or a Union's)."""
    text = " ".join(lines)
    plain = re.fullmatch(r"Expected an? (<class '[^']+'>|\S+)\.? Got value: (.*)", text)
    if plain is not None:
        return f"Expected {_type_names(plain.group(1))}. Got value: {plain.group(2)}"
    union = re.match(r"Does not validate against any of the Union subtypes Subtypes: \[(.*?)\] Errors:.*Given value: (.*)$",
                     text)
    if union is not None:
        return f"Expected one of {_type_names(union.group(1))}. Got value: {union.group(2)}"
    return None


def class_item_line(message: str, argv: list[str]) -> str | None:
    """``--config=/abs/run.yaml: trainer.logger.init_args.log_graph: Expected bool. Got value:
    maybe (an argument of lightning.pytorch.loggers.TensorBoardLogger)``, ``--trainer.callbacks:
    unknown init arg 'monitr' of lightning.pytorch.callbacks.EarlyStopping (did you mean monitor?);
    expected one of ...``: the refusal of an init arg of the class given to a class-typed option,
    led by the ``--config`` file that gave it, or the option (as typed for ``--option.ARG=V``).
    None for another message."""
    key = re.match(r'Parser key "(trainer\.[^"]+)"', message)
    problem = first_problem(message)
    if key is None or problem is None or "Does not validate against any of the Union subtypes" not in message:
        return None
    option, (class_path, body) = key.group(1), problem
    nested = re.search(r"Given value: NestedArg\(key='([^']+)', val=(.*)\)\s*$", message)
    typed_here = any(a.partition("=")[0].rstrip("+") == f"--{option}" or a.startswith(f"--{option}.") for a in argv)
    source = None if typed_here else option_source(argv, option)
    rejected = re.fullmatch(r"Option '([^']+)' is not accepted", " ".join(body))
    if rejected is not None:
        if nested is not None:
            return None  # --option.ARG=V: config_errors.nested_class_arg_line names it as typed
        name = rejected.group(1)
        accepted = class_arguments(class_path, follow_kwargs=True) or []
        listing = f"; expected one of {', '.join(accepted)}" if accepted else ""
        line = f"unknown init arg {name!r} of {class_path}{did_you_mean(name, accepted)}{listing}"
        return f"{source}: {option}: {line}" if source is not None else f"--{option}: {line}"
    arg = re.fullmatch(r'Parser key "([^"]+)":\s*(.*)', body[0]) if body else None
    if arg is None:
        return None
    reason = reason_of(([arg.group(2)] if arg.group(2) else []) + body[1:])
    if reason is None:
        return None
    name = arg.group(1)
    if nested is not None and nested.group(1) == name:
        return class_value_line(typed_flag(argv, option, name), reason, class_path, argv)
    return class_value_line(f"{option}.init_args.{name}", reason, class_path, argv, source)
