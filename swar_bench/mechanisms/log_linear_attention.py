"""Log-linear attention (Guo et al., 2025, "Log-Linear Attention"): a Fenwick tree of
``bit_length(T)`` linear-attention states, each read with a data-dependent weight per level
(``ops.log_linear_attention``). Its state grows as ``log2 T``: ``fixed_size_state = False``.

The layer is log-linear Mamba-2 (the paper's section 3.2: Mamba-2's scalar decay, the Fenwick
readout) in Gated DeltaNet's layout: q, k, v projections -> short causal convolution + SiLU ->
L2-normalised q, k; per head the log decay ``g = -exp(A_log) * softplus(W_a x + dt_bias)`` and
the level weights ``lambda = softplus(W_lambda x)`` (one per level); per-head RMSNorm gated by
``SiLU(W_gate x)``; output projection.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from swar_bench.mechanisms.base import (
    Mixer,
    MixerLM,
    check_conv_size,
    check_positive_int,
    check_sizes,
    dtype_bytes,
    short_convolution,
)
from swar_bench.mechanisms.delta_net import check_heads
from swar_bench.mechanisms.ops.backend import check_mode
from swar_bench.mechanisms.ops.log_linear_attention import log_linear_attention


class LogLinearAttentionMixer(Mixer):
    """One log-linear attention layer; state ``(conv [B, 3 * d_model, conv_size - 1],
    levels [B, n_heads, bit_length(p), head_dim, head_dim], position [B] int64)`` after ``p``
    tokens.

    Args:
        d_model: width; n_heads: heads (must divide d_model); n_levels: level weights per head,
        enough for ``2^(n_levels - 1)`` tokens per stream; conv_size: tokens (0 = no
        convolution, q/k/v SiLU'd); chunk_size (a power of two), mode: see
        ``ops.log_linear_attention.log_linear_attention``; flops_seq_len: tokens at which
        ``state_flops_per_token`` is reported.

    Raises:
        ValueError: on bad sizes or mode; in ``forward``, when a stream passes
            ``2^(n_levels - 1)`` tokens.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        n_levels: int = 20,
        conv_size: int = 4,
        chunk_size: int = 16,
        mode: str = "auto",
        flops_seq_len: int = 1024,
    ):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = check_heads(d_model, n_heads)
        self.n_levels = check_positive_int("n_levels", n_levels)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        if chunk_size & (chunk_size - 1):
            raise ValueError(f"chunk_size must be a power of two, got {chunk_size}")
        self.mode = check_mode(mode)
        self.flops_seq_len = check_positive_int("flops_seq_len", flops_seq_len)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.conv = short_convolution(3 * d_model, conv_size, activation=True)
        self.a_proj = nn.Linear(d_model, n_heads, bias=False)
        self.level_proj = nn.Linear(d_model, n_heads * n_levels, bias=False)
        self.gate_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_norm = nn.RMSNorm(self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        # Mamba-2 initialisation: A ~ U(1, 16), dt ~ logU(1e-3, 1e-1).
        self.A_log = nn.Parameter(torch.log(torch.empty(n_heads).uniform_(1.0, 16.0)))
        dt = torch.exp(torch.rand(n_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
        for p in (self.A_log, self.dt_bias):  # mamba_ssm / fla: no weight decay on the decay
            p._no_weight_decay = True

    @property
    def max_tokens(self) -> int:
        """Tokens a stream may reach: ``2^(n_levels - 1)``."""
        return 2 ** (self.n_levels - 1)

    def init_state(self, batch_size, device=None, dtype=None):
        H, D = self.n_heads, self.head_dim
        levels = torch.zeros(batch_size, H, 0, D, D, device=device, dtype=dtype)
        position = torch.zeros(batch_size, dtype=torch.int64, device=device)
        return self.conv.init_state(batch_size, device, dtype), levels, position

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        levels = batch_size * self.n_heads * seq_len.bit_length() * self.head_dim**2
        return (
            self.conv.state_bytes(batch_size, dtype) + levels * dtype_bytes(dtype) + 8 * batch_size
        )

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head with L = bit_length(T) levels: decay them (L KV), write k v^T (2KV), read all
        # levels with their weights (2 (L + 1) KV), merge (about one KV add per token)
        L = (seq_len or self.flops_seq_len).bit_length()
        return self.conv.flops_per_token() + self.n_heads * (3.0 * L + 5.0) * self.head_dim**2

    def forward(self, x, state):
        conv_state, levels, position = state
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        if position.numel() and int(position.max()) + T > self.max_tokens:
            raise ValueError(
                f"LogLinearAttention with n_levels={self.n_levels} streams at most "
                f"{self.max_tokens:,} tokens; this call reaches {int(position.max()) + T:,} "
                "(raise n_levels)"
            )
        qkv, conv_state = self.conv(self.qkv_proj(x), conv_state)
        q, k, v = qkv.view(B, T, 3, H, D).unbind(2)
        q = nn.functional.normalize(q, dim=-1)
        k = nn.functional.normalize(k, dim=-1)
        g = -self.A_log.exp() * nn.functional.softplus(self.a_proj(x).float() + self.dt_bias)
        lam = nn.functional.softplus(self.level_proj(x).float()).view(B, T, H, self.n_levels)
        o, (new_levels, new_position) = log_linear_attention(
            q,
            k,
            v,
            g,
            lam,
            scale=D**-0.5,
            initial_state=(levels, position),
            mode=self.mode,
            chunk_size=self.chunk_size,
        )
        o = self.o_norm(o) * nn.functional.silu(self.gate_proj(x)).view(B, T, H, D)
        new_state = (conv_state, new_levels.to(levels.dtype), new_position)
        return self.o_proj(o.reshape(B, T, H * D)), new_state


class LogLinearAttention(MixerLM):
    """Backbone with log-linear attention layers (Guo et al., 2025). The state GROWS as
    ``log2 T`` (``fixed_size_state = False``): after T tokens, per layer,
    ``n_heads * bit_length(T) * head_dim^2`` level floats + ``3 * d_model * (conv_size - 1)``
    conv floats + one int64 position per sequence. ``state_bytes(batch_size, seq_len=T)``
    reports it; ``flops_per_token`` is taken at ``flops_seq_len`` tokens.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads, n_levels,
        conv_size, chunk_size, mode, flops_seq_len: as in ``LogLinearAttentionMixer``.

    Raises:
        ValueError: on bad sizes or mode.
    """

    fixed_size_state = False

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        n_levels: int = 20,
        conv_size: int = 4,
        chunk_size: int = 16,
        mode: str = "auto",
        flops_seq_len: int = 1024,
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            n_levels=n_levels, chunk_size=chunk_size,
            flops_seq_len=flops_seq_len, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: LogLinearAttentionMixer(
                d_model, n_heads, n_levels, conv_size, chunk_size, mode, flops_seq_len
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
