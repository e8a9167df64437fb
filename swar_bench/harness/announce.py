"""``Announce``: the one line a run prints before it starts, naming the built mechanism and the
run folder."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

from swar_bench.harness.run_folders import run_folder
from swar_bench.module import TBPTTModule, mechanism_class_path

DOCUMENTED_SEQ_LEN = 4096
"""The sequence length at which a passkey_swar run states a growing state (its examples' lengths
vary with N; docs/MECHANISMS.md's table states every state at T=4,096)."""


def run_seq_len(datamodule: Any) -> int:
    """The sequence length at which a run's state is stated: an MQAR run's own ``input_seq_len``
    (``--data.mqar.input_seq_len``), else :data:`DOCUMENTED_SEQ_LEN`."""
    mqar = getattr(datamodule, "mqar", None)
    seq_len = getattr(mqar, "input_seq_len", None)
    return int(seq_len) if isinstance(seq_len, int) and seq_len > 0 else DOCUMENTED_SEQ_LEN


def state_size(mechanism: Any, seq_len: int = DOCUMENTED_SEQ_LEN) -> str:
    """``"state 512 bytes/sequence"``, or ``"state 65,544 bytes/sequence at T=64 (grows)"`` for a
    growing state, after ``seq_len`` tokens (the run's own: :func:`run_seq_len`)."""
    from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at

    try:
        grows = "" if is_fixed_size(mechanism) else f" at T={seq_len:,} (grows)"
        return f"state {state_bytes_at(mechanism, 1, seq_len):,} bytes/sequence{grows}"
    except Exception:  # noqa: BLE001 - a layer without state_bytes is still described
        return "state bytes unknown"


def describe_mechanism(mechanism: Any, seq_len: int = DOCUMENTED_SEQ_LEN) -> str:
    """``"GRU (swar_bench.mechanisms.recurrent.GRU): 120,896 params, state 512 bytes/sequence"``
    (a growing state after ``seq_len`` tokens: :func:`state_size`)."""
    return (f"{type(mechanism).__name__} ({mechanism_class_path(mechanism)}): "
            f"{int(getattr(mechanism, 'n_params', 0)):,} params, {state_size(mechanism, seq_len)}")


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
    model, its state at the run's sequence length>; run folder <dir>`` (:func:`announced_folder`: a ``fast_dev_run`` names no folder it
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
            f"swar-bench {self.subcommand}: {describe_mechanism(pl_module.mechanism, run_seq_len(trainer.datamodule))}; "
            f"{announced_folder(trainer, self.subcommand)}",
            flush=True,
        )
