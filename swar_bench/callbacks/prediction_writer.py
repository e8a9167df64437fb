"""``PredictionWriter``: the ``predict`` outputs of the LightningCLI (``--predictions.*``) saved
to a file per rank."""

from __future__ import annotations

import os
from typing import Any

import torch
from lightning.pytorch.callbacks import BasePredictionWriter

from swar_bench.utils.files import atomic_path


class PredictionWriter(BasePredictionWriter):
    """Saves ``predict`` outputs into ``<output_dir>/predictions_rank<r>.pt``, one file per rank.

    One :class:`~swar_bench.module.EvalOutputs` per batch, saved as its plain dict ``as_dict()`` so
    ``torch.load(weights_only=True)`` reads the file, with ``torch.save``, atomically (temp file +
    rename); prints ``wrote <path>``.

    Args:
        output_dir: the folder of the prediction files; None (the default) writes nothing and says so.
    """

    def __init__(self, output_dir: str | None = None) -> None:
        super().__init__(write_interval="epoch")
        self.output_dir = output_dir

    def write_on_epoch_end(self, trainer, pl_module, predictions: Any, batch_indices: Any) -> None:
        if self.output_dir is None:
            if trainer.is_global_zero:
                print("predict: outputs not kept; give --predictions.output_dir DIR to save them")
            return
        from lightning_utilities.core.apply_func import apply_to_collection

        from swar_bench.module import EvalOutputs

        path = os.path.join(self.output_dir, f"predictions_rank{trainer.global_rank}.pt")
        with atomic_path(path) as tmp:
            torch.save(apply_to_collection(predictions, EvalOutputs, EvalOutputs.as_dict), tmp)
        print(f"wrote {path}")
