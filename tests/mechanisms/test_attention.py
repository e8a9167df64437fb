"""Sliding-window and causal attention against a direct masked-softmax reference."""

import pytest
import torch

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
