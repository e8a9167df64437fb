"""``Announce``: the one line a run prints before it starts, naming the built mechanism and the
run folder."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

from swar_bench.harness.run_folders import run_folder
from swar_bench.module import TBPTTModule, mechanism_class_path


def describe_mechanism(mechanism: Any) -> str:
    """``"GRU (swar_bench.mechanisms.recurrent.GRU): 120,896 params, state 512 bytes/sequence"``
    (state after 4,096 tokens for a growing state)."""
    from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at

    try:
        state = f"state {state_bytes_at(mechanism, 1, 4096):,} bytes/sequence" + ("" if is_fixed_size(mechanism) else " at T=4,096 (grows)")
    except Exception:  # noqa: BLE001 - a layer without state_bytes is still described
        state = "state bytes unknown"
    return f"{type(mechanism).__name__} ({mechanism_class_path(mechanism)}): {int(getattr(mechanism, 'n_params', 0)):,} params, {state}"


def announced_folder(trainer: pl.Trainer, subcommand: str) -> str:
    """Where a run writes, as its announce line says it: ``run folder <dir>``; with
    ``--trainer.fast_dev_run``, which writes no logs and no checkpoints (Lightning's
    ``DummyLogger``; ``save_last`` is off then too), ``fast_dev_run: no run folder is written (no
    logs, no checkpoints)`` (``fit``, ``validate``, ``predict``, whose ``--predictions.output_dir``
    is no run folder) or ``fast_dev_run: no logs or checkpoints are written, only the test reports,
    into <dir>`` (``test``)."""
    if not trainer.fast_dev_run:
        return f"run folder {run_folder(trainer)}"
    if subcommand == "test":
        return f"fast_dev_run: no logs or checkpoints are written, only the test reports, into {run_folder(trainer)}"
    return "fast_dev_run: no run folder is written (no logs, no checkpoints)"


class Announce(Callback):
    """One line on stdout (global rank 0) before a run: ``swar-bench <subcommand>: <the built
    model>; run folder <dir>`` (:func:`announced_folder`: a ``fast_dev_run`` names no folder it
    does not write), printed once the inputs are validated. Lightning calls ``setup``
    after the datamodule's ``prepare_data`` (which opens every stored split the run reads, so a
    bad ``--data.source`` has ended the run by then) and before the logger creates the folder."""

    def __init__(self, subcommand: str) -> None:
        self.subcommand = subcommand
        self.done = False

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.done or not trainer.is_global_zero or not isinstance(pl_module, TBPTTModule):
            return
        self.done = True
        print(
            f"swar-bench {self.subcommand}: {describe_mechanism(pl_module.mechanism)}; "
            f"{announced_folder(trainer, self.subcommand)}",
            flush=True,
        )
