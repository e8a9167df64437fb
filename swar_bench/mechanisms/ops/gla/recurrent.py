"""The token-by-token recurrence of gated linear attention (the streaming form)."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.chunking import initial_state_of
from swar_bench.mechanisms.ops.precision import float32_op


def check_gla_shapes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> None:
    """ValueError unless ``q, k, g [B, T, H, K]`` and ``v [B, T, H, V]``."""
    if q.dim() != 4 or k.shape != q.shape or g.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"expected q, k, g [B, T, H, K] and v [B, T, H, V]; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)}"
        )


@float32_op
def recurrent_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T``, ``o_t = scale * S_t^T q_t``, token by token.

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; g: ``[B, T, H, K]`` log decay per key
        channel (<= 0; ``-inf`` erases the channel); scale: default ``K ** -0.5``;
        initial_state: ``[B, H, K, V]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V]`` in ``v``'s dtype, ``final_state [B, H, K, V]`` float32); computed
        in float32.

    Raises:
        ValueError: on inconsistent shapes.
    """
    check_gla_shapes(q, k, v, g)
    dtype = v.dtype
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, g_t in zip(*(x.float().unbind(1) for x in (q, k, v, g))):
        S = S * g_t.exp()[..., None] + k_t[..., :, None] * v_t[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q_t * scale, S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(v.shape)
    return o.to(dtype), S
