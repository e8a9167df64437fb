"""What the chunk-parallel forms of the linear-attention ops share: the initial state and the
split of a sequence into zero-padded chunks (Yang et al., 2024, "Gated Linear Attention",
section 3; fla's layout ``[B, T, H, ...]``)."""

from __future__ import annotations

import torch


def initial_state_of(q: torch.Tensor, v: torch.Tensor, initial_state: torch.Tensor | None) -> torch.Tensor:
    """The state ``[B, H, K, V]`` float32 to start from: ``initial_state`` (as float32) or zeros,
    for ``q [B, T, H, K]`` and ``v [B, T, H, V]``."""
    if initial_state is not None:
        return initial_state.float()
    B, _, H, K = q.shape
    return q.new_zeros(B, H, K, v.shape[-1], dtype=torch.float32)


def split_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """``x [B, T, H, ...]`` -> float32 ``[B, H, n, chunk_size, ...]`` with ``n = ceil(T / chunk_size)``,
    zero-padded at the end (a zero ``k``, ``v``, log decay ``g`` or ``beta`` leaves the state unchanged).

    Raises:
        ValueError: ``chunk_size < 1``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    B, T, H = x.shape[:3]
    pad = (-T) % chunk_size
    x = x.float().transpose(1, 2)
    if pad:
        x = torch.nn.functional.pad(x, (0, 0) * (x.dim() - 3) + (0, pad))
    return x.reshape(B, H, (T + pad) // chunk_size, chunk_size, *x.shape[3:])
