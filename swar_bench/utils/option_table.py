"""The options of ``swar-bench fit|validate|test|predict`` read without importing Lightning.

The options of the fixed groups (``--trainer.*``, ``--model.*``, ``--data.*``, ...) and the
subcommand's own are the parameters of known constructors and methods; they are read here from
the source files with ``ast`` (a file is located with ``importlib.util.find_spec`` of its top-level
package, which does not import it), as jsonargparse reads them from their signatures. The
command line's refusal of an unknown option (``swar_bench.harness.fast_options``) and the study's
check of its config files (``swar_bench.study.config_files``) read this one table.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os

GROUPS = {
    "trainer": ("lightning", "pytorch/trainer/trainer.py", "Trainer"),
    "checkpoint": ("lightning", "pytorch/callbacks/model_checkpoint.py", "ModelCheckpoint"),
    "model": ("swar_bench", "module.py", "TBPTTModule"),
    "data": ("swar_bench", "datamodules/passkey_swar.py", "PasskeySwarDataModule"),
    "accuracy": ("swar_bench", "callbacks/answer_type_accuracy.py", "AnswerTypeAccuracy"),
    "calibration": ("swar_bench", "callbacks/calibration.py", "Calibration"),
    "mqar_accuracy": ("swar_bench", "callbacks/mqar_accuracy.py", "MQARAccuracy"),
    "predictions": ("swar_bench", "callbacks/prediction_writer.py", "PredictionWriter"),
}
"""Option group -> (top-level package, file in it, class) whose ``__init__`` parameters are the
group's options (``SwarBenchCLI.add_arguments_to_parser`` and LightningCLI's own groups)."""

NESTED = {
    "data.mqar": ("swar_bench", "datamodules/mqar.py", "MQARData"),
}
"""Mapping option -> (top-level package, file in it, dataclass) whose fields are its keys
(``--data.mqar.num_kv_pairs 8``; ``PasskeySwarDataModule(mqar=...)`` is a ``dict``)."""

TOP_LEVEL = ("help", "config", "print_config", "seed_everything", "collective_timeout")
"""Options of every subcommand that are no constructor parameter (LightningCLI's, and
``--collective_timeout`` of ``SwarBenchCLI``). LightningCLI's ``--optimizer`` and ``--lr_scheduler``
are not options: ``TBPTTModule`` builds and steps its own optimizer and schedule."""

OWN_OPTIMIZER = ("optimizer", "lr_scheduler")
"""LightningCLI's options that ``swar-bench`` does not take: the model builds its own optimizer."""

OWN_OPTIMIZER_NOTE = ("the model builds its own AdamW and warmup-cosine schedule: --model.lr, --model.weight_decay, "
                      "--model.betas, --model.warmup_steps, --model.min_lr_ratio")
"""What a refusal of ``OWN_OPTIMIZER`` says to use instead."""


def own_optimizer_note(names: list[str]) -> str:
    """`` (the model builds its own AdamW ...)`` when one of the dotted ``names`` (``optimizer``,
    ``--lr_scheduler.step_size``) is an ``OWN_OPTIMIZER`` option, else ``""``."""
    firsts = {name.lstrip("-").split("=")[0].split(".")[0].rstrip("+") for name in names}
    return f" ({OWN_OPTIMIZER_NOTE})" if firsts & set(OWN_OPTIMIZER) else ""


SKIPPED_METHOD_ARGS = ("model", "train_dataloaders", "val_dataloaders", "dataloaders", "datamodule")
"""Parameters of ``Trainer.fit`` / ``validate`` / ``test`` / ``predict`` that are no option
(``LightningCLI.subcommands``)."""


@functools.cache
def _class_node(package: str, relative: str, cls: str) -> ast.ClassDef | None:
    """The top-level ``class cls`` of ``package``'s file ``relative``, parsed with ``ast`` (the
    file is located with ``find_spec`` of the package, which does not import it); None when the
    package, the file or the class is not found or the file cannot be read or parsed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), relative)
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return node
    return None


@functools.cache
def _parameters(package: str, relative: str, cls: str, method: str = "__init__") -> tuple[frozenset[str], bool] | None:
    """``(parameter names, takes **kwargs)`` of ``cls.method`` in ``package``'s file ``relative``,
    read with ``ast``; None when the file or the method is not found."""
    node = _class_node(package, relative, cls)
    for item in node.body if node is not None else ():
        if isinstance(item, ast.FunctionDef) and item.name == method:
            args = item.args
            names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)][1:]  # no self
            return frozenset(names), args.kwarg is not None
    return None


@functools.cache
def _fields(package: str, relative: str, cls: str) -> frozenset[str] | None:
    """The field names (annotated class attributes) of the dataclass ``cls`` in ``package``'s file
    ``relative``, read with ``ast``; None when the file or the class is not found."""
    node = _class_node(package, relative, cls)
    if node is None:
        return None
    return frozenset(
        item.target.id for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    )


def nested_fields(option: str) -> frozenset[str] | None:
    """The keys the mapping option ``option`` (``data.mqar``, ``NESTED``) takes; None for another
    option or when its dataclass cannot be read."""
    where = NESTED.get(option)
    return _fields(*where) if where is not None else None


def known_options(subcommand: str) -> dict[str, frozenset[str] | None]:
    """Option group (``""`` for the top level) -> the names allowed right after it (``trainer``
    -> ``max_steps``, ...); None for a group that cannot be read or takes ``**kwargs`` (not
    checked)."""
    table: dict[str, frozenset[str] | None] = {}
    for group, (package, relative, cls) in GROUPS.items():
        found = _parameters(package, relative, cls)
        table[group] = None if found is None or found[1] else found[0]
    method = _parameters("lightning", "pytorch/trainer/trainer.py", "Trainer", subcommand)
    if method is None:
        table[""] = None
    else:
        table[""] = frozenset((*TOP_LEVEL, *GROUPS, *(m for m in method[0] if m not in SKIPPED_METHOD_ARGS)))
    return table
