"""``FlopsPerTokenSummary``: Lightning's model summary with the mechanism's forward FLOPs per token."""

from __future__ import annotations

import logging
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelSummary


class FlopsPerTokenSummary(ModelSummary):
    """Lightning's model summary (``ModelSummary``, the table it prints when a fit starts) with
    the mechanism's forward FLOPs per token (the ``flops_per_token`` property of the ContextMechanism
    protocol, ``swar_bench/mechanisms/protocol.py``) in place of Lightning's FLOPs column and
    "Total Flops" line: Lightning counts FLOPs only by running ``example_input_array`` through
    ``forward`` (``torch.utils.flop_counter.FlopCounterMode``), which a TBPTT module streaming a
    state has not got, so they read 0. The line is left out for a mechanism without
    ``flops_per_token``. The CLI's Trainer gets it in place of the default ``ModelSummary``
    (``enable_model_summary``)."""

    FLOPS_LABEL = "Forward FLOPs per token (flops_per_token)"

    def __init__(self, max_depth: int = 1, **summarize_kwargs: Any) -> None:
        super().__init__(max_depth, **summarize_kwargs)
        self.flops_per_token: float | None = None

    @classmethod
    def replacing(cls, summary: ModelSummary) -> FlopsPerTokenSummary:
        """This summary with the depth and options of Lightning's ``summary``."""
        return cls(summary._max_depth, **summary._summarize_kwargs)

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        count = getattr(getattr(pl_module, "mechanism", None), "flops_per_token", None)  # a property of the protocol
        self.flops_per_token = float(count) if isinstance(count, (int, float)) else None
        super().on_fit_start(trainer, pl_module)

    def summarize(self, summary_data: list[tuple[str, list[str]]], total_parameters: int, trainable_parameters: int,
                  model_size: float, total_training_modes: dict[str, int], total_flops: int, **summarize_kwargs: Any) -> None:
        from lightning.pytorch.utilities.model_summary.model_summary import (
            _format_summary_table,
            get_human_readable_count,
        )

        columns = [column for column in summary_data if column[0] != "FLOPs"]
        table = _format_summary_table(total_parameters, trainable_parameters, model_size, total_training_modes, 0, *columns)
        lines = table.splitlines()
        if lines and lines[-1].endswith("Total Flops"):
            lines.pop()
        if self.flops_per_token is not None:
            lines.append(f"{get_human_readable_count(int(self.flops_per_token)):<10}{self.FLOPS_LABEL}")
        logging.getLogger(ModelSummary.__module__).info("\n" + "\n".join(lines))
