"""Small mechanisms for the referee tests: the zoo's GRU, a loss-only GRU and a growing-state model."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from swar_bench.mechanisms import GRU
from swar_bench.mechanisms.protocol import map_state

VOCAB = 17


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny models run faster on one thread on a shared machine; restored after each module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def small_gru(seed: int = 0, vocab_size: int = VOCAB, d_model: int = 16) -> GRU:
    """A freshly initialised one-block GRU mechanism (deterministic for a given seed)."""
    torch.manual_seed(seed)
    return GRU(vocab_size=vocab_size, d_model=d_model, n_layers=1, mlp_ratio=2)


class LossOnlyGRU:
    """A mechanism in the referee card's own style, not an ``nn.Module``: ``init_state(batch_size)``,
    ``step(state, (x, y)) -> (state, mean_loss)``, ``parameters()``, ``vocab``; no logits exposed."""

    def __init__(self, seed: int = 0):
        self.inner = small_gru(seed)
        self.vocab = self.inner.vocab_size

    def parameters(self):
        return self.inner.parameters()

    def init_state(self, batch_size):
        return self.inner.init_state(batch_size)

    def step(self, state, batch):
        x, y = batch
        logits, state = self.inner(x, state)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100
        )
        return state, loss


class GrowingCache(nn.Module):
    """A bigram model whose state keeps every token read (float32): its state grows with the stream."""

    def __init__(self, vocab_size: int = VOCAB):
        super().__init__()
        self.vocab_size = vocab_size
        self.table = nn.Embedding(vocab_size, vocab_size)

    @property
    def n_params(self) -> int:
        return self.table.weight.numel()

    @property
    def flops_per_token(self) -> float:
        return 0.0

    def init_state(self, batch_size, device=None, dtype=None):
        return torch.zeros(batch_size, 0, device=device)

    def forward(self, input_ids, state):
        return self.table(input_ids), torch.cat([state, input_ids.float()], dim=1)

    def detach_state(self, state):
        return map_state(torch.Tensor.detach, state)

    def state_bytes(self, batch_size: int) -> int:
        return 0


@pytest.fixture
def make_gru():
    return small_gru


@pytest.fixture
def loss_only_gru():
    return LossOnlyGRU()


@pytest.fixture
def growing_cache():
    torch.manual_seed(0)
    return GrowingCache()


SMALL = {
    "ranges": (6, 12),
    "state_budget_bytes": 1024,
    "seed": 0,
    "n_train_steps": 3,
    "n_eval_trials": 4,
    "perplexity_steps": 2,
    "curriculum_rounds": 5,
    "batch_size": 4,
    "tbptt_steps": 8,
    "chunk_size": 5,
}
"""Stand-in for the card's ranges (1e3 .. 1e6): the same code path at a size a test can afford."""


@pytest.fixture(scope="session")
def small_kwargs():
    return dict(SMALL)


@pytest.fixture(scope="session")
def gru_result():
    from swar_bench.referee.evaluate import evaluate

    return evaluate(small_gru(0), **SMALL)
