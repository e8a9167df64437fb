"""A test mechanism whose training logits turn NaN after a number of forward calls."""

from __future__ import annotations

import os

import torch

from swar_bench.mechanisms import GRU


class NaNAfter(torch.nn.Module):
    """A tiny GRU (d_model 8, one layer) whose logits turn NaN from its ``after``-th forward call
    on, in training mode only (evaluation stays finite); with ``on_rank``, on that rank of a
    distributed run only (``LOCAL_RANK``; one process is rank 0)."""

    def __init__(self, after: int = 2, on_rank: int | None = None) -> None:
        super().__init__()
        self.inner = GRU(d_model=8, n_layers=1)
        self.vocab_size = self.inner.vocab_size
        self.after, self.calls, self.on_rank = after, 0, on_rank

    def init_state(self, batch_size, device=None, dtype=None):
        return self.inner.init_state(batch_size, device, dtype)

    def detach_state(self, state):
        return self.inner.detach_state(state)

    def forward(self, input_ids, state):
        logits, state = self.inner(input_ids, state)
        if self.training:
            self.calls += 1
            if self.calls > self.after and self.on_rank in (None, int(os.environ.get("LOCAL_RANK", "0"))):
                logits = logits * float("nan")
        return logits, state
