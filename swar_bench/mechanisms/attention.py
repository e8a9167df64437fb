"""Softmax attention with an explicit KV cache: a sliding window (fixed-size state) and full causal
attention (the growing-state reference).

Multi-head attention (Vaswani et al., 2017) with rotary position embeddings (Su et al., 2021,
"RoFormer") applied before caching, so cached keys never need re-rotation. Queries are processed
in blocks so a long chunk never materialises a ``[T, T]`` score matrix.
"""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms.base import Mixer, MixerLM, check_positive_int, check_sizes, dtype_bytes
from swar_bench.mechanisms.delta_net import check_heads

QUERY_BLOCK = 256  # queries per scaled_dot_product_attention call (bounds the score matrix)


def rotary(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate ``x [B, H, T, D]`` (D even) by ``positions [B, T]`` or ``[1, T]`` (int64, tokens; a
    single row serves every sequence of the batch) as in RoFormer eq. 34, in float32; returns
    ``x``'s dtype.

    The pairs ``(x[2i], x[2i+1])`` are rotated by the angle ``position * base**(-2i / D)``:
    ``(x1 cos - x2 sin, x1 sin + x2 cos)``, computed as one complex product (RoFormer eq. 34's own
    form), which reads ``x`` once instead of as two strided halves; it equals the real form up to
    float rounding (tests/mechanisms/test_attention.py).
    """
    D = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    angles = positions.to(torch.float32).unsqueeze(-1) * inv_freq  # [B or 1, T, D/2]
    turn = torch.polar(torch.ones_like(angles), angles).unsqueeze(1)  # cos + i sin, [B or 1, 1, T, D/2]
    xf = x.float()
    if xf.stride(-1) != 1 or xf.storage_offset() % 2 or any(st % 2 for st in xf.stride()[:-1]):
        xf = xf.contiguous()  # view_as_complex needs (re, im) adjacent and even strides
    pairs = torch.view_as_complex(xf.unflatten(-1, (D // 2, 2)))
    return torch.view_as_real(pairs * turn).flatten(-2).to(x.dtype)


class AttentionMixer(Mixer):
    """Causal multi-head softmax attention over a KV cache.

    ``window=None``: full causal attention; state ``(k [B, H, L, D], v [B, H, L, D])`` with L the
    tokens seen (grows). ``window=W``: each token attends to itself and the W tokens before it;
    state ``(k [B, H, W, D], v [B, H, W, D], position [B] int64)`` holding the last W tokens (slots
    before the sequence start are masked out by position).

    Raises:
        ValueError: on bad sizes or an odd head dimension (rotary needs pairs).
    """

    def __init__(
        self, d_model: int, n_heads: int, window: int | None = None, flops_seq_len: int = 1024
    ):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = check_heads(d_model, n_heads)
        if self.head_dim % 2:
            raise ValueError(
                f"d_model / n_heads = {self.head_dim} must be even for rotary embeddings"
            )
        self.window = None if window is None else check_positive_int("window", window)
        self.flops_seq_len = check_positive_int("flops_seq_len", flops_seq_len)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def init_state(self, batch_size, device=None, dtype=None):
        L = 0 if self.window is None else self.window
        kv = torch.zeros(batch_size, self.n_heads, L, self.head_dim, device=device, dtype=dtype)
        if self.window is None:
            return kv, kv.clone()
        return kv, kv.clone(), torch.zeros(batch_size, dtype=torch.int64, device=device)

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        L = seq_len if self.window is None else self.window
        kv = 2 * batch_size * self.n_heads * L * self.head_dim * dtype_bytes(dtype)
        return kv if self.window is None else kv + 8 * batch_size

    def state_flops_per_token(self, seq_len=0) -> float:
        # scores q k^T and weighted sum over the attended keys: 4 * d_model FLOPs per key;
        # full attention: mean over a sequence of flops_seq_len tokens, (L + 1) / 2 keys.
        d_model = self.n_heads * self.head_dim
        keys = self.window + 1 if self.window is not None else (self.flops_seq_len + 1) / 2
        return 4.0 * d_model * keys

    def forward(self, x, state):
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        q, k, v = self.qkv_proj(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # 3 x [B, H, T, D]
        if self.window is None:
            k_cache, v_cache = state
            start = torch.full((B,), k_cache.shape[2], dtype=torch.int64, device=x.device)
        else:
            k_cache, v_cache, start = state
        L = k_cache.shape[2]
        if self.window is None:
            # full attention: every sequence of the batch has seen L tokens, so one row of
            # positions (and one mask) serves the whole batch
            start = start[:1]
        positions = start.unsqueeze(1) + torch.arange(T, device=x.device)  # [B or 1, T]
        q, k = rotary(q, positions), rotary(k, positions)
        if L:
            keys = torch.cat([k_cache.to(k.dtype), k], dim=2)  # [B, H, L + T, D]
            values = torch.cat([v_cache.to(v.dtype), v], dim=2)
        else:  # an empty cache (a full-attention sequence's first chunk): nothing to join
            keys, values = k, v
        key_pos = start.unsqueeze(1) - L + torch.arange(L + T, device=x.device)  # [B or 1, L + T]
        outs = []
        for s in range(0, T, QUERY_BLOCK):
            e = min(T, s + QUERY_BLOCK)
            # sliding window: query i sees concatenated keys [i, i + W]; full: all up to L + i
            lo = s if self.window is not None else 0
            hi = L + e
            if self.window is None and L == 0 and s == 0:
                # the plain causal mask of the first block: SDPA's is_causal skips the masked
                # blocks instead of reading a mask (the same softmax over the same keys)
                outs.append(
                    nn.functional.scaled_dot_product_attention(
                        q[:, :, s:e], keys[:, :, lo:hi], values[:, :, lo:hi], is_causal=True
                    )
                )
                continue
            qp = positions[:, s:e, None]
            kp = key_pos[:, None, lo:hi]
            mask = (kp <= qp) & (kp >= 0)
            if self.window is not None:
                mask &= kp >= qp - self.window
            outs.append(
                nn.functional.scaled_dot_product_attention(
                    q[:, :, s:e],
                    keys[:, :, lo:hi],
                    values[:, :, lo:hi],
                    attn_mask=mask.unsqueeze(1),
                )
            )
        o = torch.cat(outs, dim=2) if outs else q
        y = self.o_proj(o.transpose(1, 2).reshape(B, T, H * D))
        if self.window is None:
            # an empty cache was not joined: copy, so the state is no view of the projections
            return y, (keys.to(k_cache.dtype, copy=not L), values.to(v_cache.dtype, copy=not L))
        W = self.window
        new_state = (
            keys[:, :, -W:].to(k_cache.dtype).contiguous(),
            values[:, :, -W:].to(v_cache.dtype).contiguous(),
            start + T,
        )
        return y, new_state


class SlidingWindowAttention(MixerLM):
    """Backbone with sliding-window softmax attention (Beltagy et al., 2020, "Longformer"; the
    local attention of Mistral 7B): each token attends to itself and the ``window`` tokens before
    it. The state is the KV window: per layer ``2 * window * d_model`` floats + one int64 position
    per sequence, fixed size.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads: heads (d_model /
        n_heads even); window: tokens attended before the current one.

    Raises:
        ValueError: on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        window: int = 64,
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            window=window, mlp_ratio=mlp_ratio,
        )
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: AttentionMixer(d_model, n_heads, window),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )


class CausalAttention(MixerLM):
    """Backbone with full causal softmax attention and a growing KV cache: the reference that is
    NOT fixed-size (``fixed_size_state = False``).

    ``state_bytes(batch_size, seq_len=T)`` reports the cache after T tokens,
    ``2 * n_layers * T * d_model`` floats per sequence; ``state_bytes(batch_size)`` is the empty
    cache (0). ``flops_per_token`` is the mean over a sequence of ``flops_seq_len`` tokens.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads: heads (d_model /
        n_heads even); flops_seq_len: tokens at which ``flops_per_token`` is reported.

    Raises:
        ValueError: on bad sizes.
    """

    fixed_size_state = False

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        flops_seq_len: int = 1024,
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            flops_seq_len=flops_seq_len, mlp_ratio=mlp_ratio,
        )
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: AttentionMixer(d_model, n_heads, None, flops_seq_len),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
