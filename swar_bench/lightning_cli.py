"""LightningCLI for swar_bench: ``swar-bench fit|validate|test|predict --config configs/....yaml``.

The config file is the experiment (``configs/quickstart.yaml``): ``model`` is a ``TBPTTModule``
whose ``mechanism`` is any ContextMechanism given by ``class_path`` (``--model.mechanism
GatedDeltaNet`` or ``--model.mechanism=swar_bench.mechanisms.GRU`` swaps it), ``data`` a
``PasskeySwarDataModule``. Always present (configurable, not replaceable): a ``ModelCheckpoint``
with ``save_last=True`` (``--checkpoint.*``), the ``AnswerTypeAccuracy`` (``--accuracy.*``) and
``Calibration`` (``--calibration.*``) callbacks and a ``PredictionWriter``
(``--predictions.output_dir DIR`` saves ``predict`` outputs); the default logger is
TensorBoard under ``runs/``. ``--ckpt_path last`` resumes from the newest checkpoint of ``--checkpoint.dirpath``.

Bad configs end with one line on stderr (exit code 2), e.g. an unknown mechanism class,
``tbptt_steps < 1`` or an N outside the card's set; a non-finite training loss ends the run
with one line (exit code 1) and no checkpoint written after it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
from lightning.pytorch.callbacks import BasePredictionWriter, ModelCheckpoint
from lightning.pytorch.cli import LightningCLI

import swar_bench.mechanisms as mechanisms
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.module import TBPTTModule

DEFAULT_CHECKPOINT_DIR = "runs/checkpoints"
TRAINER_DEFAULTS = {
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"save_dir": "runs", "name": "swar_bench"},
    },
}


def mechanism_names() -> list[str]:
    """Names of the mechanisms of the zoo (``swar_bench.mechanisms.MECHANISMS``)."""
    return sorted(mechanisms.MECHANISMS)


def resolve_mechanism_names(argv: list[str]) -> list[str]:
    """``--model.mechanism=GRU`` -> ``--model.mechanism=swar_bench.mechanisms.GRU``.

    Short names are looked up in ``swar_bench.mechanisms`` first: some (``GRU``, ``LSTM``) are
    also ``torch.nn`` classes, which makes them ambiguous to the parser.
    """
    names = set(mechanism_names())
    out = list(argv)
    for i, arg in enumerate(out):
        if arg.startswith("--model.mechanism="):
            value = arg.split("=", 1)[1]
            if value in names:
                out[i] = f"--model.mechanism=swar_bench.mechanisms.{value}"
        elif arg == "--model.mechanism" and i + 1 < len(out) and out[i + 1] in names:
            out[i + 1] = f"swar_bench.mechanisms.{out[i + 1]}"
    return out


class PredictionWriter(BasePredictionWriter):
    """Saves ``predict`` outputs (the contract-4 dicts, one per batch) to
    ``<output_dir>/predictions_rank<r>.pt`` with ``torch.save``, atomically (temp file + rename).
    ``output_dir`` None (the default) writes nothing."""

    def __init__(self, output_dir: str | None = None) -> None:
        super().__init__(write_interval="epoch")
        self.output_dir = output_dir

    def write_on_epoch_end(self, trainer, pl_module, predictions: Any, batch_indices: Any) -> None:
        if self.output_dir is None:
            return
        os.makedirs(self.output_dir, exist_ok=True)
        path = os.path.join(self.output_dir, f"predictions_rank{trainer.global_rank}.pt")
        tmp = f"{path}.tmp.{os.getpid()}"
        torch.save(predictions, tmp)
        os.replace(tmp, path)


class SwarBenchCLI(LightningCLI):
    """LightningCLI with the always-on checkpoint and metric callbacks of swar_bench."""

    def add_arguments_to_parser(self, parser) -> None:
        from swar_bench.callbacks import AnswerTypeAccuracy, Calibration

        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.set_defaults({"checkpoint.save_last": True, "checkpoint.dirpath": DEFAULT_CHECKPOINT_DIR})
        parser.add_lightning_class_args(AnswerTypeAccuracy, "accuracy")
        parser.add_lightning_class_args(Calibration, "calibration")
        parser.add_lightning_class_args(PredictionWriter, "predictions")


def _one_line(message: str) -> str:
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    return " ".join(lines[:1]) if lines else "invalid arguments"


def _parse_error_line(message: str) -> str:
    """Turn a jsonargparse error into one sentence naming the value and what was expected."""
    import re

    key = re.match(r'Parser key "([^"]+)"', message)
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
        problem = re.search(r"class_path '([^']+)':\s*(.*)", message, flags=re.S)
        if problem:
            return f"--model.mechanism {problem.group(1)!r}: {_one_line(problem.group(2))}"
    if key:
        rest = message[key.end():]
        return f"{key.group(1)}: {_one_line(rest.lstrip(': '))}"
    return _one_line(message)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    0 on success; 2 for a bad command line / config (one line on stderr); 1 when training
    stopped on a non-finite loss (one line on stderr).
    """
    from jsonargparse import ArgumentError

    argv = resolve_mechanism_names(list(sys.argv[1:] if argv is None else argv))
    try:
        SwarBenchCLI(
            TBPTTModule,
            PasskeySwarDataModule,
            args=argv,
            trainer_defaults=TRAINER_DEFAULTS,
            save_config_kwargs={"overwrite": True},
            parser_kwargs={"exit_on_error": False},
        )
    except ArgumentError as err:
        print(f"swar-bench: error: {_parse_error_line(str(err))}", file=sys.stderr)
        return 2
    except FloatingPointError as err:
        print(f"swar-bench: training stopped: {_one_line(str(err))}", file=sys.stderr)
        return 1
    except ValueError as err:
        print(f"swar-bench: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --print_config
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
