"""Stop training once a fixed budget of training FLOPs is spent, whatever N the batches have.

Comparisons at *equal training FLOPs* need a stop rule that does not count optimizer steps: with
one step per batch, a batch at n256 (about 970 tokens per sequence) costs about 7x one at n32. This
callback counts FLOPs the way ``LengthCurriculum``'s ledger does, so a run stopped by it and a
curriculum run stopped by its ledger spend the same budget:

- FLOPs so far = 6 * n_params * tokens trained (Kaplan et al. 2020), tokens = the module's
  ``tokens_seen`` (``B * T`` of every training batch, padding included: it is computed) times the
  data-parallel world size;
- training stops after the first batch that brings the count to ``budget_flops`` or beyond (an
  overshoot of at most one batch).

The count is restored on resume with ``tokens_seen`` (saved in every checkpoint by the module).
"""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info


class FlopBudget(Callback):
    """Stop ``fit`` when 6 * n_params * tokens trained reaches ``budget_flops``.

    Args:
        budget_flops: the training FLOP budget, a finite number > 0 (e.g. ``4.6e12``).

    Attributes:
        n_params: parameters of the module (read at fit start). flops_spent: FLOPs so far (float).

    Needs: the module's ``tokens_seen`` (int, tokens trained on this rank).

    Raises:
        ValueError: ``budget_flops`` not a finite number > 0.
        TypeError: a module without ``tokens_seen``.
    """

    def __init__(self, budget_flops: float) -> None:
        super().__init__()
        if isinstance(budget_flops, bool) or not isinstance(budget_flops, (int, float)) or not (
            math.isfinite(budget_flops) and budget_flops > 0
        ):
            raise ValueError(f"budget_flops={budget_flops!r}: expected a finite number of FLOPs > 0, e.g. 4.6e12")
        self.budget_flops = float(budget_flops)
        self.n_params: int | None = None
        self.flops_spent = 0.0

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not hasattr(pl_module, "tokens_seen"):
            raise TypeError(f"FlopBudget needs {type(pl_module).__name__}.tokens_seen (tokens trained so far)")
        # DTensor.numel() is the global size, so this also counts FSDP-sharded parameters fully.
        self.n_params = int(sum(p.numel() for p in pl_module.parameters()))

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.flops_spent = 6.0 * self.n_params * float(pl_module.tokens_seen) * trainer.world_size
        pl_module.log("budget/flops_spent", self.flops_spent, on_step=True, on_epoch=False, batch_size=1)
        if self.flops_spent >= self.budget_flops:
            rank_zero_info(
                f"FlopBudget: {self.flops_spent:.4g} of {self.budget_flops:.4g} training FLOPs spent; stopping"
            )
            trainer.should_stop = True
