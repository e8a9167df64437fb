"""A layer of your own, outside the package: an exponential-moving-average (EMA) mixer.

Each channel keeps a running average of the projected input with its own learned decay:

    h_t = a * h_{t-1} + (1 - a) * W_in x_t,   y_t = W_out (h_t * SiLU(W_gate x_t)),   a = sigmoid(decay_logit)

The state is ``h [B, d_model]`` per block, a fixed size. Run it with the package's commands
(docs/MECHANISMS.md, "Bring your own layer"):

    PYTHONPATH=examples swar-bench check-mechanism my_layer.EMAModel --init_args '{"d_model": 32}'
    PYTHONPATH=examples swar-bench fit --config configs/quickstart.yaml --model.mechanism=my_layer.EMAModel
"""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms import Mixer, MixerLM
from swar_bench.mechanisms.base import dtype_bytes


class EMAMixer(Mixer):
    """Per-channel EMA with learned decays and an output gate.

    ``forward(x[B, T, d_model], h[B, d_model]) -> (y[B, T, d_model], h[B, d_model])``; one call on
    T tokens equals any split into chunks with ``h`` carried (the recurrence runs token by token).
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.w_in = nn.Linear(d_model, d_model, bias=False)
        self.w_gate = nn.Linear(d_model, d_model, bias=False)
        self.w_out = nn.Linear(d_model, d_model, bias=False)
        # decays spread over (0.5, 0.999): short and long memories side by side
        self.decay_logit = nn.Parameter(torch.linspace(0.0, 6.9, d_model))

    def init_state(self, batch_size: int, device=None, dtype=None) -> torch.Tensor:
        return torch.zeros(batch_size, self.d_model, device=device, dtype=dtype)

    def state_bytes(self, batch_size: int, seq_len: int = 0, dtype: torch.dtype | None = None) -> int:
        return batch_size * self.d_model * dtype_bytes(dtype)

    def state_flops_per_token(self, seq_len: int = 0) -> float:
        return 4.0 * self.d_model  # the EMA update (3) and the gate product (1) per channel

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.sigmoid(self.decay_logit)
        u = (1 - a) * self.w_in(x)
        h = h.to(x.dtype)
        outs = []
        for t in range(x.shape[1]):
            h = a * h + u[:, t]
            outs.append(h)
        y = torch.stack(outs, dim=1) * nn.functional.silu(self.w_gate(x))
        return self.w_out(y), h.clone()


class EMAModel(MixerLM):
    """The shared backbone (embedding, ``n_layers`` x [norm, mixer, norm, MLP], head) with an
    ``EMAMixer`` per block. State: ``n_layers`` x ``[B, d_model]`` floats, fixed size."""

    def __init__(self, vocab_size: int = 40, d_model: int = 64, n_layers: int = 2, mlp_ratio: int = 4):
        super().__init__(lambda i: EMAMixer(d_model), vocab_size, d_model, n_layers, mlp_ratio)
