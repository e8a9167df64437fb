"""mLSTM (Beck et al., 2024, "xLSTM: Extended Long Short-Term Memory", section 2.3, the mLSTM
block of Figure 10): a matrix memory written with an exponential input gate, read through a
normaliser, stored with a stabiliser (``ops.mlstm``).

Layer: a short causal convolution + SiLU feeds the query and key projections (the block's
"conv4 -> q, k" path), the value reads the input directly; per head the input-gate
pre-activation ``ĩ = W_i x + b_i`` and the forget gate ``log f = logsigmoid(W_f x + b_f)``
(biases initialised as in the authors' code: ``b_f`` from 3 to 6 over heads, ``b_i`` small);
the mLSTM cell; a per-head norm, the output gate ``sigmoid(W_o x)`` and the output projection.
The backbone's pre-norm residual block replaces the block's up-projection.
"""

from __future__ import annotations

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
from swar_bench.mechanisms.ops.mlstm import mlstm


class mLSTMMixer(Mixer):
    """One mLSTM layer; state ``(conv [B, d_model, conv_size - 1], C [B, n_heads, head_dim,
    head_dim], n [B, n_heads, head_dim], m [B, n_heads])``.

    Args:
        d_model: width; n_heads: heads (must divide d_model); conv_size: tokens (0 = no
            convolution, its input SiLU'd);
        chunk_size, mode: see ``ops.mlstm.mlstm``; n_layers: blocks of the model (the output
        projection's ``wang_init``).

    Raises:
        ValueError: on bad sizes or mode.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 2,
        conv_size: int = 4,
        chunk_size: int = 32,
        mode: str = "auto",
        n_layers: int = 1,
    ):
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.n_heads = n_heads
        self.head_dim = check_heads(d_model, n_heads)
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        self.mode = check_mode(mode)
        self.conv = short_convolution(d_model, conv_size, activation=True)
        self.qk_proj = nn.Linear(d_model, 2 * d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, 2 * n_heads, bias=False)  # ĩ and f̃ per head
        self.i_bias = nn.Parameter(0.1 * torch.randn(n_heads))
        self.f_bias = nn.Parameter(torch.linspace(3.0, 6.0, n_heads))
        self.o_gate = nn.Linear(d_model, d_model, bias=False)
        self.o_norm = nn.RMSNorm(self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The authors' initialisation (NX-AI/xlstm ``xlstm/blocks/mlstm/layer.py``
        ``mLSTMLayer.reset_parameters``, ``xlstm/blocks/mlstm/cell.py``
        ``mLSTMCell.reset_parameters``, ``xlstm/components/init.py``): q, k, v and the output-gate
        projection ``small_init`` (``normal(0, sqrt(2 / (5 d_model)))``), the output projection
        ``wang_init`` (``normal(0, 2 / n_layers / sqrt(d_model))``), the gate weights 0, the
        forget-gate bias ``linspace(3, 6)`` over heads, the input-gate bias ``normal(0, 0.1)``,
        the conv PyTorch's ``nn.Conv1d`` default, the head norm's weight 1."""
        d_model = self.o_proj.in_features
        small = (2.0 / (5.0 * d_model)) ** 0.5
        with torch.no_grad():
            for lin in (self.qk_proj, self.v_proj, self.o_gate):
                nn.init.normal_(lin.weight, std=small)
            nn.init.normal_(self.o_proj.weight, std=2.0 / self.n_layers / d_model**0.5)
            nn.init.zeros_(self.gate_proj.weight)
            self.f_bias.copy_(torch.linspace(3.0, 6.0, self.n_heads))
            nn.init.normal_(self.i_bias, std=0.1)
            if getattr(self.conv, "weight", None) is not None:  # None when conv_size is 0
                nn.init.kaiming_uniform_(self.conv.weight, a=5**0.5)
            self.o_norm.reset_parameters()

    def init_state(self, batch_size, device=None, dtype=None):
        H, D = self.n_heads, self.head_dim
        zeros = lambda *shape: torch.zeros(batch_size, *shape, device=device, dtype=dtype)
        return (
            self.conv.init_state(batch_size, device, dtype),
            zeros(H, D, D),
            zeros(H, D),
            zeros(H),
        )

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        H, D = self.n_heads, self.head_dim
        cell = batch_size * H * (D * D + D + 1) * dtype_bytes(dtype)
        return self.conv.state_bytes(batch_size, dtype) + cell

    def state_flops_per_token(self, seq_len=0) -> float:
        # per head: decay and write of C (3 D^2), read C^T q (2 D^2), n update and n^T q (5 D),
        # division (D)
        D = self.head_dim
        return self.conv.flops_per_token() + self.n_heads * (5.0 * D * D + 6.0 * D)

    def forward(self, x, state):
        conv_state, C, n, m = state
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        xc, conv_state = self.conv(x, conv_state)
        q, k = self.qk_proj(xc).view(B, T, 2, H, D).unbind(2)
        v = self.v_proj(x).view(B, T, H, D)
        i_pre, f_pre = self.gate_proj(x).float().view(B, T, 2, H).unbind(2)
        h, (C_new, n_new, m_new) = mlstm(
            q,
            k,
            v,
            nn.functional.logsigmoid(f_pre + self.f_bias),
            i_pre + self.i_bias,
            initial_state=(C, n, m),
            mode=self.mode,
            chunk_size=self.chunk_size,
        )
        h = self.o_norm(h) * torch.sigmoid(self.o_gate(x)).view(B, T, H, D)
        new_state = (conv_state, C_new.to(C.dtype), n_new.to(n.dtype), m_new.to(m.dtype))
        return self.o_proj(h.reshape(B, T, H * D)), new_state


class mLSTM(MixerLM):
    """Backbone with mLSTM layers (Beck et al., 2024, xLSTM): exponential input gate, sigmoid
    forget gate, matrix memory with normaliser and stabiliser. Fixed-size state per layer:
    ``n_heads * (head_dim^2 + head_dim + 1)`` cell floats + ``d_model * (conv_size - 1)`` conv
    floats.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; n_heads, conv_size,
        chunk_size, mode: as in ``mLSTMMixer``.

    Raises:
        ValueError: on bad sizes or mode.
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
        mlp_ratio: int = 4,
    ):
        check_sizes(
            vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            chunk_size=chunk_size, mlp_ratio=mlp_ratio,
        )
        check_conv_size(conv_size)
        check_heads(d_model, n_heads)
        super().__init__(
            lambda i: mLSTMMixer(d_model, n_heads, conv_size, chunk_size, mode, n_layers=n_layers),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
