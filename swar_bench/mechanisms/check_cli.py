"""``swar-bench check-mechanism``: the conformance check of a mechanism, from the command line.

    swar-bench check-mechanism GRU
    swar-bench check-mechanism my_layer.MyModel --init_args '{"d_model": 32}'
    swar-bench check-mechanism --config configs/quickstart.yaml --config configs/mechanisms/gru.yaml

Prints one row per check (``swar_bench.mechanisms.conformance``) and exits 0 when all pass,
1 when one fails, 2 for a bad command line (one line on stderr) and for a mechanism the checks
cannot run, before any check runs: one that needs a CUDA device (the checks run on the CPU).

CLASS_PATH and a ``--config`` that names another mechanism are refused (one line): the file's
init_args belong to its class, so neither "the command line wins" nor "the file wins" would check
the model both say; give one of them (a run config without ``model.mechanism`` still gives
``data.task_params``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from swar_bench.utils.argparsing import (
    ArgumentParser,
    NumberArg,
    PathArg,
    SpelledAs,
    count_arg,
    spelling,
)

INIT_ARGS = ("--init_args", "--init-args")
"""The spellings of the constructor arguments' option, of ``check-mechanism`` and ``study run --add``
alike: ``--init_args`` first (the ``init_args`` of a config and of ``--model.mechanism.init_args.*``;
suggested for a misspelling, ``ArgumentParser.canonical``), ``--init-args`` taken too."""
from swar_bench.utils.text import yaml_problem


def mechanism_from_configs(paths: list[str]) -> tuple[str | None, dict, dict | None, str | None]:
    """``(class_path, init_args, task_params, where)`` from YAML files merged in order, as
    LightningCLI merges ``--config`` files: a file holds either a run config (``model.mechanism``,
    optional ``data.task_params``) or a mechanism entry (``class_path`` / ``init_args``). A later
    file with the same ``class_path`` updates the init_args; another class replaces them.
    ``where`` names the setting of ``class_path`` for messages (``--config=/abs/run.yaml:
    model.mechanism.class_path``); None when no file names a mechanism.

    Raises:
        ValueError: (one line) a missing or unreadable file, or one that is not a mapping.
    """
    import os

    import yaml

    from swar_bench.utils.yaml_keys import DuplicateKey, load_unique

    class_path, init_args, task_params, where = None, {}, None, None
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                content = load_unique(handle)
        except DuplicateKey as err:  # YAML would keep the last value without a word
            raise ValueError(f"--config={path}: {err}") from None
        except UnicodeDecodeError as err:
            raise ValueError(f"--config={path}: not UTF-8 text (byte {err.start}); expected a YAML mapping") from None
        except OSError as err:
            raise ValueError(f"--config={path}: {err.strerror or err}") from None
        except yaml.YAMLError as err:
            raise ValueError(f"--config={path}: not valid YAML ({yaml_problem(err)}); expected a YAML mapping") from None
        if not isinstance(content, dict):
            raise ValueError(f"--config={path}: expected a YAML mapping (a run config or class_path/init_args)")  # noqa: TRY004 - bad user input
        entry = (content.get("model") or {}).get("mechanism") if isinstance(content.get("model"), dict) else None
        key = "model.mechanism.class_path"
        if entry is None and "class_path" in content:
            entry, key = content, "class_path"
        data = content.get("data")
        if isinstance(data, dict) and isinstance(data.get("task_params"), dict):
            task_params = {**(task_params or {}), **data["task_params"]}
        if entry is None:
            continue
        if isinstance(entry, str):
            entry = {"class_path": entry}
        shown = f"--config={os.path.abspath(path)}: {key.removesuffix('.class_path') or 'class_path'}"
        if not isinstance(entry, dict):  # 5, true, [GRU]
            raise ValueError(f"{shown}={entry!r}: expected a zoo name (e.g. GRU), a class path module.Class, or "  # noqa: TRY004
                             "class_path: and init_args: under it")
        if entry.get("init_args") is not None and not isinstance(entry["init_args"], dict):
            raise ValueError(f"--config={os.path.abspath(path)}: {key.removesuffix('class_path')}init_args="
                             f"{entry['init_args']!r}: expected a mapping of the class's arguments")
        if "class_path" in entry and not isinstance(entry["class_path"], str):
            raise ValueError(f"{shown}.class_path={entry['class_path']!r}: expected a class name or path "
                             "module.Class")
        if "class_path" in entry:
            where = f"--config={os.path.abspath(path)}: {key}"
        new_path = entry.get("class_path", class_path)
        if new_path != class_path:
            init_args = {}
        class_path = new_path
        init_args = {**init_args, **(entry.get("init_args") or {})}
    return class_path, init_args, task_params, where


def device_problem(model: Any) -> str | None:
    """Why the conformance checks (run on the CPU) cannot run ``model``: the reason of its first
    submodule that declares ``needs_cuda`` (``FlaLayer`` over fla's Triton kernels), else None."""
    import torch

    for module in model.modules() if hasattr(model, "modules") else []:
        if getattr(module, "needs_cuda", False):
            check = getattr(module, "_check_device", None)
            try:
                if check is not None:
                    check(torch.device("cpu"))
            except ValueError as err:
                return str(err)
            return f"{type(module).__name__} needs a CUDA device"
    return None


def parse_init_args(text: str | None) -> dict:
    """``--init_args`` JSON (or YAML flow syntax) -> dict; ValueError (one line, naming the option
    as typed: ``--init_args`` or ``--init-args``, :func:`~swar_bench.utils.argparsing.spelling`) otherwise."""
    if text is None:
        return {}
    option = spelling(text, "--init_args")
    import yaml

    from swar_bench.utils.yaml_keys import DuplicateKey, json_unique, load_unique

    try:
        value = json_unique(text)
    except DuplicateKey as err:
        raise ValueError(f"{option}={text}: {err}") from None
    except json.JSONDecodeError:
        try:
            value = load_unique(text)
        except DuplicateKey as err:
            raise ValueError(f"{option}={text}: {err}") from None
        except yaml.YAMLError:
            value = None
    if not isinstance(value, dict):
        raise ValueError(  # noqa: TRY004 - bad user input: the CLI reports ValueError as one line
            f'{option}={text}: expected a JSON object such as \'{{"d_model": 32, "n_layers": 1}}\''
        )
    return value


def unknown_init_args(cls: Any, full_path: str, init_args: dict, given: dict, option: str, where: str | None) -> str | None:
    """The one-line refusal of the first key of ``init_args`` that names no parameter of ``cls``'s
    constructor (``--init_args: d_modle is not an argument of my_layer.EMAModel (did you mean
    d_model?); expected one of vocab_size, d_model``), checked before ``cls`` is built, as ``fit``
    checks ``--model.mechanism.init_args``; None when all are parameters, or the constructor takes
    ``**kwargs`` or has no signature. A key of ``given`` (the command line's) is named with
    ``option``, another with the ``--config`` file of ``where``."""
    import inspect

    from swar_bench.utils.text import did_you_mean

    try:
        params = list(inspect.signature(cls).parameters.values())
    except (ValueError, TypeError):
        return None
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    accepted = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    for key in init_args:
        if key not in accepted:
            named = option if key in given or where is None else where.removesuffix("class_path") + "init_args"
            listing = f"; expected one of {', '.join(accepted)}" if accepted else "; expected no arguments"
            return f"{named}: {key} is not an argument of {full_path}{did_you_mean(key, accepted)}{listing}"
    return None


def init_arg_lead(reason: str, init_args: dict, given: dict, typed: str | None, where: str | None) -> str:
    """Where the init arg that the constructor's refusal ``reason`` starts with (``d_model must be
    ...``) was set, as the lead of the line: ``--init_args='{"d_model": -8}': d_model=-8: `` (the
    option and its JSON as typed), ``--config=/abs/run.yaml: model.mechanism.init_args.d_model=-8:
    `` (the file's key); ``""`` when ``reason`` names none of ``init_args``."""
    import re
    import shlex

    first = re.match(r"(\w+)\b", reason)
    key = first.group(1) if first is not None else None
    if key not in init_args:
        return ""
    if key in given or where is None:
        return f"{spelling(typed, '--init_args')}={shlex.quote(typed or '')}: {key}={init_args[key]}: "
    return f"{where.removesuffix('class_path')}init_args.{key}={init_args[key]}: "


def build_parser() -> argparse.ArgumentParser:
    """The ``swar-bench check-mechanism`` argument parser (CLASS_PATH, --init_args, --config)."""
    parser = ArgumentParser(
        prog="swar-bench check-mechanism",
        description="Check that a mechanism follows the ContextMechanism protocol before training it: "
        "one row per check with its numbers; exit 0 only when every check passes.",
    )
    parser.add_argument("class_path", nargs="?", help="a zoo name (GRU) or module.Class (my_layer.MyModel, with PYTHONPATH)")
    parser.add_argument(*INIT_ARGS, dest="init_args", action=SpelledAs, metavar="JSON",
                        help='constructor arguments as JSON, e.g. \'{"d_model": 32}\'')
    parser.add_argument("--config", action="append", default=[], type=PathArg("the path of a YAML file"), help="a run config (model.mechanism) or class_path/init_args YAML; repeatable (default: none, the class's defaults)")
    parser.add_argument("--seq-len", type=count_arg(2), default=64, help="tokens of the streaming and state checks (default 64)")
    parser.add_argument("--long-len", type=NumberArg(int, "an integer >= --seq-len"), default=2048,
                        help="tokens of the long input (default 2048)")
    parser.add_argument("--atol", type=NumberArg(float, "a number >= 0", lambda value: value >= 0), default=1e-4,
                        help="max |difference| one forward vs chunked stream (default 1e-4)")
    parser.add_argument("--seed", type=NumberArg(int, _seed_range, lambda value: 0 <= value <= _max_seed()), default=0,
                        help="seed of the builds, splits and data: an integer >= 0, up to 2**63 - 3 (default 0)")
    return parser


def _max_seed() -> int:
    from swar_bench.mechanisms.conformance import max_seed

    return max_seed()


def _seed_range() -> str:
    """What ``--seed`` takes (``swar_bench.mechanisms.conformance.max_seed``: every seed the checks
    derive stays an example seed)."""
    return f"an integer in [0, {_max_seed()}]"


def main(argv: list[str] | None = None) -> int:
    """Run the command on ``argv``; returns 0 (all checks pass), 1 (a check fails), 2 (bad input),
    130 / 143 stopped by Ctrl-C / SIGTERM (one line)."""
    from swar_bench.utils import interrupts

    return interrupts.command("swar-bench check-mechanism", lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    """The checks of ``main``, its one-line refusals printed; the exit status."""
    from swar_bench.mechanisms.conformance import check_mechanism, format_report, passed
    from swar_bench.mechanisms.registry import resolve_class, resolve_class_path

    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        class_path, init_args, task_params, where = mechanism_from_configs(args.config)
        if where is not None:  # the file's name first: it is named with the file
            resolve_class(class_path, where)
        if args.class_path and where is not None and resolve_class_path(args.class_path, "CLASS_PATH") != resolve_class_path(class_path, where):
            file, key = where.split(": ", 1)
            raise ValueError(
                f"CLASS_PATH={args.class_path} conflicts with {key}={class_path} in {file}; expected one mechanism: "
                "leave out CLASS_PATH to check the file's, or use a --config without model.mechanism"
            )
        class_path = args.class_path or class_path
        if class_path is None:
            raise ValueError("no mechanism given; expected CLASS_PATH (e.g. GRU or my_layer.MyModel) or a --config with model.mechanism")
        given = parse_init_args(args.init_args)
        init_args = {**init_args, **given}
        if args.long_len < args.seq_len:
            raise ValueError(f"--long-len={args.long_len}: expected an integer >= --seq-len ({args.seq_len})")
        what = "CLASS_PATH" if args.class_path else where
        cls = resolve_class(class_path, what)
        full_path = resolve_class_path(class_path, what)
        unknown = unknown_init_args(cls, full_path, init_args, given, spelling(args.init_args, "--init_args"), where)
        if unknown is not None:
            raise ValueError(unknown)
        params = None
        if task_params is not None:
            from swar_bench.tasks.passkey_swar import PasskeySwarParams

            try:
                params = PasskeySwarParams(**task_params)
            except TypeError as err:
                raise ValueError(f"data.task_params={task_params}: {err}") from None
    except ValueError as err:
        print(f"swar-bench check-mechanism: error: {err}", file=sys.stderr)
        return 2

    def build() -> Any:
        return cls(**init_args)

    from swar_bench.runtime.memory import check_fits

    try:  # the checks hold weights and gradients: refuse a size that cannot fit before building it
        check_fits(cls, init_args, f"{full_path}(**{init_args})", copies=2)
    except ValueError as err:
        print(f"swar-bench check-mechanism: error: {err}", file=sys.stderr)
        return 2
    try:
        model = build()
    except (TypeError, ValueError) as err:
        line = f"{full_path}(**{init_args}) failed: {err}"
        print(f"swar-bench check-mechanism: error: {init_arg_lead(str(err), init_args, given, args.init_args, where)}{line}",
              file=sys.stderr)
        return 2
    problem = device_problem(model)
    if problem is not None:  # a precondition, not a conformance failure: no check runs
        print(f"swar-bench check-mechanism: error: {full_path}: {problem}; the checks run on the CPU", file=sys.stderr)
        return 2
    del model
    results = check_mechanism(
        build, task_params=params, seq_len=args.seq_len, long_len=args.long_len, atol=args.atol, seed=args.seed
    )
    shown = ", ".join(f"{k}={v!r}" for k, v in init_args.items())
    from swar_bench.utils import interrupts

    interrupts.complete()  # a stop held in an import (or swallowed) while the checks ran ends the command here
    print(format_report(results, f"check-mechanism {full_path}({shown})"))
    return 0 if passed(results) else 1
