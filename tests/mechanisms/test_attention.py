"""Sliding-window and causal attention against a direct masked-softmax reference."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms import CausalAttention, SlidingWindowAttention
from swar_bench.mechanisms.attention import AttentionMixer, rotary


def reference_attention(mixer, x, window):
    """Softmax over an explicit [T, T] band mask, no cache."""
    B, T, _ = x.shape
    H, D = mixer.n_heads, mixer.head_dim
    q, k, v = mixer.qkv_proj(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    pos = torch.arange(T).expand(B, T)
    q, k = rotary(q, pos), rotary(k, pos)
    scores = q @ k.transpose(-1, -2) / D**0.5
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = j <= i if window is None else (j <= i) & (j >= i - window)
    probs = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    return mixer.o_proj((probs @ v).transpose(1, 2).reshape(B, T, H * D))


@pytest.mark.parametrize("window", [None, 1, 5, 64])
def test_mixer_matches_direct_masked_softmax_in_chunks(window):
    torch.manual_seed(0)
    mixer = AttentionMixer(16, 2, window)
    x = torch.randn(2, 30, 16)
    with torch.no_grad():
        ref = reference_attention(mixer, x, window)
        state = mixer.init_state(2)
        outs = []
        for a, b in ((0, 3), (3, 4), (4, 17), (17, 30)):
            y, state = mixer(x[:, a:b], state)
            outs.append(y)
    assert (torch.cat(outs, 1) - ref).abs().max().item() <= 1e-5


def test_long_chunks_use_query_blocks_exactly():
    torch.manual_seed(0)
    mixer = AttentionMixer(16, 2, window=300)
    x = torch.randn(1, 700, 16)  # > 2 query blocks of 256
    with torch.no_grad():
        y, state = mixer(x, mixer.init_state(1))
        ref = reference_attention(mixer, x, 300)
    assert (y - ref).abs().max().item() <= 1e-5
    assert state[2].tolist() == [700]
    assert state[0].shape == (1, 2, 300, 8)


def test_rotary_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)

    def score(m, n):
        return (rotary(q, torch.tensor([[m]])) * rotary(k, torch.tensor([[n]]))).sum().item()

    assert score(10, 7) == pytest.approx(score(1003, 1000), abs=1e-4)
    assert rotary(q, torch.tensor([[5]])).norm().item() == pytest.approx(q.norm().item(), rel=1e-6)


def test_window_and_heads_are_validated():
    with pytest.raises(ValueError, match="window"):
        SlidingWindowAttention(window=0)
    with pytest.raises(ValueError, match="must be even"):
        CausalAttention(d_model=12, n_heads=4)


def test_rotary_one_row_of_positions_is_every_row_exactly():
    torch.manual_seed(0)
    x = torch.randn(3, 2, 7, 8)
    row = 5 + torch.arange(7)[None]
    assert torch.equal(rotary(x, row), rotary(x, row.expand(3, 7)))


def real_rotary(x, positions, base=10000.0):
    """RoFormer eq. 34 in its real form (the previous implementation)."""
    D = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float32) / D)
    angles = positions.to(torch.float32).unsqueeze(-1) * inv_freq
    cos, sin = angles.cos().unsqueeze(1), angles.sin().unsqueeze(1)
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2).to(x.dtype)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 30), half=st.integers(1, 8), start=st.integers(0, 5000),
       strided=st.booleans(), seed=st.integers(0, 2**16))
def test_rotary_complex_product_equals_the_real_form(B, T, half, start, strided, seed):
    torch.manual_seed(seed)
    D = 2 * half
    x = torch.randn(B, T, 3, 2, D).permute(2, 0, 3, 1, 4)[1] if strided else torch.randn(B, 2, T, D)
    x.requires_grad_(True)
    positions = start + torch.arange(T).expand(B, T)
    out, ref = rotary(x, positions), real_rotary(x, positions)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-5)
    g = torch.randn_like(out)
    torch.testing.assert_close(torch.autograd.grad(out, x, g)[0], torch.autograd.grad(ref, x, g)[0],
                               rtol=1e-6, atol=1e-5)
    half_precision = x.detach().to(torch.bfloat16)
    assert rotary(half_precision, positions).dtype == torch.bfloat16


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3), T=st.integers(1, 40), heads=st.sampled_from([1, 2]),
    cut=st.integers(0, 40), seed=st.integers(0, 2**16),
)
def test_full_attention_forward_and_gradients_match_the_reference(B, T, heads, cut, seed):
    """The property behind the causal fast path (one row of positions, no join with an empty
    cache, SDPA's is_causal on the first block): outputs and gradients equal the explicit
    masked softmax, whether the sequence comes in one chunk or two."""
    torch.manual_seed(seed)
    mixer = AttentionMixer(8 * heads, heads, None)
    x = torch.randn(B, T, 8 * heads, requires_grad=True)
    ref = reference_attention(mixer, x, None)
    ref_grads = torch.autograd.grad(ref.square().sum(), [x, *mixer.parameters()])
    state = mixer.init_state(B)
    cut = min(cut, T)
    outs = []
    for a, b in ((0, cut), (cut, T)):
        if b > a:
            y, state = mixer(x[:, a:b], state)
            outs.append(y)
    out = torch.cat(outs, 1)
    grads = torch.autograd.grad(out.square().sum(), [x, *mixer.parameters()])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)
