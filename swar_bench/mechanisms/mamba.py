"""Mamba (S6; Gu & Dao, 2023, "Mamba: Linear-Time Sequence Modeling with Selective State Spaces").

The Mamba block of the paper's Figure 3 / the authors' ``mamba_simple.Mamba`` (slow path):
``in_proj(x) -> (x, z)``; causal depthwise conv (with bias) + SiLU over ``x``;
``x_proj(x) -> (dt, B, C)`` with ``dt`` of rank ``dt_rank``; ``delta = softplus(W_dt dt + dt_bias)``
per channel; ``A = -exp(A_log)`` per channel and state; the selective scan

    h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t      h: [d_inner, d_state]
    y_t = C_t^T h_t + D x_t

(``ops.selective_scan``); ``y * SiLU(z)``; ``out_proj``. Unlike Mamba-2 the decay differs per
channel and state, so there is no matmul form.
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
from swar_bench.mechanisms.ops.backend import check_mode
from swar_bench.mechanisms.ops.selective_scan import selective_scan


class MambaMixer(Mixer):
    """One Mamba (S6) layer; state ``(conv [B, d_inner, conv_size - 1], ssm [B, d_inner, d_state])``
    with ``d_inner = expand * d_model``.

    Initialisation as the authors' (``reset_parameters``, which the backbone calls after its
    generic initialisation): ``A = -[1, ..., d_state]`` per channel (S4D-real), ``D = 1``,
    ``dt_bias`` the inverse softplus of ``dt ~ logU(1e-3, 1e-1)`` (floor 1e-4), ``W_dt`` uniform
    in ``+-dt_rank^-1/2``, PyTorch-default projections, ``out_proj`` rescaled by
    ``1 / sqrt(2 * n_layers)``; ``A_log``, ``D`` and ``dt_bias`` are not weight-decayed.

    Args:
        d_model: width; d_state: states per channel N; expand: d_inner / d_model;
        dt_rank: rank of the step projection (default ``ceil(d_model / 16)``); conv_size: tokens
            (0 = no convolution and no conv bias; the SiLU on x stays);
        chunk_size, mode: see ``ops.selective_scan.selective_scan``; n_layers: blocks of the
        model (the ``out_proj`` rescaling).

    Raises:
        ValueError: on a non-positive size or a bad mode.
    """

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 1,
        dt_rank: int | None = None,
        conv_size: int = 4,
        chunk_size: int = 64,
        mode: str = "auto",
        n_layers: int = 1,
    ):
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.d_inner = check_positive_int("expand", expand) * d_model
        self.d_state = check_positive_int("d_state", d_state)
        self.dt_rank = math.ceil(d_model / 16) if dt_rank is None else dt_rank
        check_positive_int("dt_rank", self.dt_rank)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode = check_mode(mode)
        D_in, N, R = self.d_inner, d_state, self.dt_rank
        self.in_proj = nn.Linear(d_model, 2 * D_in, bias=False)
        self.conv = short_convolution(D_in, conv_size, activation=False)
        self.conv_bias = (
            nn.Parameter(torch.empty(D_in).uniform_(-(conv_size**-0.5), conv_size**-0.5))
            if conv_size
            else None
        )
        self.x_proj = nn.Linear(D_in, R + 2 * N, bias=False)
        self.dt_proj_weight = nn.Parameter(torch.empty(D_in, R).uniform_(-(R**-0.5), R**-0.5))
        dt = torch.exp(torch.rand(D_in) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        dt = dt.clamp(min=1e-4)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(D_in, 1))
        self.D = nn.Parameter(torch.ones(D_in))
        self.out_proj = nn.Linear(D_in, d_model, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The authors' initialisation (state-spaces/mamba: ``mamba_ssm/modules/mamba_simple.py``
        ``Mamba.__init__``, ``mamba_ssm/models/mixer_seq_simple.py`` ``_init_weights``):
        ``in_proj`` / ``x_proj`` keep PyTorch's ``nn.Linear`` default (kaiming-uniform,
        ``a = sqrt(5)``), the depthwise conv and its bias PyTorch's ``nn.Conv1d`` default,
        ``W_dt ~ U(+-dt_rank^-1/2)``, ``dt_bias = softplus^-1(dt)`` with ``dt ~ logU(1e-3, 1e-1)``
        floored at 1e-4, ``A_log = log([1, ..., d_state])`` per channel, ``D = 1``, and ``out_proj``
        kaiming-uniform divided by ``sqrt(2 * n_layers)`` (``rescale_prenorm_residual`` with two
        residual branches per block, mixer and MLP). ``A_log``, ``D`` and ``dt_bias`` are flagged
        ``_no_weight_decay`` and ``_no_reinit``, as mamba_ssm flags them."""
        D_in, N, R = self.d_inner, self.d_state, self.dt_rank
        conv_weight = getattr(self.conv, "weight", None)  # None when conv_size is 0
        with torch.no_grad():
            self.in_proj.reset_parameters()
            self.x_proj.reset_parameters()
            if conv_weight is not None:
                k = self.conv.kernel_size
                nn.init.kaiming_uniform_(conv_weight, a=5**0.5)
                self.conv_bias.uniform_(-(k**-0.5), k**-0.5)
            self.dt_proj_weight.uniform_(-(R**-0.5), R**-0.5)
            dt = torch.exp(torch.rand(D_in) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            dt = dt.clamp(min=1e-4)
            self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
            self.A_log.copy_(torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(D_in, 1))
            self.D.fill_(1.0)
            nn.init.kaiming_uniform_(self.out_proj.weight, a=5**0.5)
            self.out_proj.weight /= math.sqrt(2 * self.n_layers)
        for p in (self.A_log, self.D, self.dt_bias):
            p._no_weight_decay = True
            p._no_reinit = True
        for p in (self.in_proj.weight, self.x_proj.weight, conv_weight, self.out_proj.weight):
            if p is not None:
                p._no_reinit = True

    def init_state(self, batch_size, device=None, dtype=None):
        ssm = torch.zeros(batch_size, self.d_inner, self.d_state, device=device, dtype=dtype)
        return self.conv.init_state(batch_size, device, dtype), ssm

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        ssm = batch_size * self.d_inner * self.d_state * dtype_bytes(dtype)
        return self.conv.state_bytes(batch_size, dtype) + ssm

    def state_flops_per_token(self, seq_len=0) -> float:
        # per channel and state: decay (1), write delta B x (2), read C^T h (2); skip D x (2 per channel)
        return self.conv.flops_per_token() + self.d_inner * (5.0 * self.d_state + 2.0)

    def forward(self, x, state):
        conv_state, ssm = state
        xs, z = self.in_proj(x).chunk(2, dim=-1)
        xs, conv_state = self.conv(xs, conv_state)
        if self.conv_bias is not None:
            xs = xs + self.conv_bias.to(xs.dtype)
        xs = nn.functional.silu(xs)  # with or without the conv, as mamba_ssm and fla
        dt, b, c = self.x_proj(xs).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = nn.functional.softplus(dt.float() @ self.dt_proj_weight.t() + self.dt_bias)
        y, new_ssm = selective_scan(
            xs,
            delta,
            -self.A_log.exp(),
            b,
            c,
            self.D,
            initial_state=ssm,
            mode=self.mode,
            chunk_size=self.chunk_size,
        )
        y = y * nn.functional.silu(z)
        return self.out_proj(y), (conv_state, new_ssm.to(ssm.dtype))


class Mamba(MixerLM):
    """Backbone with Mamba (S6) mixers: a selective diagonal state space per channel, ``d_state``
    states each. Fixed-size state per layer: ``d_inner * d_state`` SSM floats +
    ``d_inner * (conv_size - 1)`` conv floats, ``d_inner = expand * d_model``. The default
    ``expand=1`` (the paper's is 2) keeps the parameters within 15% of GatedDeltaNet's at
    d_model 64, since this backbone keeps an MLP in every block.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``;
        d_state, expand, dt_rank, conv_size, chunk_size, mode: as in ``MambaMixer``.

    Raises:
        ValueError: on bad sizes.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        d_state: int = 16,
        expand: int = 1,
        dt_rank: int | None = None,
        conv_size: int = 4,
        chunk_size: int = 64,
        mode: str = "auto",
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, d_state=d_state,
            expand=expand, chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        if dt_rank is not None:
            check_positive_int("dt_rank", dt_rank)
        super().__init__(
            lambda i: MambaMixer(
                d_model, d_state, expand, dt_rank, conv_size, chunk_size, mode, n_layers=n_layers
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
