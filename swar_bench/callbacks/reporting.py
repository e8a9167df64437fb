"""Where the callbacks' reports go and how they get there: atomic files, TensorBoard, table cells.

Shared by ``AnswerTypeAccuracy`` and ``Calibration``. Every file is written to a temporary file
in the target folder and renamed over the target (``swar_bench.utils.files``), so a reader never sees a
half-written table or figure, and a crash leaves the previous version in place.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.loggers import TensorBoardLogger

from swar_bench.utils.files import atomic_write
from swar_bench.utils.intervals import MISSING


def save_figure_atomic(figure: Any, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Save a matplotlib ``Figure`` as PNG to ``path`` through a temporary file and a rename."""
    return atomic_write(path, lambda handle: figure.savefig(handle, format="png", dpi=dpi), binary=True)


def report_dir(trainer: pl.Trainer, out_dir: str | os.PathLike | None) -> Path:
    """``out_dir`` when given, else the logger's ``log_dir`` (``trainer.log_dir``; the Trainer's
    ``default_root_dir`` without a logger). Call it on every rank: ``trainer.log_dir`` broadcasts."""
    if out_dir is not None:
        return Path(out_dir)
    log_dir = trainer.log_dir
    return Path(log_dir if log_dir is not None else trainer.default_root_dir)


def tensorboard_experiments(trainer: pl.Trainer) -> list[Any]:
    """The ``SummaryWriter`` of every ``TensorBoardLogger`` attached to ``trainer`` (may be empty)."""
    return [
        logger.experiment for logger in trainer.loggers if isinstance(logger, TensorBoardLogger)
    ]


def log_epoch_value(pl_module: pl.LightningModule, name: str, value: float) -> None:
    """Log an epoch-level value that torchmetrics has already reduced across ranks.

    Every rank holds the same value, so Lightning's sync uses ``max`` (exact, unlike a mean of
    copies) only to tell Lightning the value is global.
    """
    pl_module.log(
        name,
        float(value),
        on_step=False,
        on_epoch=True,
        batch_size=1,
        sync_dist=True,
        reduce_fx="max",
        add_dataloader_idx=False,
    )


def metric_rows(states: Mapping[str, torch.Tensor], n_rows: int) -> dict[str, np.ndarray]:
    """A metric's ``compute()`` dict as numpy arrays of shape ``[n_rows, columns]`` (one row per
    evaluated N).

    torchmetrics' ``compute()`` squeezes a one-element tensor to 0-d (a per-N state with one N),
    so the rows are restored from ``n_rows`` rather than read from the shapes.

    Raises:
        ValueError: a state whose size is not a multiple of ``n_rows``.
    """
    out = {}
    for name, value in states.items():
        array = value.detach().cpu().numpy()
        if n_rows < 1 or array.size % n_rows:
            raise ValueError(
                f"metric state {name!r} has shape {tuple(array.shape)}: expected {n_rows} rows"
            )
        out[name] = array.reshape(n_rows, -1)
    return out


def format_number(value: float, digits: int = 6) -> str:
    """``f"{value:.{digits}f}"``, or ``MISSING`` for NaN (nothing observed, or undefined)."""
    return f"{value:.{digits}f}" if math.isfinite(value) else MISSING


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table (first column left-aligned, the others right-aligned)."""
    align = [":---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
