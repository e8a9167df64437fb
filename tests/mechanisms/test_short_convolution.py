"""ShortConvolution (shifted multiply-adds on [B, T, C]) against the transposed ``conv1d`` it
replaced: equal outputs, states and gradients within float32 rounding, for any shape and any split
of a sequence into streamed chunks."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from swar_bench.mechanisms import ShortConvolution


def conv1d_reference(conv: ShortConvolution, x: torch.Tensor, state: torch.Tensor):
    """The former implementation: ``conv1d`` over ``[state, x^T]`` (fla's ShortConvolution layout)."""
    xt = torch.cat([state.to(x.dtype), x.transpose(1, 2)], dim=-1)
    y = nn.functional.conv1d(xt, conv.weight.to(x.dtype), groups=conv.channels)
    new_state = xt[..., xt.shape[-1] - (conv.kernel_size - 1) :].to(state.dtype).clone()
    y = y.transpose(1, 2)
    return (nn.functional.silu(y) if conv.activation else y), new_state


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item() if a.numel() else 0.0


def conv_case(batch: int, channels: int, kernel: int, cuts: list[int], activation: bool, seed: int):
    """``(conv, x, state0)`` after ``torch.manual_seed(seed)``: a ``ShortConvolution(channels,
    kernel)``, an input ``[batch, sum(cuts), channels]`` and an initial state ``[batch, channels,
    kernel - 1]``, both float32 and requiring grad."""
    torch.manual_seed(seed)
    conv = ShortConvolution(channels, kernel, activation=activation)
    x = torch.randn(batch, sum(cuts), channels, requires_grad=True)
    state0 = torch.randn(batch, channels, kernel - 1, requires_grad=True)
    return conv, x, state0


def stream_both(conv, reference, x, state0, cuts, check=None):
    """``x`` streamed in chunks of lengths ``cuts`` through ``conv`` and through ``reference(chunk,
    state) -> (y, new_state)``, each carrying its own state from ``state0``; ``check(chunk, y,
    state, r, state_ref)`` after each chunk. Returns ``(y, state, r, state_ref)``, the outputs
    concatenated over time."""
    ys, rs, s, s_ref, start = [], [], state0, state0, 0
    for n in cuts:
        chunk = x[:, start : start + n]
        y, s = conv(chunk, s)
        r, s_ref = reference(chunk, s_ref)
        if check is not None:
            check(chunk, y, s, r, s_ref)
        ys.append(y)
        rs.append(r)
        start += n
    return torch.cat(ys, 1), s, torch.cat(rs, 1), s_ref


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    channels=st.integers(1, 17),
    kernel=st.integers(1, 5),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    activation=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_equals_conv1d_for_any_shape_and_chunk_split(
    batch, channels, kernel, cuts, activation, seed
):
    conv, x, state0 = conv_case(batch, channels, kernel, cuts, activation, seed)

    def check(chunk, y, s_new, r, s_ref):
        assert y.shape == r.shape == chunk.shape and s_new.shape == s_ref.shape == state0.shape
        assert s_new.is_contiguous() and s_new._base is None

    reference = lambda chunk, state: conv1d_reference(conv, chunk, state)
    y, s_new, r, s_ref = stream_both(conv, reference, x, state0, cuts, check)
    assert _max_abs(y, r) <= 1e-6
    assert _max_abs(s_new, s_ref) <= 1e-6
    cot = torch.randn_like(y)
    inputs = (x, state0, conv.weight)
    # kernel 1: the state is empty and may take no part in the graph (a zero gradient)
    grads = torch.autograd.grad((y * cot).sum() + s_new.sum(), inputs, allow_unused=True)
    grads_ref = torch.autograd.grad((r * cot).sum() + s_ref.sum(), inputs, allow_unused=True)
    for g, gr, t in zip(grads, grads_ref, inputs):
        g = torch.zeros_like(t) if g is None else g
        gr = torch.zeros_like(t) if gr is None else gr
        assert _max_abs(g, gr) <= 1e-5 * max(1.0, _max_abs(gr, torch.zeros_like(gr)))


def test_streamed_chunks_equal_one_call():
    torch.manual_seed(0)
    conv = ShortConvolution(8, 4)
    x = torch.randn(2, 11, 8)
    y_all, s_all = conv(x, conv.init_state(2))
    s = conv.init_state(2)
    parts = []
    for a, b in [(0, 1), (1, 4), (4, 11)]:
        y, s = conv(x[:, a:b], s)
        parts.append(y)
    assert torch.equal(s, s_all)
    assert _max_abs(torch.cat(parts, 1), y_all) <= 1e-6
    assert torch.equal(s_all, x[:, -3:].transpose(1, 2))


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_output_follows_the_input_dtype_and_state_keeps_its_own(dtype):
    conv = ShortConvolution(4, 3)
    y, s = conv(torch.randn(1, 5, 4, dtype=dtype), conv.init_state(1, dtype=torch.float32))
    assert y.dtype == dtype and s.dtype == torch.float32
