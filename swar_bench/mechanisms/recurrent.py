"""Classic gated RNNs as mixers: ``torch.nn.GRU`` (Cho et al., 2014) and ``torch.nn.LSTM``
(Hochreiter & Schmidhuber, 1997) inside the shared backbone; the state is the hidden vector(s)."""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms.base import Mixer, MixerLM, dtype_bytes
from swar_bench.mechanisms.ops.precision import float32_op


class GRUMixer(Mixer):
    """``nn.GRU(d_model, d_model)``; state ``h [B, d_model]``."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.rnn = nn.GRU(d_model, d_model, batch_first=True)

    def init_state(self, batch_size, device=None, dtype=None) -> torch.Tensor:
        return torch.zeros(batch_size, self.d_model, device=device, dtype=dtype)

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return batch_size * self.d_model * dtype_bytes(dtype)

    def state_flops_per_token(self, seq_len=0) -> float:
        return 0.0  # the gates are weight matmuls, counted in 2 * n_params

    @float32_op  # the recurrence in float32 under mixed precision (ops/precision.py)
    def forward(self, x, state):
        y, h = self.rnn(x, state.to(x.dtype).unsqueeze(0).contiguous())
        return y, h.squeeze(0).to(state.dtype).clone()  # not a view (FSDP2 hooks)


class LSTMMixer(Mixer):
    """``nn.LSTM(d_model, d_model)``; state ``(h [B, d_model], c [B, d_model])``."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.rnn = nn.LSTM(d_model, d_model, batch_first=True)

    def init_state(self, batch_size, device=None, dtype=None) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.zeros(batch_size, self.d_model, device=device, dtype=dtype)
        return z, z.clone()

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return 2 * batch_size * self.d_model * dtype_bytes(dtype)

    @float32_op  # the recurrence in float32 under mixed precision (ops/precision.py)
    def forward(self, x, state):
        h, c = state
        y, (h2, c2) = self.rnn(
            x, (h.to(x.dtype).unsqueeze(0).contiguous(), c.to(x.dtype).unsqueeze(0).contiguous())
        )
        return y, (h2.squeeze(0).to(h.dtype).clone(), c2.squeeze(0).to(c.dtype).clone())


class GRU(MixerLM):
    """Backbone with a GRU mixer per block (Cho et al., 2014, "Learning Phrase Representations
    using RNN Encoder-Decoder"). State: ``n_layers x [B, d_model]`` floats, fixed size.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``.
    """

    def __init__(
        self, vocab_size: int = 40, d_model: int = 64, n_layers: int = 2, mlp_ratio: int = 4
    ):
        super().__init__(lambda i: GRUMixer(d_model), vocab_size, d_model, n_layers, mlp_ratio)


class LSTM(MixerLM):
    """Backbone with an LSTM mixer per block (Hochreiter & Schmidhuber, 1997). State:
    ``n_layers x (h, c)``, each ``[B, d_model]`` floats, fixed size.

    Args: vocab_size, d_model, n_layers, mlp_ratio as in ``MixerLM``.
    """

    def __init__(
        self, vocab_size: int = 40, d_model: int = 64, n_layers: int = 2, mlp_ratio: int = 4
    ):
        super().__init__(lambda i: LSTMMixer(d_model), vocab_size, d_model, n_layers, mlp_ratio)
