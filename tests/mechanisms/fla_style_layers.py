"""Layers written the way flash-linear-attention writes them (``fla/layers/*.py``): built with
``hidden_size`` and ``layer_idx``, reading ``past_key_values[layer_idx]`` and writing
``past_key_values.update(recurrent_state=..., conv_state=..., layer_idx=..., offset=T)``; pure
PyTorch, so ``FlaLayer``'s wiring is tested on CPU."""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms.ops.simple_gla import simple_gla


class GatedLinearAttentionLike(nn.Module):
    """q, k, v -> short causal convolution on k (its cache updated IN PLACE, as some fla layers do)
    -> scalar-decay linear attention; returns ``(o, None, past_key_values)``."""

    def __init__(self, hidden_size: int, layer_idx: int, num_heads: int = 2, conv_size: int = 4):
        super().__init__()
        self.layer_idx, self.num_heads = layer_idx, num_heads
        self.head_dim = hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.g_proj = nn.Linear(hidden_size, num_heads, bias=False)
        self.conv_weight = nn.Parameter(torch.randn(hidden_size, conv_size) / conv_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(
        self,
        hidden_states,
        attention_mask=None,
        past_key_values=None,
        use_cache=False,
        output_attentions=False,
        **kwargs,
    ):
        B, T, D = hidden_states.shape
        last_state = None
        if past_key_values is not None and len(past_key_values) > self.layer_idx:
            last_state = past_key_values[self.layer_idx]
        q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
        W = self.conv_weight.shape[1]
        if last_state is not None:
            conv_state = last_state["conv_state"][0]
        else:
            conv_state = k.new_zeros(B, D, W - 1)
        full = torch.cat([conv_state, k.transpose(1, 2)], dim=-1)  # [B, D, W - 1 + T]
        k = torch.stack([(full[..., t : t + W] * self.conv_weight).sum(-1) for t in range(T)], 1)
        conv_state.copy_(full[..., -(W - 1) :])  # in place, like fla's causal_conv1d_update
        g = nn.functional.logsigmoid(self.g_proj(hidden_states))
        H, K = self.num_heads, self.head_dim
        o, S = simple_gla(
            q.view(B, T, H, K),
            k.reshape(B, T, H, K),
            v.view(B, T, H, K),
            g,
            initial_state=None if last_state is None else last_state["recurrent_state"],
        )
        if use_cache:
            past_key_values.update(
                recurrent_state=S, conv_state=(conv_state,), layer_idx=self.layer_idx, offset=T
            )
        return self.o_proj(o.reshape(B, T, D)), None, past_key_values


class KeyValueCacheLike(nn.Module):
    """Attention-like: its cache (``attn_state``) grows by one entry per token."""

    def __init__(self, hidden_size: int, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(
        self, hidden_states, attention_mask=None, past_key_values=None, use_cache=False, **kwargs
    ):
        k = self.proj(hidden_states)
        if use_cache:
            past_key_values.update(attn_state=(k,), layer_idx=self.layer_idx, offset=k.shape[1])
        return k, None, past_key_values
