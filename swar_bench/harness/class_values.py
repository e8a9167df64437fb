"""Checks of the init args of the classes given to ``--trainer.logger`` and ``--trainer.callbacks``
that jsonargparse passes unchecked: an argument with no annotation (``TensorBoardLogger``'s
``max_queue`` and ``flush_secs``, forwarded through ``**kwargs`` to ``SummaryWriter``) is typed
``Union[int, Untyped]`` from its default, so ``max_queue=ten`` passes the parser and fails in
``SummaryWriter`` mid-run (or not at all under ``fast_dev_run``). :func:`class_arg_problem`
refuses such a value as the parser refuses a typed one (``Expected int. Got value: ten``), and a
logger's count or period (an int whose default is positive: ``flush_secs``, ``max_queue``,
``flush_logs_every_n_steps``) that is not positive.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Union, get_args, get_origin

from swar_bench.config_errors import option_source

OPTIONS = ("trainer.logger", "trainer.callbacks")
"""The class-typed options whose init args are checked here."""


@functools.lru_cache(maxsize=64)
def argument_types(class_path: str) -> dict[str, tuple[Any, Any]]:
    """``{argument: (type hint, default)}`` of ``class_path``'s constructor as jsonargparse's parser
    reads it (``**kwargs`` followed); empty when the class cannot be read."""
    from jsonargparse import ArgumentParser

    from swar_bench.mechanisms.registry import resolve_class

    try:
        parser = ArgumentParser(exit_on_error=False)
        parser.add_class_arguments(resolve_class(class_path), "x", fail_untyped=False)
    except Exception:  # noqa: BLE001 - a class not read here is left to the parser and the class
        return {}
    return {a.dest[2:]: (getattr(a, "_typehint", None), a.default) for a in parser._actions
            if a.dest.startswith("x.") and "." not in a.dest[2:]}


def expected_type(hint: Any) -> type | None:
    """``int`` for ``Union[int, Untyped]`` (an unannotated argument typed from its default) and for
    ``int``; likewise ``float`` and ``bool``; None for any other hint."""
    kinds = (bool, int, float)
    if hint in kinds:
        return hint
    if get_origin(hint) is Union:
        args = [a for a in get_args(hint) if type(a).__name__ != "UntypedType"]
        if len(args) == 1 and args[0] in kinds and len(get_args(hint)) == 2:
            return args[0]
    return None


def _fits(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def arg_problem(class_path: str, name: str, value: Any, logger: bool) -> str | None:
    """What is wrong with ``value`` for the argument ``name`` of ``class_path`` (``"Expected int.
    Got value: ten"``, ``"expected a positive int"`` for a logger's count or period), else None."""
    hint, default = argument_types(class_path).get(name, (None, None))
    kind = expected_type(hint)
    if kind is None or value is None and default is None:
        return None
    if not _fits(value, kind):
        return f"Expected {kind.__name__}. Got value: {value}"
    if logger and kind is int and isinstance(default, int) and not isinstance(default, bool) and default > 0 and value < 1:
        return f"Got value: {value}; expected a positive integer"
    return None


def _entries(cfg: Any, option: str) -> list[tuple[str, dict[str, Any]]]:
    node = cfg.get(option) if hasattr(cfg, "get") else None
    items = node if isinstance(node, list) else [node]
    found = []
    for item in items:
        get = getattr(item, "get", None)
        if get is None or not isinstance(get("class_path"), str):
            continue
        init_args = get("init_args")
        init_args = dict(init_args.items() if hasattr(init_args, "items") else vars(init_args or {}))
        found.append((get("class_path"), init_args))
    return found


def class_arg_problem(cfg: Any, argv: list[str]) -> str | None:
    """One line for the first init arg of a ``OPTIONS`` class in ``cfg`` that :func:`arg_problem`
    refuses: ``--trainer.logger.init_args.max_queue: Expected int. Got value: ten (an argument of
    lightning.pytorch.loggers.TensorBoardLogger)``, led by the ``--config`` file that set it
    (``--config=/abs/run.yaml: trainer.logger.init_args.max_queue: ...``). None when all pass."""
    for option in OPTIONS:
        for class_path, init_args in _entries(cfg, option):
            for name, value in init_args.items():
                problem = arg_problem(class_path, name, value, option == "trainer.logger")
                if problem is None:
                    continue
                key = f"{option}.init_args.{name}"
                source = option_source(argv, key, str(value))
                from swar_bench.class_item_errors import class_value_line, typed_flag

                return class_value_line(key if source is not None else typed_flag(argv, option, name), problem,
                                        class_path, argv, source)
    return None
