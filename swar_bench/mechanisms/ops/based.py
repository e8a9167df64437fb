"""Linear attention with Based's 2nd-order Taylor feature map (Arora et al., 2024, "Simple linear
attention language models balance the recall-throughput tradeoff", section 4.1).

    phi(q)^T phi(k) = 1 + s + s^2 / 2,   s = scale * q^T k        (approximates exp(s))
    phi(x) = [1, x, vec(x x^T) / sqrt(2)]                         F = 1 + K + K^2 features
    o_t = sum_{s<=t} phi(q_t)^T phi(k_s) v_s / (sum_{s<=t} phi(q_t)^T phi(k_s) + eps)

``scale`` (default ``K ** -0.5``) multiplies ``q`` only, as fla's ``naive_parallel_based`` does
(the authors split it over both sides; the scores are the same). The state is
``S [B, H, F, V + 1]``: ``sum phi(k_s) [v_s, 1]^T``, the numerator's memory with the normaliser
as its last column. Two exact forms: a token-by-token recurrence (streaming) and a chunk-parallel
form (the ``1 + s + s^2 / 2`` scores inside a chunk, ``phi(q) S`` for the chunks before).

Layout: ``q, k [B, T, H, K]``, ``v [B, T, H, V]``. Computation is float32; outputs take ``v``'s
dtype, the state stays float32.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode
from swar_bench.mechanisms.ops.chunking import split_chunks
from swar_bench.mechanisms.ops.precision import float32_op

EPS = 1e-6
"""Added to the normaliser, as in fla's ``naive_parallel_based``."""


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """``x [..., K] -> [1, x, vec(x x^T) / sqrt(2)]`` of shape ``[..., 1 + K + K^2]``."""
    outer = (x[..., :, None] * x[..., None, :]).flatten(-2) * 0.5**0.5
    return torch.cat([torch.ones_like(x[..., :1]), x, outer], dim=-1)


def feature_dim(head_dim: int) -> int:
    """Taylor features per head, ``1 + K + K^2``."""
    return 1 + head_dim + head_dim**2


def _prepare(q, k, v, scale, initial_state):
    if q.dim() != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"expected q, k [B, T, H, K], v [B, T, H, V]; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    B, _, H, K = q.shape
    scale = K**-0.5 if scale is None else scale
    if initial_state is None:
        S = q.new_zeros(B, H, feature_dim(K), v.shape[-1] + 1, dtype=torch.float32)
    else:
        S = initial_state.float()
    v1 = torch.cat([v.float(), v.new_ones(*v.shape[:3], 1, dtype=torch.float32)], dim=-1)
    return q.float() * scale, k.float(), v1, S


@float32_op
def recurrent_based(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-by-token recurrence (the streaming form).

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; scale: query scale, default ``K ** -0.5``;
        initial_state: ``[B, H, 1 + K + K^2, V + 1]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V], final_state [B, H, 1 + K + K^2, V + 1] float32)``.

    Raises:
        ValueError: on inconsistent shapes.
    """
    q, k, v1, S = _prepare(q, k, v, scale, initial_state)
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t in zip(q.unbind(1), k.unbind(1), v1.unbind(1)):
        S = S + taylor_features(k_t)[..., :, None] * v_t[..., None, :]
        outs.append(torch.einsum("bhf,bhfv->bhv", taylor_features(q_t), S))
    if not outs:
        return v.new_zeros(v.shape), S
    o = torch.stack(outs, dim=1)
    return (o[..., :-1] / (o[..., -1:] + EPS)).to(v.dtype), S


@float32_op
def chunk_based(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel form (the training form); same arguments and result as
    :func:`recurrent_based`, up to float rounding. Within a chunk the scores
    ``1 + s + s^2 / 2`` are formed directly (``C^2`` of them, not ``C x F`` features);
    ``T`` need not be a multiple of ``chunk_size`` (zero-padded keys are masked out).

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    q, k, v1, S = _prepare(q, k, v, scale, initial_state)
    B, T, H = q.shape[:3]
    if T == 0:
        return v.new_zeros(v.shape), S
    C = chunk_size
    qc, kc, vc = (split_chunks(x, C) for x in (q, k, v1))  # [B, H, n, C, .]; pad rows v1 = 0
    n = qc.shape[2]
    s = qc @ kc.transpose(-1, -2)
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    o = ((1 + s + 0.5 * s.square()) * causal) @ vc  # intra-chunk
    dS = taylor_features(kc).transpose(-1, -2) @ vc  # [B, H, n, F, V + 1]
    states = []
    for dS_i in dS.unbind(2):
        states.append(S)
        S = S + dS_i
    o = o + taylor_features(qc) @ torch.stack(states, dim=2)
    o = o.reshape(B, H, n * C, -1)[:, :, :T].transpose(1, 2)
    return (o[..., :-1] / (o[..., -1:] + EPS)).to(v.dtype), S


def based(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch on ``mode``: "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else
    chunk). Both are torch code and run on CUDA as well: fla's Based kernels
    (``parallel_based``, ``fused_chunk_based``) take no initial state, so they cannot continue
    a stream. Returns ``(o [B, T, H, V], final_state [B, H, 1 + K + K^2, V + 1] float32)``."""
    if resolve_mode(mode, q.shape[1]) == "chunk":
        return chunk_based(q, k, v, scale, initial_state, chunk_size)
    return recurrent_based(q, k, v, scale, initial_state)
