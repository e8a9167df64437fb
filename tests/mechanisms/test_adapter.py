"""LossOnlyAdapter over a loss-only mechanism (``step`` returns a loss, no logits)."""

import pytest
import torch
from torch import nn

from swar_bench.mechanisms import ContextMechanism, LossOnlyAdapter


class SeedStyleBigram(nn.Module):
    """A seed-style mechanism: ``step(state, (x, y)) -> (state, mean_loss)``; state = token count."""

    vocab = 11

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(11, 11)

    def init_state(self, batch_size):
        return torch.zeros(batch_size)

    def step(self, state, batch):
        x, y = batch
        loss = nn.functional.cross_entropy(self.table(x).flatten(0, 1), y.flatten())
        return state + x.shape[1], loss


def test_adapter_exposes_accounting_and_passes_step_through():
    inner = SeedStyleBigram()
    adapter = LossOnlyAdapter(inner)
    assert isinstance(adapter, ContextMechanism)
    assert adapter.returns_logits is False
    assert adapter.vocab_size == 11
    assert adapter.n_params == 121
    assert adapter.flops_per_token == 242.0
    assert adapter.state_bytes(3) == 12  # measured: 3 float32
    x = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(0))
    state, loss = adapter.step(adapter.init_state(3), (x, x))
    expected = nn.functional.cross_entropy(inner.table(x).flatten(0, 1), x.flatten())
    assert torch.equal(loss, expected)
    assert state.tolist() == [5.0, 5.0, 5.0]
    loss2, state2 = adapter.loss(x, x, state)
    assert state2.tolist() == [10.0, 10.0, 10.0] and torch.equal(loss2, expected)
    with pytest.raises(TypeError, match="returns only a mean loss"):
        adapter(x, state)


def test_adapter_registers_parameters_of_a_non_module_mechanism():
    class Plain:
        vocab_size = 5

        def __init__(self):
            self.w = nn.Parameter(torch.zeros(5, 2))

        def parameters(self):
            return [self.w]

        def step(self, state, batch):
            return state, self.w.sum()

    plain = Plain()
    adapter = LossOnlyAdapter(plain)
    assert adapter.n_params == 10
    assert next(iter(adapter.parameters())) is plain.w
    assert adapter.init_state(2) is None and adapter.state_bytes(2) == 0


def test_adapter_rejects_what_it_cannot_adapt():
    with pytest.raises(TypeError, match="no step"):
        LossOnlyAdapter(nn.Linear(2, 2))

    class NoVocab:
        def step(self, state, batch):
            return state, torch.tensor(0.0)

    with pytest.raises(ValueError, match="vocab_size is needed"):
        LossOnlyAdapter(NoVocab())
    assert LossOnlyAdapter(NoVocab(), vocab_size=7).vocab_size == 7
