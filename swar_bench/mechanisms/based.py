"""Based (Arora et al., 2024, "Simple linear attention language models balance the
recall-throughput tradeoff"): linear attention with a 2nd-order Taylor feature map, interleaved
with small sliding-window softmax attention (section 4: the two primitives, layers alternating).

The linear-attention layer is fla's ``BasedLinearAttention``: q and k projected to a small
``feature_dim`` per head, v to the head width, the Taylor map ``phi(x) = [1, x, vec(x x^T)/sqrt 2]``
on both (``ops.based``), normalised readout, output projection.
"""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms.attention import AttentionMixer
from swar_bench.mechanisms.base import (
    Mixer,
    MixerLM,
    ShortConvolution,
    check_conv_size,
    check_positive_int,
    check_sizes,
    dtype_bytes,
)
from swar_bench.mechanisms.delta_net import check_heads
from swar_bench.mechanisms.ops.backend import check_mode
from swar_bench.mechanisms.ops.based import based, feature_dim


class TaylorLinearAttentionMixer(Mixer):
    """Based's linear-attention layer; state ``[B, n_heads, 1 + f + f^2, head_dim + 1]`` with
    ``f = feature_dim`` (the memory ``sum phi(k) v^T`` with the normaliser ``sum phi(k)`` as its
    last column). With ``conv_size > 0`` a short causal convolution over the projected q, k, v
    channels (``2 n_heads f + d_model``) follows the projections, placed as in fla's
    ``fla/layers/gla.py``; fla's ``fla/layers/based.py`` has none, and no activation is added
    (the Taylor map is the nonlinearity; Based's own short conv, ``BaseConv``, has no SiLU
    either). The state is then ``(conv [B, 2 n_heads f + d_model, conv_size - 1], memory)``.

    Args:
        d_model: width; n_heads: heads (must divide d_model); feature_dim: q / k width per head;
        chunk_size, mode: see ``ops.based.based``; conv_size: tokens, 0 = none (the default).

    Raises:
        ValueError: on bad sizes, mode or a negative ``conv_size``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        feature_dim: int = 16,
        chunk_size: int = 64,
        mode: str = "auto",
        conv_size: int = 0,
    ):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = check_heads(d_model, n_heads)
        self.feature_dim = check_positive_int("feature_dim", feature_dim)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode = check_mode(mode)
        self.qk_proj = nn.Linear(d_model, 2 * n_heads * feature_dim, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.conv = (
            ShortConvolution(2 * n_heads * feature_dim + d_model, conv_size, activation=False)
            if check_conv_size(conv_size)
            else None
        )

    def init_state(self, batch_size, device=None, dtype=None):
        F = feature_dim(self.feature_dim)
        memory = torch.zeros(
            batch_size, self.n_heads, F, self.head_dim + 1, device=device, dtype=dtype
        )
        if self.conv is None:
            return memory
        return self.conv.init_state(batch_size, device, dtype), memory

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        F = feature_dim(self.feature_dim)
        memory = batch_size * self.n_heads * F * (self.head_dim + 1) * dtype_bytes(dtype)
        return memory + (0 if self.conv is None else self.conv.state_bytes(batch_size, dtype))

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: features of q and k (2 f^2 each), write phi(k) [v, 1]^T and read phi(q)^T S
        # (2 F (V + 1) each), the division (V)
        F = feature_dim(self.feature_dim)
        conv = 0.0 if self.conv is None else self.conv.flops_per_token()
        return conv + self.n_heads * (4.0 * self.feature_dim**2 + 4.0 * F * (self.head_dim + 1))

    def forward(self, x, state):
        B, T, _ = x.shape
        H = self.n_heads
        qk, v = self.qk_proj(x), self.v_proj(x)
        if self.conv is not None:
            conv_state, state = state
            qkv, conv_state = self.conv(torch.cat([qk, v], dim=-1), conv_state)
            qk, v = qkv.split([qk.shape[-1], v.shape[-1]], dim=-1)
        q, k = qk.view(B, T, 2, H, self.feature_dim).unbind(2)
        v = v.view(B, T, H, self.head_dim)
        o, new_state = based(
            q, k, v, initial_state=state, mode=self.mode, chunk_size=self.chunk_size
        )
        out = self.o_proj(o.reshape(B, T, -1))
        if self.conv is None:
            return out, new_state.to(state.dtype)
        return out, (conv_state, new_state.to(state.dtype))


class Based(MixerLM):
    """Backbone alternating Based's Taylor linear attention (even layers) and sliding-window
    softmax attention (odd layers; ``window`` tokens before each one, rotary positions). Fixed-size
    state: per linear layer ``n_heads (1 + f + f^2)(head_dim + 1)`` floats, per window layer
    ``2 * window * d_model`` floats and one int64 position; with ``conv_size > 0`` the linear
    layers add ``(2 n_heads f + d_model)(conv_size - 1)`` conv floats.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads: heads of both kinds
        of layer; feature_dim, chunk_size, mode: as in ``TaylorLinearAttentionMixer``; window:
        tokens attended before the current one in the window layers; conv_size: a short
        convolution in the linear layers, as in ``TaylorLinearAttentionMixer`` (0 = none).

    Raises:
        ValueError: on bad sizes, mode or a negative ``conv_size``.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        feature_dim: int = 16,
        window: int = 64,
        chunk_size: int = 64,
        mode: str = "auto",
        mlp_ratio: int = 4,
        conv_size: int = 0,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            feature_dim=feature_dim, window=window, chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_heads(d_model, n_heads)
        check_conv_size(conv_size)

        def mixer(i: int) -> Mixer:
            if i % 2:
                return AttentionMixer(d_model, n_heads, window)
            return TaylorLinearAttentionMixer(
                d_model, n_heads, feature_dim, chunk_size, mode, conv_size
            )

        super().__init__(mixer, vocab_size, d_model, n_layers, mlp_ratio)
