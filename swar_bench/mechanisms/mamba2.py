"""Mamba-2 (Dao & Gu, 2024, "Transformers are SSMs: Generalized Models and Efficient Algorithms
Through Structured State Space Duality").

The SSD layer, as in the paper's Figure 6 / ``mamba_ssm``'s ``Mamba2`` with one B/C group:
``in_proj(x) -> (z, x, B, C, dt)``; short causal conv + SiLU over ``(x, B, C)``;
``dt = softplus(dt + dt_bias)``, ``A = -exp(A_log)`` per head; the scalar-decay recurrence

    h_t = exp(A dt_t) h_{t-1} + dt_t B_t x_t^T       h: [d_state, head_dim] per head
    y_t = C_t^T h_t + D x_t

(run as ``simple_gla`` with ``q = C``, ``k = dt * B``, ``v = x``, ``g = A dt``, scale 1); then
``RMSNorm(y * SiLU(z))`` and ``out_proj``. The state expansion is ``d_state``.
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
from swar_bench.mechanisms.ops.simple_gla import simple_gla


def ssd(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mamba-2's SSD recurrence with one B/C group (Dao & Gu, 2024, section 3 / Listing 1)::

        h_t = exp(A dt_t) h_{t-1} + dt_t B_t x_t^T       h: [d_state, head_dim] per head
        y_t = C_t^T h_t

    run as ``simple_gla`` (``q = C``, ``k = dt * B``, ``v = x``, ``g = A * dt``, scale 1), so the
    chunk form inherits its numerics: any ``dt >= 0`` and any mix within a chunk (``dt`` of 1e-6
    next to 50, a decay of ``exp(-800)``) is within 2e-5 relative of a float64 recurrence.

    Args:
        x: ``[B, T, H, P]`` inputs per head (P = head_dim).
        dt: ``[B, T, H]`` step sizes (>= 0, after softplus), float32.
        A: ``[H]`` negative decay rates (``-exp(A_log)``).
        B, C: ``[B, T, N]`` input / output projections of the state (N = d_state).
        initial_state: ``[B, H, N, P]`` or None (zeros).
        mode, chunk_size, backend: see ``ops.simple_gla.simple_gla``.

    Returns:
        ``(y [B, T, H, P]`` in ``x``'s dtype, without the ``D x`` skip; ``final_state [B, H, N, P]``
        float32``)``.

    Raises:
        ValueError: on inconsistent shapes, or a bad mode / backend.
    """
    batch, T, H, _ = x.shape
    if dt.shape != (batch, T, H) or B.shape[:2] != (batch, T) or C.shape != B.shape:
        raise ValueError(
            f"expected x [B, T, H, P], dt [B, T, H], B, C [B, T, N]; got x {tuple(x.shape)}, "
            f"dt {tuple(dt.shape)}, B {tuple(B.shape)}, C {tuple(C.shape)}"
        )
    k = (B.float().unsqueeze(2) * dt.unsqueeze(-1)).to(x.dtype)  # [B, T, H, N]
    q = C.unsqueeze(2).expand(batch, T, H, C.shape[-1])
    return simple_gla(
        q,
        k,
        x,
        A * dt,
        scale=1.0,
        initial_state=initial_state,
        mode=mode,
        chunk_size=chunk_size,
        backend=backend,
    )


class Mamba2Mixer(Mixer):
    """One SSD layer; state ``(conv [B, d_inner + 2 * d_state, conv_size - 1],
    ssm [B, n_heads, d_state, head_dim])`` with ``d_inner = expand * d_model``,
    ``n_heads = d_inner / head_dim``. ``n_layers`` (the model's blocks) sets the ``out_proj``
    rescaling of ``reset_parameters``.

    Raises:
        ValueError: when ``head_dim`` does not divide ``expand * d_model``, or on a bad mode / backend.
    """

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        head_dim: int = 32,
        expand: int = 2,
        conv_size: int = 4,
        chunk_size: int = 16,
        mode: str = "auto",
        backend: str = "auto",
        n_layers: int = 1,
    ):
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.d_inner = check_positive_int("expand", expand) * d_model
        self.d_state = check_positive_int("d_state", d_state)
        self.head_dim = check_positive_int("head_dim", head_dim)
        if self.d_inner % head_dim:
            raise ValueError(f"head_dim={head_dim} must divide expand * d_model = {self.d_inner}")
        self.n_heads = self.d_inner // head_dim
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner + 2 * d_state + self.n_heads, bias=False)
        self.conv = short_convolution(self.d_inner + 2 * d_state, conv_size, activation=True)
        # mamba_ssm initialisation: A ~ U(1, 16), dt ~ logU(1e-3, 1e-1), D = 1.
        self.A_log = nn.Parameter(torch.log(torch.empty(self.n_heads).uniform_(1.0, 16.0)))
        dt = torch.exp(torch.rand(self.n_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
        self.D = nn.Parameter(torch.ones(self.n_heads))
        self.norm = nn.RMSNorm(self.d_inner)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The authors' initialisation (state-spaces/mamba: ``mamba_ssm/modules/mamba2.py``
        ``Mamba2.__init__``, ``mamba_ssm/models/mixer_seq_simple.py`` ``_init_weights``):
        ``in_proj`` keeps PyTorch's ``nn.Linear`` default and the depthwise conv PyTorch's
        ``nn.Conv1d`` default (kaiming-uniform, ``a = sqrt(5)``), ``A ~ U(1, 16)`` per head
        (``A_log = log A``), ``dt_bias = softplus^-1(dt)`` with ``dt ~ logU(1e-3, 1e-1)`` floored at
        1e-4, ``D = 1``, the gated RMSNorm's weight 1, and ``out_proj`` kaiming-uniform divided by
        ``sqrt(2 * n_layers)`` (``rescale_prenorm_residual``, two residual branches per block).
        ``A_log``, ``D`` and ``dt_bias`` are flagged ``_no_weight_decay`` and ``_no_reinit``."""
        with torch.no_grad():
            self.in_proj.reset_parameters()
            conv_weight = getattr(self.conv, "weight", None)  # None when conv_size is 0
            if conv_weight is not None:
                nn.init.kaiming_uniform_(conv_weight, a=5**0.5)
            self.A_log.copy_(torch.log(torch.empty(self.n_heads).uniform_(1.0, 16.0)))
            dt = torch.exp(
                torch.rand(self.n_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)
            ).clamp(min=1e-4)
            self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
            self.D.fill_(1.0)
            self.norm.reset_parameters()
            nn.init.kaiming_uniform_(self.out_proj.weight, a=5**0.5)
            self.out_proj.weight /= math.sqrt(2 * self.n_layers)
        for p in (self.A_log, self.D, self.dt_bias):
            p._no_weight_decay = True
            p._no_reinit = True
        for p in (self.in_proj.weight, conv_weight, self.out_proj.weight):
            if p is not None:
                p._no_reinit = True

    def init_state(self, batch_size, device=None, dtype=None):
        ssm = torch.zeros(
            batch_size, self.n_heads, self.d_state, self.head_dim, device=device, dtype=dtype
        )
        return self.conv.init_state(batch_size, device, dtype), ssm

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        ssm = batch_size * self.n_heads * self.d_state * self.head_dim * dtype_bytes(dtype)
        return self.conv.state_bytes(batch_size, dtype) + ssm

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay (N*P), write dt B x^T (2NP), read C^T h (2NP), skip D x (2P)
        return self.conv.flops_per_token() + self.n_heads * (
            5.0 * self.d_state * self.head_dim + 2.0 * self.head_dim
        )

    def forward(self, x, state):
        conv_state, ssm = state
        B, T, _ = x.shape
        H, P, N = self.n_heads, self.head_dim, self.d_state
        z, xbc, dt = self.in_proj(x).split([self.d_inner, self.d_inner + 2 * N, H], dim=-1)
        xbc, conv_state = self.conv(xbc, conv_state)
        xs, b, c = xbc.split([self.d_inner, N, N], dim=-1)
        dt = nn.functional.softplus(dt.float() + self.dt_bias)  # [B, T, H]
        xs = xs.reshape(B, T, H, P)
        y, new_ssm = ssd(
            xs,
            dt,
            -self.A_log.exp(),
            b,
            c,
            initial_state=ssm,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        y = y + xs * self.D.view(1, 1, H, 1).to(xs.dtype)
        y = self.norm(y.reshape(B, T, H * P) * nn.functional.silu(z))
        return self.out_proj(y), (conv_state, new_ssm.to(ssm.dtype))


class Mamba2(MixerLM):
    """Backbone with Mamba-2 (SSD) mixers: data-dependent scalar decay per head, state expansion
    ``d_state``. Fixed-size state per layer: ``n_heads * d_state * head_dim`` SSM floats +
    ``(expand * d_model + 2 * d_state) * (conv_size - 1)`` conv floats.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``.
        d_state: state expansion N; head_dim: P; expand: d_inner / d_model; conv_size: tokens
            (0 = no convolution, x/B/C SiLU'd);
        chunk_size, mode, backend: see ``ops.simple_gla.simple_gla``.

    Raises:
        ValueError: on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        d_state: int = 16,
        head_dim: int = 32,
        expand: int = 2,
        conv_size: int = 4,
        chunk_size: int = 16,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, d_state=d_state,
            head_dim=head_dim, expand=expand, chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        if (expand * d_model) % head_dim:
            raise ValueError(
                f"head_dim={head_dim} must divide expand * d_model = {expand * d_model}"
            )
        super().__init__(
            lambda i: Mamba2Mixer(
                d_model, d_state, head_dim, expand, conv_size, chunk_size, mode, backend,
                n_layers=n_layers,
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
