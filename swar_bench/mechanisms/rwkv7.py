"""RWKV-7 "Goose" (Peng et al., 2025, "RWKV-7 'Goose' with Expressive Dynamic State Evolution").

The time-mixing layer of the paper (section 4, eq. 3-19), as in fla's ``RWKV7Attention``:
token shift (each of r, w, k, v, a, g reads ``lerp(x_t, x_{t-1}, mu)``); receptance, key and value
projections; the vector decay ``w = exp(-e^{-1/2} sigmoid(w0 + LoRA_w))``; the in-context learning
rate ``a = sigmoid(a0 + LoRA_a)``; the removal key ``κ̂ = normalize(k * k_k)`` per head and the
replacement key ``k * lerp(1, a, k_a)``; the DPLR state update

    S_t = (diag(w_t) - κ̂_t (a_t κ̂_t)^T) S_{t-1} + k̃_t v_t^T,   o_t = S_t^T r_t   (scale 1)

then a per-head group norm, the bonus ``((r * k̃ * r_k).sum() v)`` per head, the output gate
``sigmoid(x W_g1) W_g2`` and the output projection. The backbone's MLP replaces RWKV's channel mix,
and the value residual across layers (``v_first``) is left out so each layer's state is its own.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from swar_bench.mechanisms.base import Mixer, MixerLM, check_positive_int, check_sizes, dtype_bytes
from swar_bench.mechanisms.delta_net import check_heads
from swar_bench.mechanisms.ops.backend import check_backend, check_mode
from swar_bench.mechanisms.ops.dplr_delta_rule import dplr_delta_rule

DECAY_SCALE = math.exp(-0.5)
"""``-log w <= e^{-1/2}``: RWKV-7's bound on the per-step decay (paper eq. 11)."""


class LowRank(nn.Module):
    """``x [.., d_model] -> act(x A) B + bias`` (RWKV-7's LoRA-style data-dependent terms)."""

    def __init__(self, d_model: int, rank: int, act, bias: bool):
        super().__init__()
        self.down = nn.Linear(d_model, check_positive_int("rank", rank), bias=False)
        self.up = nn.Linear(rank, d_model, bias=bias)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.act(self.down(x)))


class RWKV7Mixer(Mixer):
    """One RWKV-7 time-mixing layer; state ``(shift [B, d_model], wkv [B, n_heads, head_dim,
    head_dim])``: the previous token's input and the DPLR memory.

    Args:
        d_model: width; n_heads: heads (must divide d_model); decay_rank, a_rank, gate_rank:
        LoRA ranks of w, a and the output gate; chunk_size, mode, backend: see
        ``ops.dplr_delta_rule.dplr_delta_rule``; layer_idx, n_layers: this layer's index and the
        model's blocks (the official per-layer initialisation, ``reset_parameters``).

    Raises:
        ValueError: on bad sizes, mode or backend.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        decay_rank: int = 16,
        a_rank: int = 16,
        gate_rank: int = 16,
        chunk_size: int = 16,
        mode: str = "auto",
        backend: str = "auto",
        layer_idx: int = 0,
        n_layers: int = 1,
    ):
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        if not 0 <= layer_idx < n_layers:
            raise ValueError(f"layer_idx={layer_idx} is invalid; expected 0 <= layer_idx < n_layers={n_layers}")
        self.layer_idx = layer_idx
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim = check_heads(d_model, n_heads)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        # token-shift mixing for r, w, k, v, a, g
        self.mu = nn.Parameter(torch.linspace(0.2, 0.8, 6)[:, None].repeat(1, d_model))
        self.r_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w_lora = LowRank(d_model, decay_rank, torch.tanh, bias=False)
        self.a_lora = LowRank(d_model, a_rank, nn.Identity(), bias=False)
        self.g_lora = LowRank(d_model, gate_rank, torch.sigmoid, bias=False)
        # decay speeds spread over channels: w from ~0.9985 (long memory) to ~0.64 at init
        self.w0 = nn.Parameter(torch.linspace(-6.0, 1.0, self.head_dim).repeat(n_heads))
        self.a0 = nn.Parameter(torch.zeros(d_model))
        self.k_k = nn.Parameter(torch.full((d_model,), 0.85))
        self.k_a = nn.Parameter(torch.ones(d_model))
        self.r_k = nn.Parameter(torch.zeros(n_heads, self.head_dim))
        self.o_norm = nn.GroupNorm(n_heads, d_model, eps=self.head_dim * 1e-5)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The official RWKV-7 initialisation (BlinkDL/RWKV-LM ``RWKV-v7/train_temp/src/model.py``
        ``RWKV_Tmix_x070.__init__`` and ``generate_init_weight``; fla/layers/rwkv7.py
        ``RWKV7Attention._initialize_weights``), with ``C = d_model``, ``N = head_dim``,
        ``r01 = layer_idx / (n_layers - 1)`` (0 for one layer), ``r10 = 1 - layer_idx / n_layers``
        and ``c = [0, 1, ..., C - 1] / C``:

        - token shift ``mu`` for (r, w, k, v, a, g): ``1 - c ** (e * r10)``, ``e`` = 0.2, 0.9, 0.7,
          0.7, 0.9, 0.2;
        - ``w0 = -6 + 6 (n / (C - 1)) ** (1 + r01 ** 0.3) + 0.5 + 2.5 zigzag``,
          ``a0 = -0.19 + 0.3 zigzag + 0.4 linear``, ``k_k = 0.71 - 0.1 linear``, ``k_a = 1.02``,
          ``r_k = -0.04``, with ``linear = n / (C - 1) - 0.5`` and
          ``zigzag = z |z|``, ``z = ((n mod N) - (N - 1) / 2) / ((N - 1) / 2)``;
        - LoRAs: down projection 0, up projection orthogonal with gain
          ``0.1 * max(1, sqrt(rank / C))`` (``ortho_init(.., 0.1)``);
        - ``r_proj``, ``v_proj ~ U(+-0.5 / sqrt(C))``, ``k_proj ~ U(+-0.05 / sqrt(C))``,
          ``o_proj = 0``; the output GroupNorm's weight ``((1 + layer_idx) / n_layers) ** 0.7``,
          bias 0.

        The vector parameters are flagged ``_no_weight_decay`` (RWKV-LM decays only 2-D
        ``.weight`` matrices)."""
        C, N, L, i = self.d_model, self.head_dim, self.n_layers, self.layer_idx
        r01 = i / (L - 1) if L > 1 else 0.0
        r10 = 1.0 - i / L
        n = torch.arange(C, dtype=torch.float64)
        c = n / C
        linear = n / max(C - 1, 1) - 0.5
        half = max((N - 1) / 2, 0.5)
        z = ((n % N) - (N - 1) / 2) / half
        zigzag = z * z.abs()
        www = -6.0 + 6.0 * (n / max(C - 1, 1)) ** (1.0 + r01**0.3)
        with torch.no_grad():
            exps = torch.tensor([0.2, 0.9, 0.7, 0.7, 0.9, 0.2], dtype=torch.float64)
            self.mu.copy_(1.0 - c[None, :] ** (exps[:, None] * r10))
            self.w0.copy_(www + 0.5 + 2.5 * zigzag)
            self.a0.copy_(-0.19 + 0.3 * zigzag + 0.4 * linear)
            self.k_k.copy_(0.71 - 0.1 * linear)
            self.k_a.fill_(1.02)
            self.r_k.fill_(-0.04)
            for lora in (self.w_lora, self.a_lora, self.g_lora):
                nn.init.zeros_(lora.down.weight)
                rank = lora.up.weight.shape[1]
                nn.init.orthogonal_(lora.up.weight, gain=0.1 * max(1.0, math.sqrt(rank / C)))
                if lora.up.bias is not None:
                    nn.init.zeros_(lora.up.bias)
            self.r_proj.weight.uniform_(-0.5 / C**0.5, 0.5 / C**0.5)
            self.k_proj.weight.uniform_(-0.05 / C**0.5, 0.05 / C**0.5)
            self.v_proj.weight.uniform_(-0.5 / C**0.5, 0.5 / C**0.5)
            nn.init.zeros_(self.o_proj.weight)
            self.o_norm.weight.fill_(((1 + i) / L) ** 0.7)
            nn.init.zeros_(self.o_norm.bias)
        for p in (self.mu, self.w0, self.a0, self.k_k, self.k_a, self.r_k):
            p._no_weight_decay = True

    def init_state(self, batch_size, device=None, dtype=None):
        shift = torch.zeros(batch_size, self.d_model, device=device, dtype=dtype)
        wkv = torch.zeros(
            batch_size, self.n_heads, self.head_dim, self.head_dim, device=device, dtype=dtype
        )
        return shift, wkv

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return batch_size * (self.d_model + self.n_heads * self.head_dim**2) * dtype_bytes(dtype)

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (KV), low-rank read a^T S (2KV) and write b u^T (2KV), write k v^T (2KV),
        # read S^T r (2KV); token shift 6 lerps (3 d_model each)
        return self.n_heads * 9.0 * self.head_dim**2 + 18.0 * self.d_model

    def forward(self, x, state):
        shift, wkv = state
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        x_prev = torch.cat([shift.to(x.dtype)[:, None], x[:, :-1]], dim=1)
        xr, xw, xk, xv, xa, xg = (x + (x_prev - x) * mu for mu in self.mu.to(x.dtype))
        r = self.r_proj(xr).view(B, T, H, D)
        k = self.k_proj(xk)
        v = self.v_proj(xv).view(B, T, H, D)
        gk = -DECAY_SCALE * torch.sigmoid(self.w0 + self.w_lora(xw).float())
        a = torch.sigmoid(self.a0 + self.a_lora(xa))
        kk = nn.functional.normalize((k * self.k_k).view(B, T, H, D), dim=-1)
        k = (k * (1 + (a - 1) * self.k_a)).view(B, T, H, D)
        a = a.view(B, T, H, D)
        o, new_wkv = dplr_delta_rule(
            r,
            k,
            v,
            -kk,
            kk * a,
            gk.view(B, T, H, D),
            scale=1.0,
            initial_state=wkv,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        o = self.o_norm(o.reshape(B * T, H * D)).view(B, T, H, D)
        o = o + (r * k * self.r_k).sum(-1, keepdim=True) * v
        o = o.reshape(B, T, H * D) * self.g_lora(xg)
        new_shift = x[:, -1].to(shift.dtype).clone() if T else shift
        return self.o_proj(o), (new_shift, new_wkv.to(wkv.dtype))


class RWKV7(MixerLM):
    """Backbone with RWKV-7 time-mixing layers (Peng et al., 2025): per-channel data-dependent
    decay and a generalized delta rule with a vector in-context learning rate. Fixed-size state
    per layer: ``n_heads * head_dim^2`` memory + ``d_model`` token-shift floats.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads, decay_rank,
        a_rank, gate_rank, chunk_size, mode, backend: as in ``RWKV7Mixer``.

    Raises:
        ValueError: on bad sizes, mode or backend.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 2,
        decay_rank: int = 16,
        a_rank: int = 16,
        gate_rank: int = 16,
        chunk_size: int = 16,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            decay_rank=decay_rank, a_rank=a_rank, gate_rank=gate_rank, chunk_size=chunk_size,
            mlp_ratio=mlp_ratio,
        )
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: RWKV7Mixer(
                d_model, n_heads, decay_rank, a_rank, gate_rank, chunk_size, mode, backend,
                layer_idx=i, n_layers=n_layers,
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
