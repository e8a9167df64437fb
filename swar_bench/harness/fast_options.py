"""Refuse an unknown option of ``swar-bench fit|validate|test|predict`` before Lightning is imported.

Building the LightningCLI parser needs ``lightning`` (and with it torch, torchmetrics, scipy and
torch._dynamo): 5-10 s on an idle laptop core, 35 s on a loaded one, spent before a mistyped
``--trainer.max_stepz 10`` is refused. The options of the fixed groups (``--trainer.*``,
``--model.*``, ``--data.*``, ``--checkpoint.*``, ...) and the subcommand's own (``--ckpt_path``)
are the parameters of known constructors and methods; they are read here from the source files
with ``ast`` (nothing is imported; a file is located with ``importlib.util.find_spec`` of its
top-level package, which does not import it), as jsonargparse reads them from their signatures.
Only what the parser would refuse is refused: a flag that is no option and no prefix of one
(argparse accepts an unambiguous prefix), in a group whose constructor takes no ``**kwargs``
(those forward to a base class). The nested options of a class-typed option
(``--model.mechanism.init_args.*``, ``--trainer.logger.*``) are left to the parser.
``tests/harness/test_fast_options.py`` checks this table against the real parser.
"""

from __future__ import annotations

import ast
import difflib
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

TOP_LEVEL = ("help", "config", "print_config", "seed_everything", "optimizer", "lr_scheduler", "collective_timeout")
"""Options of every subcommand that are no constructor parameter (LightningCLI's, and
``--collective_timeout`` of ``SwarBenchCLI``)."""

SKIPPED_METHOD_ARGS = ("model", "train_dataloaders", "val_dataloaders", "dataloaders", "datamodule")
"""Parameters of ``Trainer.fit`` / ``validate`` / ``test`` / ``predict`` that are no option
(``LightningCLI.subcommands``)."""


@functools.cache
def _parameters(package: str, relative: str, cls: str, method: str = "__init__") -> tuple[frozenset[str], bool] | None:
    """``(parameter names, takes **kwargs)`` of ``cls.method`` in ``package``'s file ``relative``,
    read with ``ast``; None when the file or the method is not found."""
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
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    args = item.args
                    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)][1:]  # no self
                    return frozenset(names), args.kwarg is not None
    return None


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


def unknown_options(argv: list[str]) -> list[tuple[str, str | None]]:
    """The ``--flags`` of ``argv`` (``[subcommand, *options]``) the parser would refuse as
    unrecognized, each with the closest option (``difflib``) or None, in order."""
    if not argv:
        return []
    table = known_options(argv[0])
    top = table[""]
    found = []
    for token in argv[1:]:
        if not token.startswith("--") or token == "--":
            continue
        typed = token[2:].split("=", 1)[0]  # as typed, for the message; "+" appends to a list option
        name = typed.rstrip("+")
        group, dot, rest = name.partition(".")
        if not name or top is None:
            continue
        if not dot or group not in table:  # a top-level option, or one under a group this table has not
            if group in top or not dot and any(a.startswith(group) for a in top):
                continue  # an option, or a prefix argparse resolves itself (--ckpt -> --ckpt_path)
            close = difflib.get_close_matches(group, sorted(top), n=1, cutoff=0.6)
            found.append((f"--{typed}", f"--{close[0]}{dot}{rest}" if close else None))
            continue
        allowed = table[group]
        first = rest.split(".")[0]
        if allowed is None or first in allowed or "." not in rest and any(a.startswith(first) for a in allowed):
            continue  # not read here, an option, or a prefix argparse resolves itself
        close = difflib.get_close_matches(first, sorted(allowed), n=1, cutoff=0.6)
        found.append((f"--{typed}", f"--{group}.{close[0]}" if close else None))
    return found


def unknown_options_line(argv: list[str]) -> str | None:
    """One line naming every unknown option of ``argv`` with its "did you mean", or None."""
    unknown = unknown_options(argv)
    if not unknown:
        return None
    shown = ", ".join(f"{flag} (did you mean {close}?)" if close else flag for flag, close in unknown)
    noun = "option" if len(unknown) == 1 else "options"
    return f"unknown {noun} {shown}; expected options of swar-bench {argv[0]} (swar-bench {argv[0]} --help)"
