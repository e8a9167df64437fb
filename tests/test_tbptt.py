"""swar_bench.tbptt: the chunk loop shared by the harness and the referee."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.tbptt import IGNORE_INDEX, chunk_bounds, supervised_cross_entropy, tbptt_chunks


@settings(max_examples=50, deadline=None)
@given(length=st.integers(0, 200), chunk_size=st.integers(1, 64), split=st.none() | st.integers(-5, 205))
def test_chunk_bounds_tile_the_sequence(length, chunk_size, split):
    bounds = chunk_bounds(length, chunk_size, split)
    assert [a for a, _ in bounds] == [0, *[b for _, b in bounds[:-1]]][: len(bounds)]  # contiguous
    assert (bounds[-1][1] if bounds else 0) == length
    assert all(0 < b - a <= chunk_size for a, b in bounds)
    if split is not None and 0 < split < length:
        assert split in [a for a, _ in bounds]


def test_chunk_size_below_one_is_refused():
    with pytest.raises(ValueError, match="chunk_size=0: expected an integer >= 1"):
        list(tbptt_chunks(lambda s, x, y: (s, None), 0, torch.zeros(1, 3), torch.zeros(1, 3), 0, lambda s: s))


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 40), chunk_size=st.integers(1, 16))
def test_the_state_is_carried_and_detached_only_after_the_caller_is_done(T, chunk_size):
    # A running sum as the "mechanism": the state after a chunk is the sum of every token so far,
    # and the graph of a chunk's result reaches the weight but never an earlier chunk.
    w = torch.tensor(2.0, requires_grad=True)
    x = torch.arange(T, dtype=torch.float32)[None, :]
    seen = []

    def step(state, ids, tgt):
        state = state + (w * ids).sum()
        return state, state * 1.0

    def detach(state):
        seen.append("detach")
        return state.detach()

    out = []
    for chunk in tbptt_chunks(step, torch.zeros(()), x, x, chunk_size, detach):
        assert chunk.result.requires_grad  # not detached before the caller's backward
        (grad,) = torch.autograd.grad(chunk.result, w)
        assert float(grad) == pytest.approx(float(x[0, chunk.start : chunk.stop].sum()))
        seen.append("caller")
        out.append(float(chunk.state.detach()))
    assert out == pytest.approx([2 * float(x[0, :b].sum()) for _, b in chunk_bounds(T, chunk_size)])
    assert seen == ["caller", "detach"] * len(out)


def test_supervised_cross_entropy_sums_only_supervised_positions():
    logits = torch.zeros(2, 3, 4)  # uniform: ln 4 nats per position
    targets = torch.tensor([[1, IGNORE_INDEX, 3], [IGNORE_INDEX, IGNORE_INDEX, 0]])
    loss_sum, count = supervised_cross_entropy(logits, targets)
    assert count == 3
    assert float(loss_sum) == pytest.approx(3 * torch.log(torch.tensor(4.0)).item())
    loss_sum, count = supervised_cross_entropy(logits, torch.full((2, 3), IGNORE_INDEX))
    assert count == 0 and float(loss_sum) == 0.0
