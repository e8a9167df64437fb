"""Gated linear attention and HGRN2: linear attention with a data-dependent decay per key channel.

Both run the ``gla`` op (``S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T``, ``o_t = scale * S_t^T q_t``,
``S: [head_k_dim, head_v_dim]`` per head); they differ in where the decay and key come from.
Layer layouts as in the papers and fla's ``fla/layers/gla.py`` / ``fla/layers/hgrn2.py``.
"""

from __future__ import annotations

import torch
from torch import nn

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
from swar_bench.mechanisms.ops.backend import check_backend, check_mode
from swar_bench.mechanisms.ops.gla import gla


class GatedLinearAttentionMixer(Mixer):
    """One GLA layer (Yang et al., 2024, "Gated Linear Attention Transformers with
    Hardware-Efficient Training", section 4.4): ``q, k, v`` projections; the forget gate
    ``g = logsigmoid(W_2 W_1 x + b) / gate_logit_normalizer`` per key channel through a rank-16
    projection; ``gla`` with scale ``head_k_dim ** -0.5``; per-head RMSNorm gated by
    ``SiLU(W_g x)``; output projection. State: ``memory [B, n_heads, head_k_dim, head_v_dim]``
    with ``head_k_dim = expand_k * d_model / n_heads``, ``head_v_dim = expand_v * d_model / n_heads``;
    with ``conv_size > 0`` a short causal convolution + SiLU follows the q/k/v projections
    (fla's ``fla/layers/gla.py``, ``use_short_conv``) and the state is
    ``(conv [B, 2 * key_dim + value_dim, conv_size - 1], memory)``.

    Args:
        d_model: width; n_heads: heads; expand_k, expand_v: key / value width over d_model
            (fla's defaults 0.5 and 1); gate_low_rank_dim: rank of the gate projection (16);
        gate_logit_normalizer: divides the log gate (16, the paper's temperature);
        chunk_size: tokens per chunk of the chunk form (32: with per-channel decays a chunk is
            one factored matmul, measured fastest on CPU, docs/BENCHMARKS.md);
        mode, backend: see ``ops.gla.gla``.
        conv_size: short-convolution kernel (tokens); 0 = none (the default).

    Raises:
        ValueError: when ``n_heads`` does not divide the key and value widths, on a bad mode /
            backend, a non-positive size or a negative ``conv_size``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        expand_k: float = 0.5,
        expand_v: float = 1.0,
        gate_low_rank_dim: int = 16,
        gate_logit_normalizer: float = 16.0,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        conv_size: int = 0,
    ):
        super().__init__()
        self.key_dim, self.value_dim = int(d_model * expand_k), int(d_model * expand_v)
        check_positive_int("expand_k * d_model", self.key_dim)
        check_positive_int("expand_v * d_model", self.value_dim)
        self.n_heads = check_positive_int("n_heads", n_heads)
        if self.key_dim % n_heads or self.value_dim % n_heads:
            raise ValueError(
                f"n_heads={n_heads} must divide the key width {self.key_dim} (expand_k * d_model) "
                f"and the value width {self.value_dim} (expand_v * d_model)"
            )
        self.head_k_dim, self.head_v_dim = self.key_dim // n_heads, self.value_dim // n_heads
        if gate_logit_normalizer <= 0:
            raise ValueError(f"gate_logit_normalizer must be > 0, got {gate_logit_normalizer!r}")
        self.gate_logit_normalizer = float(gate_logit_normalizer)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        self.qkv_proj = nn.Linear(d_model, 2 * self.key_dim + self.value_dim, bias=False)
        self.conv = (
            ShortConvolution(2 * self.key_dim + self.value_dim, conv_size, activation=True)
            if check_conv_size(conv_size)
            else None
        )
        self.gk_proj = nn.Sequential(
            nn.Linear(d_model, check_positive_int("gate_low_rank_dim", gate_low_rank_dim), bias=False),
            nn.Linear(gate_low_rank_dim, self.key_dim, bias=True),
        )
        self.g_proj = nn.Linear(d_model, self.value_dim, bias=False)
        self.o_norm = nn.RMSNorm(self.head_v_dim)
        self.o_proj = nn.Linear(self.value_dim, d_model, bias=False)

    def init_state(self, batch_size, device=None, dtype=None):
        memory = torch.zeros(
            batch_size, self.n_heads, self.head_k_dim, self.head_v_dim, device=device, dtype=dtype
        )
        if self.conv is None:
            return memory
        return self.conv.init_state(batch_size, device, dtype), memory

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        memory = batch_size * self.n_heads * self.head_k_dim * self.head_v_dim * dtype_bytes(dtype)
        return memory + (0 if self.conv is None else self.conv.state_bytes(batch_size, dtype))

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (K*V), write k v^T (2KV), read S^T q (2KV)
        conv = 0.0 if self.conv is None else self.conv.flops_per_token()
        return conv + self.n_heads * 5.0 * self.head_k_dim * self.head_v_dim

    def forward(self, x, memory):
        B, T, _ = x.shape
        H = self.n_heads
        qkv = self.qkv_proj(x)
        if self.conv is not None:
            conv_state, memory = memory
            qkv, conv_state = self.conv(qkv, conv_state)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.value_dim], dim=-1)
        g = nn.functional.logsigmoid(self.gk_proj(x).float()) / self.gate_logit_normalizer
        o, new_memory = gla(
            q.view(B, T, H, -1),
            k.view(B, T, H, -1),
            v.view(B, T, H, -1),
            g.view(B, T, H, -1),
            initial_state=memory,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        o = self.o_norm(o) * nn.functional.silu(self.g_proj(x)).view(B, T, H, -1)
        out = self.o_proj(o.reshape(B, T, self.value_dim))
        if self.conv is None:
            return out, new_memory.to(memory.dtype)
        return out, (conv_state, new_memory.to(memory.dtype))


class HGRN2Mixer(Mixer):
    """One HGRN2 layer (Qin et al., 2024, "HGRN2: Gated Linear RNNs with State Expansion",
    section 3): ``q = SiLU(W_q x)``, forget gate ``f = lower_bound + (1 - lower_bound) *
    sigmoid(W_f x)``, input ``i = W_i x``; the key is tied to the forget gate, ``k = 1 - f``;
    ``gla`` with ``g = log f``, ``v = i`` and no scaling (scale 1); RMSNorm over the heads; output
    projection. State: ``memory [B, n_heads, head_dim, head_dim]``, ``head_dim = d_model / n_heads``
    (the paper's expansion ratio). With ``conv_size > 0`` a short causal convolution WITHOUT
    activation follows the q/f/i projections (fla's ``fla/layers/hgrn2.py``, ``use_short_conv``,
    ``activation=None``; q still gets its SiLU after it) and the state is
    ``(conv [B, 3 * d_model, conv_size - 1], memory)``.

    Attributes:
        lower_bound: the forget gate's floor ``[d_model]`` in [0, 1), or None (no floor, as in
            the first layer). ``HGRN2`` sets it before each call from its learned, depth-increasing
            lower bounds (HGRN's, Qin et al., 2023, section 3.2).

    Args:
        d_model: width; n_heads: heads; chunk_size, mode, backend: see ``ops.gla.gla``;
        conv_size: short-convolution kernel (tokens), 0 = none (the default).

    Raises:
        ValueError: when ``n_heads`` does not divide ``d_model``, on a bad mode / backend or a
            negative ``conv_size``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        conv_size: int = 0,
    ):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, check_heads(d_model, n_heads)
        self.lower_bound: torch.Tensor | None = None
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        self.qfi_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.conv = (
            ShortConvolution(3 * d_model, conv_size, activation=False)
            if check_conv_size(conv_size)
            else None
        )
        self.o_norm = nn.RMSNorm(d_model)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def init_state(self, batch_size, device=None, dtype=None):
        memory = torch.zeros(
            batch_size, self.n_heads, self.head_dim, self.head_dim, device=device, dtype=dtype
        )
        if self.conv is None:
            return memory
        return self.conv.init_state(batch_size, device, dtype), memory

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        memory = batch_size * self.n_heads * self.head_dim**2 * dtype_bytes(dtype)
        return memory + (0 if self.conv is None else self.conv.state_bytes(batch_size, dtype))

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (K*V), write k v^T (2KV), read S^T q (2KV)
        conv = 0.0 if self.conv is None else self.conv.flops_per_token()
        return conv + self.n_heads * 5.0 * self.head_dim**2

    def forward(self, x, memory):
        B, T, D = x.shape
        qfi = self.qfi_proj(x)
        if self.conv is not None:
            conv_state, memory = memory
            qfi, conv_state = self.conv(qfi, conv_state)
        q, f, i = qfi.split(D, dim=-1)
        f = f.float()
        if self.lower_bound is not None:
            lower_bound = self.lower_bound.float()
            forget = lower_bound + (1.0 - lower_bound) * torch.sigmoid(f)
            g, k = forget.log(), 1.0 - forget
        else:  # log sigmoid(f) and 1 - sigmoid(f) = sigmoid(-f), exact for large |f|
            g, k = nn.functional.logsigmoid(f), torch.sigmoid(-f)
        shape = (B, T, self.n_heads, self.head_dim)
        o, new_memory = gla(
            nn.functional.silu(q).view(shape),
            k.to(q.dtype).view(shape),
            i.reshape(shape),
            g.view(shape),
            scale=1.0,
            initial_state=memory,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        out = self.o_proj(self.o_norm(o.reshape(B, T, D)))
        if self.conv is None:
            return out, new_memory.to(memory.dtype)
        return out, (conv_state, new_memory.to(memory.dtype))


class GatedLinearAttention(MixerLM):
    """Backbone with GLA mixers (Yang et al., 2024): a data-dependent forget gate per key channel.
    Fixed-size state per layer: ``n_heads * head_k_dim * head_v_dim`` floats, plus
    ``(2 * key_dim + value_dim) * (conv_size - 1)`` with the short convolution (off by default).

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, expand_k,
    expand_v, gate_low_rank_dim, gate_logit_normalizer, chunk_size, mode, backend, conv_size as
    in ``GatedLinearAttentionMixer``. Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        expand_k: float = 0.5,
        expand_v: float = 1.0,
        gate_low_rank_dim: int = 16,
        gate_logit_normalizer: float = 16.0,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
        conv_size: int = 0,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            gate_low_rank_dim=gate_low_rank_dim, chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        super().__init__(
            lambda i: GatedLinearAttentionMixer(
                d_model,
                n_heads,
                expand_k,
                expand_v,
                gate_low_rank_dim,
                gate_logit_normalizer,
                chunk_size,
                mode,
                backend,
                conv_size,
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )


class HGRN2(MixerLM):
    """Backbone with HGRN2 mixers (Qin et al., 2024): gated linear RNN with outer-product state
    expansion, key tied to the forget gate. The forget gates have learned lower bounds that
    increase with depth, one per channel and layer (HGRN, Qin et al., 2023, section 3.2; fla's
    ``HGRN2Model``): ``lower_bounds [n_layers, d_model]`` (zeros at start), and layer ``i`` gets
    ``cumsum(softmax(lower_bounds, 0))[i] - softmax(lower_bounds, 0)[0]``, so the first layer
    has none and the bounds stay in [0, 1). Fixed-size state per layer: ``n_heads * head_dim^2``
    floats, plus ``3 * d_model * (conv_size - 1)`` with the short convolution (off by default).

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, chunk_size,
    mode, backend, conv_size as in ``HGRN2Mixer``. Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
        conv_size: int = 0,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: HGRN2Mixer(d_model, n_heads, chunk_size, mode, backend, conv_size),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
        self.lower_bounds = nn.Parameter(torch.zeros(n_layers, d_model))
        self._n_params += self.lower_bounds.numel()

    def layer_lower_bounds(self) -> torch.Tensor:
        """The forget-gate floors ``[n_layers, d_model]`` in [0, 1); row 0 is zero."""
        weights = self.lower_bounds.softmax(0)
        return weights.cumsum(0) - weights[0]

    def forward_features(self, input_ids: torch.Tensor, state=None):
        """As ``MixerLM.forward_features`` (so ``forward`` too), with each layer's forget-gate
        floor set for the call (and cleared after it, so the model holds no graph between calls
        and can be deep-copied)."""
        for i, (block, bound) in enumerate(zip(self.blocks, self.layer_lower_bounds())):
            block.mixer.lower_bound = bound if i else None
        try:
            return super().forward_features(input_ids, state)
        finally:
            for block in self.blocks:
                block.mixer.lower_bound = None
