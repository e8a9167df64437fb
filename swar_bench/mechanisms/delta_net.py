"""The delta-rule family: DeltaNet, Gated DeltaNet, Gated DeltaProduct and Kimi Delta Attention,
fast-weight memories written with the delta rule.

Layer layout as in the papers (and fla's ``fla/layers/delta_net.py``, ``gated_deltanet.py``,
``gated_deltaproduct.py``, ``kda.py``): q, k, v projections -> short causal convolution + SiLU ->
L2-normalised q, k -> ``beta = sigmoid(W_beta x)`` per head (and step) -> the delta rule, with
a decay per head (gated) or per key channel (KDA) -> per-head RMSNorm (gated by ``SiLU(W_gate x)``,
KDA: by ``sigmoid``) -> output projection.
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
from swar_bench.mechanisms.ops.backend import check_backend, check_mode
from swar_bench.mechanisms.ops.fused_backward import l2_normalize, rms_norm
from swar_bench.mechanisms.ops.gated_delta_product import gated_delta_product
from swar_bench.mechanisms.ops.gated_delta_rule import gated_delta_rule
from swar_bench.mechanisms.ops.kda import kda


def check_heads(d_model: int, n_heads: int) -> int:
    """Head width ``d_model // n_heads``; ValueError unless both are positive integers (each
    refused by its own name first) and ``n_heads`` divides ``d_model``."""
    check_sizes(d_model=d_model, n_heads=n_heads)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    return d_model // n_heads


def mamba_dt_init(
    n: int, a_low: float = 1.0, n_dt: int | None = None
) -> tuple[nn.Parameter, nn.Parameter]:
    """Mamba-2 style initialisation of a decay ``-exp(A_log) * softplus(. + dt_bias)``:
    ``A_log [n] = log U(a_low, 16)``, ``dt_bias [n_dt]`` (``n_dt = n`` when None) the inverse
    softplus of ``dt ~ logU(1e-3, 1e-1)`` floored at 1e-4; both flagged ``_no_weight_decay``.

    ``a_low`` is 0 for fla's ``GatedDeltaNet`` / ``GatedDeltaProduct`` layers
    (fla/layers/gated_deltanet.py, gated_deltaproduct.py: ``A.uniform_(0, 16)``) and 1 for
    Mamba-2 and fla's ``KimiDeltaAttention`` (fla/layers/kda.py: ``uniform_(1, 16)``)."""
    A_log = nn.Parameter(torch.log(torch.empty(n).uniform_(a_low, 16.0)))
    n_dt = n if n_dt is None else n_dt
    dt = torch.exp(torch.rand(n_dt) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
    dt = dt.clamp(min=1e-4)
    dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
    for p in (A_log, dt_bias):
        p._no_weight_decay = True
    return A_log, dt_bias


class DeltaRuleMixer(Mixer):
    """One (gated) delta-rule layer; state ``(conv [B, (1 + 2 n_householder) d_model, conv_size - 1],
    memory [B, n_heads, head_dim, head_dim])``.

    Args:
        d_model: width; n_heads: heads (must divide d_model).
        gated: Gated DeltaNet (data-dependent decay ``g = -exp(A_log) * softplus(W_a x + dt_bias)``,
            output gate) when True, plain DeltaNet (no decay, ungated output norm) when False.
        conv_size: short-convolution kernel (tokens); 0 = no convolution, the q/k/v projections
            SiLU'd instead (fla's ``use_short_conv=False``); the conv state is then ``[B, C, 0]``.
        chunk_size: chunk length of the chunk-parallel training form (tokens; delta-rule steps
            when ``n_householder > 1``).
        mode: "auto" / "chunk" / "recurrent", see ``ops.gated_delta_rule.gated_delta_rule``.
        backend: "auto" / "torch" / "fla".
        n_householder: delta-rule steps per token, each with its own key, value and beta
            (Gated DeltaProduct, ``ops.gated_delta_product``); 1 is the gated delta rule.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        gated: bool,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        n_householder: int = 1,
    ):
        super().__init__()
        self.d_model, self.n_heads, self.gated = d_model, n_heads, gated
        self.head_dim = check_heads(d_model, n_heads)
        self.n_householder = check_positive_int("n_householder", n_householder)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        width = (1 + 2 * n_householder) * d_model  # q, then each step's k, then each step's v
        self.qkv_proj = nn.Linear(d_model, width, bias=False)
        self.conv = short_convolution(width, conv_size, activation=True)
        self.beta_proj = nn.Linear(d_model, n_heads * n_householder, bias=False)
        self.o_norm = nn.RMSNorm(self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        if gated:
            self.a_proj = nn.Linear(d_model, n_heads, bias=False)
            self.gate_proj = nn.Linear(d_model, d_model, bias=False)
            self.A_log, self.dt_bias = mamba_dt_init(n_heads, a_low=0.0)

    def init_state(self, batch_size, device=None, dtype=None):
        memory = torch.zeros(
            batch_size, self.n_heads, self.head_dim, self.head_dim, device=device, dtype=dtype
        )
        return self.conv.init_state(batch_size, device, dtype), memory

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return self.conv.state_bytes(
            batch_size, dtype
        ) + batch_size * self.n_heads * self.head_dim**2 * dtype_bytes(dtype)

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (K*V), per step retrieve S^T k (2KV) and write k v^T (2KV), read S^T q (2KV)
        per_head = (3.0 + 4.0 * self.n_householder) * self.head_dim**2
        return self.conv.flops_per_token() + self.n_heads * per_head

    def forward(self, x, state):
        conv_state, memory = state
        B, T, _ = x.shape
        H, D, n_h = self.n_heads, self.head_dim, self.n_householder
        qkv, conv_state = self.conv(self.qkv_proj(x), conv_state)
        q, k, v = qkv.split([H * D, n_h * H * D, n_h * H * D], dim=-1)
        q = l2_normalize(q.view(B, T, H, D))
        # step j of token t is row t * n_h + j (fla's layout)
        k = l2_normalize(k.reshape(B, T * n_h, H, D))
        v = v.reshape(B, T * n_h, H, D)
        beta = torch.sigmoid(self.beta_proj(x)).view(B, T * n_h, H)
        if self.gated:
            g = -self.A_log.exp() * nn.functional.softplus(self.a_proj(x).float() + self.dt_bias)
        else:
            g = x.new_zeros(B, T, H, dtype=torch.float32)
        options = {
            "initial_state": memory,
            "mode": self.mode,
            "chunk_size": self.chunk_size,
            "backend": self.backend,
        }
        if n_h == 1:
            o, new_memory = gated_delta_rule(q, k, v, g, beta, **options)
        else:
            o, new_memory = gated_delta_product(q, k, v, g, beta, n_h, **options)
        o = rms_norm(o, self.o_norm)
        if self.gated:
            o = o * nn.functional.silu(self.gate_proj(x)).view(B, T, H, D)
        return self.o_proj(o.reshape(B, T, H * D)), (conv_state, new_memory.to(memory.dtype))


class DeltaNet(MixerLM):
    """Backbone with DeltaNet mixers: the delta rule without decay (Schlag, Irie & Schmidhuber,
    2021; chunk-parallel training from Yang et al., 2024, "Parallelizing Linear Transformers with
    the Delta Rule over Sequence Length"). Fixed-size state per layer:
    ``n_heads * head_dim^2`` memory + ``3 * d_model * (conv_size - 1)`` conv floats.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, conv_size,
    chunk_size, mode, backend as in ``DeltaRuleMixer``. Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: DeltaRuleMixer(d_model, n_heads, False, conv_size, chunk_size, mode, backend),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )


class GatedDeltaNet(MixerLM):
    """Backbone with Gated DeltaNet mixers (Yang, Kautz & Hatamizadeh, 2024, "Gated Delta
    Networks: Improving Mamba2 with Delta Rule"): per-head data-dependent decay
    ``alpha_t = exp(g_t)`` and write strength ``beta_t``, short convolutions, output gate and norm.
    Fixed-size state per layer: ``n_heads * head_dim^2`` memory + ``3 * d_model * (conv_size - 1)``
    conv floats.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, conv_size,
    chunk_size, mode, backend as in ``DeltaRuleMixer``. Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: DeltaRuleMixer(d_model, n_heads, True, conv_size, chunk_size, mode, backend),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )


class GatedDeltaProduct(MixerLM):
    """Backbone with Gated DeltaProduct mixers (Siems et al., 2025, "DeltaProduct: Improving
    State-Tracking in Linear RNNs via Householder Products"): Gated DeltaNet with
    ``n_householder`` delta-rule steps per token (own key, value and beta each), the decay applied
    once per token before them. Fixed-size state per layer: ``n_heads * head_dim^2`` memory +
    ``(1 + 2 n_householder) * d_model * (conv_size - 1)`` conv floats.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, conv_size,
    chunk_size (delta-rule steps), mode, backend, n_householder as in ``DeltaRuleMixer``. The
    default ``conv_size=3`` keeps the parameters within 15% of GatedDeltaNet's at d_model 64.
    Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        n_householder: int = 2,
        conv_size: int = 3,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            n_householder=n_householder, chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: DeltaRuleMixer(
                d_model, n_heads, True, conv_size, chunk_size, mode, backend, n_householder
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )


class KimiDeltaAttentionMixer(Mixer):
    """One Kimi Delta Attention layer (Kimi Team, 2025, "Kimi Linear", section 3 and fla's
    ``fla/layers/kda.py``): q, k, v projections -> short convolution + SiLU -> L2-normalised q, k;
    a decay per key channel ``g = -exp(A_log[h]) * softplus(W_f2 W_f1 x + dt_bias)`` through a
    rank-``head_dim`` projection; ``beta = sigmoid(W_b x)`` per head; the KDA delta rule; per-head
    RMSNorm gated by ``sigmoid(W_g2 W_g1 x + b)`` (also low rank); output projection.
    State: ``(conv [B, 3 * d_model, conv_size - 1], memory [B, n_heads, head_dim, head_dim])``.

    Args:
        d_model: width; n_heads: heads (must divide d_model); conv_size: tokens (0 = no
            convolution, q/k/v SiLU'd, fla's ``use_short_conv=False``);
        chunk_size: tokens per chunk of the WY form (32, as for ``GatedLinearAttention``);
        mode, backend: see ``ops.kda.kda``.

    Raises:
        ValueError: on bad sizes or a bad mode / backend.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
    ):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, check_heads(d_model, n_heads)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        D = self.head_dim
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.conv = short_convolution(3 * d_model, conv_size, activation=True)
        self.f_proj = nn.Sequential(
            nn.Linear(d_model, D, bias=False), nn.Linear(D, d_model, bias=False)
        )
        self.beta_proj = nn.Linear(d_model, n_heads, bias=False)
        self.A_log, self.dt_bias = mamba_dt_init(n_heads, a_low=1.0, n_dt=d_model)
        self.gate_proj = nn.Sequential(
            nn.Linear(d_model, D, bias=False), nn.Linear(D, d_model, bias=True)
        )
        self.o_norm = nn.RMSNorm(D)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def init_state(self, batch_size, device=None, dtype=None):
        memory = torch.zeros(
            batch_size, self.n_heads, self.head_dim, self.head_dim, device=device, dtype=dtype
        )
        return self.conv.init_state(batch_size, device, dtype), memory

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return self.conv.state_bytes(
            batch_size, dtype
        ) + batch_size * self.n_heads * self.head_dim**2 * dtype_bytes(dtype)

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (K*V), retrieve S^T k (2KV), write k v^T (2KV), read S^T q (2KV)
        return self.conv.flops_per_token() + self.n_heads * 7.0 * self.head_dim**2

    def forward(self, x, state):
        conv_state, memory = state
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        qkv, conv_state = self.conv(self.qkv_proj(x), conv_state)
        q, k, v = qkv.view(B, T, 3, H, D).unbind(2)
        q = l2_normalize(q)
        k = l2_normalize(k)
        f = nn.functional.softplus(self.f_proj(x).float() + self.dt_bias).view(B, T, H, D)
        g = -self.A_log.exp()[:, None] * f
        beta = torch.sigmoid(self.beta_proj(x))
        o, new_memory = kda(
            q,
            k,
            v,
            g,
            beta,
            initial_state=memory,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        o = rms_norm(o, self.o_norm) * torch.sigmoid(self.gate_proj(x)).view(B, T, H, D)
        return self.o_proj(o.reshape(B, T, H * D)), (conv_state, new_memory.to(memory.dtype))


class KimiDeltaAttention(MixerLM):
    """Backbone with Kimi Delta Attention mixers (Kimi Team, 2025, "Kimi Linear: An Expressive,
    Efficient Attention Architecture"): the gated delta rule with a data-dependent decay per key
    channel. Fixed-size state per layer: ``n_heads * head_dim^2`` memory +
    ``3 * d_model * (conv_size - 1)`` conv floats.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``; n_heads, conv_size,
    chunk_size, mode, backend as in ``KimiDeltaAttentionMixer``. Raises ValueError on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: KimiDeltaAttentionMixer(d_model, n_heads, conv_size, chunk_size, mode, backend),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
