"""Deliberately broken mechanisms: each breaks one rule of the protocol, so that
``swar-bench check-mechanism`` must fail on that rule's row (tests/mechanisms/test_conformance.py)."""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms import GRU


class LyingStateBytes(GRU):
    """A GRU whose ``state_bytes`` claims 4 bytes more than the state holds."""

    def state_bytes(self, batch_size, seq_len=0, dtype=None):
        return super().state_bytes(batch_size, seq_len, dtype) + 4


class StateNotCarried(GRU):
    """A GRU that starts every call from the empty state, ignoring the one it is given."""

    def forward(self, input_ids, state=None):
        return super().forward(input_ids, None)


class GrowingState(nn.Module):
    """Causal mean of the token embeddings seen so far; the state keeps every embedding (it grows
    with T) while the class claims a fixed-size state of 0 bytes."""

    def __init__(self, vocab_size: int = 40, d_model: int = 16):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def flops_per_token(self) -> float:
        return 2.0 * self.head.weight.numel()

    def init_state(self, batch_size, device=None, dtype=None):
        return torch.zeros(batch_size, 0, self.d_model, device=device, dtype=dtype)

    def forward(self, input_ids, state):
        x = torch.cat([state.to(self.embedding.weight.dtype), self.embedding(input_ids)], dim=1)
        mean = x.cumsum(1) / torch.arange(1, x.shape[1] + 1, device=x.device).view(1, -1, 1)
        return self.head(mean[:, state.shape[1] :]), x

    def detach_state(self, state):
        return state.detach()

    def state_bytes(self, batch_size, seq_len=0, dtype=None):
        return 0


class NoDetach(GRU):
    """A GRU whose ``detach_state`` returns the state still attached to the graph."""

    def detach_state(self, state):
        return state
