"""Linear attention with decays fixed in time: one scalar decay, and RetNet's multi-scale retention.

Both run the ``simple_gla`` op (``S_t = decay * S_{t-1} + k_t v_t^T``, ``o_t = q_t^T S_t``) with a
log decay that does not depend on the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
from swar_bench.mechanisms.ops.simple_gla import simple_gla


def retnet_decays(n_heads: int) -> list[float]:
    """RetNet's per-head decays ``1 - 2^(-5 - h)``, h = 0..n_heads-1 (Sun et al., 2023, eq. 8)."""
    return [1.0 - 2.0 ** (-5 - h) for h in range(n_heads)]


class DecayLinearAttentionMixer(Mixer):
    """Multi-head linear attention with one decay per head, constant in time.

    ``q, k, v`` projections -> (optionally) a short causal convolution + SiLU over the
    ``3 * d_model`` projected channels (fla's ``use_short_conv`` in ``fla/layers/simple_gla.py``
    and ``multiscale_retention.py``) -> ``simple_gla`` with ``g = log(decay)`` -> per-head RMSNorm
    (optionally gated by ``SiLU(W_gate x)``, RetNet's swish gate) -> output projection.
    State: ``memory [B, n_heads, head_dim, head_dim]`` without the convolution,
    ``(conv [B, 3 * d_model, conv_size - 1], memory)`` with it.

    Args:
        d_model: width; decays: one decay per head, each in (0, 1] (1 keeps everything for ever).
        learn_decay: learn the decays (parametrised as ``sigmoid(logit)``, so each must be < 1).
        output_gate: multiply the normed output by ``SiLU(W_gate x)``.
        chunk_size, mode, backend: see ``ops.simple_gla.simple_gla``.
        conv_size: short-convolution kernel (tokens); 0 = none (the default).
        tied_decay: the decay is not this layer's: it is read from ``tied_log_decay`` (a log
            decay ``[n_heads]``, float32) that the owning model sets before each call
            (``ScalarDecayLinearAttention(tie_decay=True)``); ``decays`` and ``learn_decay`` are
            then unused.

    Raises:
        ValueError: on a decay outside (0, 1], a learned decay of 1, a bad ``conv_size``, or a
            bad mode / backend.
    """

    def __init__(
        self,
        d_model: int,
        decays: Sequence[float],
        learn_decay: bool = False,
        output_gate: bool = False,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        conv_size: int = 0,
        tied_decay: bool = False,
    ):
        super().__init__()
        self.n_heads = len(decays)
        self.head_dim = check_heads(d_model, self.n_heads)
        for d in decays:
            if not 0.0 < float(d) <= 1.0:
                raise ValueError(f"each decay must be in (0, 1], got {d!r}")
            if learn_decay and float(d) >= 1.0:
                raise ValueError(f"a learned decay is sigmoid(logit) < 1; got initial decay {d!r}")
        self.learn_decay = learn_decay and not tied_decay
        self.tied_decay = tied_decay
        self.tied_log_decay: torch.Tensor | None = None
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode, self.backend = check_mode(mode), check_backend(backend)
        decays_t = torch.tensor([float(d) for d in decays], dtype=torch.float32)
        if tied_decay:
            pass
        elif learn_decay:
            self.decay_logit = nn.Parameter(torch.logit(decays_t.double()).float())
            self.decay_logit._no_weight_decay = True  # a decay, as mamba_ssm / fla flag A_log
        else:
            self.register_buffer("log_decay", decays_t.log(), persistent=True)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.conv = (
            ShortConvolution(3 * d_model, conv_size, activation=True)
            if check_conv_size(conv_size)
            else None
        )
        self.o_norm = nn.RMSNorm(self.head_dim)
        self.gate_proj = nn.Linear(d_model, d_model, bias=False) if output_gate else None
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    @property
    def decay(self) -> torch.Tensor:
        """The per-head decays ``[n_heads]`` (float32). RuntimeError for a tied decay outside
        its model's call: read ``ScalarDecayLinearAttention.decay`` then."""
        return self._log_decay().exp()

    def _log_decay(self) -> torch.Tensor:
        if self.tied_decay:
            if self.tied_log_decay is None:
                raise RuntimeError("a tied decay is set by its model's forward; read model.decay")
            return self.tied_log_decay
        return nn.functional.logsigmoid(self.decay_logit) if self.learn_decay else self.log_decay

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

    def forward(self, x, state):
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        qkv = self.qkv_proj(x)
        if self.conv is not None:
            conv_state, state = state
            qkv, conv_state = self.conv(qkv, conv_state)
        q, k, v = qkv.view(B, T, 3, H, D).unbind(2)
        g = self._log_decay().float().view(1, 1, H).expand(B, T, H)
        o, memory = simple_gla(
            q,
            k,
            v,
            g,
            initial_state=state,
            mode=self.mode,
            chunk_size=self.chunk_size,
            backend=self.backend,
        )
        o = self.o_norm(o)
        if self.gate_proj is not None:
            o = o * nn.functional.silu(self.gate_proj(x)).view(B, T, H, D)
        out = self.o_proj(o.reshape(B, T, H * D))
        if self.conv is None:
            return out, memory.to(state.dtype)
        return out, (conv_state, memory.to(state.dtype))


class ScalarDecayLinearAttention(MixerLM):
    """Backbone with single-head linear attention and ONE scalar decay, constant in time
    (Katharopoulos et al., 2020, "Transformers are RNNs", with a decay as in RetNet). The task's
    impossible case: forgetting stale keys needs ``decay < 1``, keeping the passkey for ever needs
    ``decay = 1`` (dataset card, first paragraph). State per layer: ``d_model^2`` floats, plus
    ``3 * d_model * (conv_size - 1)`` with the short convolution.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``.
        decay: the decay alpha in (0, 1]; learn_decay: learn it (then alpha < 1 is required).
        tie_decay: with ``learn_decay``, ONE learned decay shared by every layer (the impossible
            case of docs/TASK.md is one decay; two layers with two decays hold two timescales): the
            parameter ``decay_logit [1]`` on the model, ``decay = sigmoid(decay_logit)``.
        conv_size: a short causal convolution + SiLU on the q/k/v projections (tokens; fla's
            ``use_short_conv`` placement, ``fla/layers/simple_gla.py``); 0 = none (the default).
        chunk_size, mode, backend: see ``ops.simple_gla.simple_gla``.

    Raises:
        ValueError: on bad sizes, a decay outside the allowed range, a negative ``conv_size``,
            or ``tie_decay`` without ``learn_decay``.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        decay: float = 0.95,
        learn_decay: bool = False,
        chunk_size: int = 32,
        mode: str = "auto",
        backend: str = "auto",
        mlp_ratio: int = 4,
        conv_size: int = 0,
        tie_decay: bool = False,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, chunk_size=chunk_size,
            mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        if tie_decay and not learn_decay:
            raise ValueError(
                "tie_decay=True needs learn_decay=True (a fixed decay is already the same in every layer)"
            )
        super().__init__(
            lambda i: DecayLinearAttentionMixer(
                d_model, [decay], learn_decay, False, chunk_size, mode, backend, conv_size,
                tie_decay,
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
        self.tie_decay = bool(tie_decay)
        if tie_decay:
            self.decay_logit = nn.Parameter(torch.logit(torch.tensor([float(decay)]).double()).float())
            self._n_params += self.decay_logit.numel()

    @property
    def decay(self) -> torch.Tensor:
        """The decay of each layer ``[n_layers, 1]`` (float32; rows equal when tied)."""
        if self.tie_decay:
            return torch.sigmoid(self.decay_logit).expand(self.n_layers, 1)
        return torch.stack([b.mixer.decay for b in self.blocks])

    def forward(self, input_ids: torch.Tensor, state=None):
        """As ``MixerLM.forward``; with ``tie_decay`` each layer reads the shared decay for the
        call (cleared after it, so the model holds no graph between calls, as ``HGRN2``)."""
        if not self.tie_decay:
            return super().forward(input_ids, state)
        log_decay = nn.functional.logsigmoid(self.decay_logit)
        for block in self.blocks:
            block.mixer.tied_log_decay = log_decay
        try:
            return super().forward(input_ids, state)
        finally:
            for block in self.blocks:
                block.mixer.tied_log_decay = None


class MultiScaleRetention(MixerLM):
    """Backbone with RetNet's multi-scale retention (Sun et al., 2023, "Retentive Network: A
    Successor to Transformer for Large Language Models", section 2.2): heads with fixed, different
    decays, per-head normalisation and a swish output gate. Positions enter through the decay only
    (the paper's xPos rotation of q, k is left out, which keeps the state position-free).
    State per layer: ``n_heads * head_dim^2`` floats, plus ``3 * d_model * (conv_size - 1)`` with
    the short convolution.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``.
        n_heads: heads (must divide d_model).
        decays: one fixed decay per head in (0, 1] (one may be 1); RetNet's
            ``1 - 2^(-5 - h)`` when None.
        chunk_size, mode, backend: see ``ops.simple_gla.simple_gla``.
        conv_size: a short causal convolution + SiLU on the q/k/v projections (tokens; fla's
            ``fla/layers/multiscale_retention.py``, ``use_short_conv``); 0 = none (the default).

    Raises:
        ValueError: on bad sizes, ``len(decays) != n_heads``, a decay outside (0, 1] or a
            negative ``conv_size``.
    """

    def __init__(
        self,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        decays: list[float] | None = None,
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
        decays = retnet_decays(n_heads) if decays is None else list(decays)
        if len(decays) != n_heads:
            raise ValueError(f"decays must have n_heads={n_heads} entries, got {len(decays)}")
        if any(not isinstance(d, (int, float)) or math.isnan(d) for d in decays):
            raise ValueError(f"decays must be numbers, got {decays!r}")
        super().__init__(
            lambda i: DecayLinearAttentionMixer(
                d_model, decays, False, True, chunk_size, mode, backend, conv_size
            ),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
