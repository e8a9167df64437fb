"""Linear attention with a scalar (per head, per token) decay: the "simple GLA" recurrence.

    S_t = exp(g_t) * S_{t-1} + k_t v_t^T          S: [K, V] per head
    o_t = scale * q_t^T S_t

With ``g`` constant in time this is RetNet's retention (Sun et al., 2023, "Retentive Network");
with ``g_t = A * dt_t`` and ``k_t = dt_t * B_t``, ``q_t = C_t`` it is Mamba-2's SSD (Dao & Gu,
2024, "Transformers are SSMs"). Two exact forms are given, the same as fla's
``fla.ops.simple_gla.naive`` (which the tests check against): a token-by-token recurrence for
streaming and a chunk-parallel form for training (intra-chunk attention with a decay mask plus
a chunk-to-chunk state scan; Yang et al., 2024, "Gated Linear Attention", section 3).

Layout follows fla: ``q, k [B, T, H, K]``, ``v [B, T, H, V]``, ``g [B, T, H]`` (log decay, <= 0),
``state [B, H, K, V]``; all float. ``g`` may be any value in ``[-inf, 0]``: -inf forgets the state.
Computation is in float32; outputs are cast back to ``v``'s dtype, the state stays float32.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode, use_fla
from swar_bench.mechanisms.ops.chunking import (
    chunk_decays,
    initial_state_of,
    merge_chunks,
    split_chunks,
)
from swar_bench.mechanisms.ops.precision import float32_op


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> None:
    if q.dim() != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3] or g.shape != q.shape[:3]:
        raise ValueError(
            f"expected q, k [B, T, H, K], v [B, T, H, V], g [B, T, H]; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)}"
        )


@float32_op
def recurrent_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-by-token recurrence (the streaming form).

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; g: ``[B, T, H]`` log decay (0 keeps everything).
        scale: query scale; default ``K ** -0.5``.
        initial_state: ``[B, H, K, V]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V], final_state [B, H, K, V] float32)``.

    Raises:
        ValueError: on inconsistent shapes.
    """
    _check(q, k, v, g)
    dtype = v.dtype
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    q, k, v, g = (x.float() for x in (q, k, v, g))
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, g_t in zip(*(x.unbind(1) for x in (q, k, v, g))):
        S = S * g_t.exp()[..., None, None] + k_t[..., :, None] * v_t[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q_t * scale, S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(v.shape)
    return o.to(dtype), S


@float32_op
def chunk_simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel form (the training form); same arguments and result as
    :func:`recurrent_simple_gla`, up to float rounding.

    Within a chunk of ``chunk_size`` tokens the output is masked attention
    ``(q k^T * exp(sum_{j < s <= i} g_s))_{j <= i} v`` plus the carried state read out as
    ``(q * exp(sum_{s <= i} g_s)) S``; only the ``T / chunk_size`` state updates are sequential.
    The decays are segment sums (``chunking.chunk_decays``), so any log decay in ``[-inf, 0]``
    and any mix of them within a chunk is exact to float32 rounding: within 2e-5 relative
    (``max|o - o_ref| / max|o_ref|`` per tensor) of a float64 recurrence, for the output, the final
    state and the gradients, with -inf forgetting everything as the recurrence does. bfloat16
    inputs are computed in float32: the output (cast back to bfloat16) and the input gradients are
    within 8e-3 relative (two units of bfloat16 rounding, 2^-8 each), the float32 state within 2e-5.
    ``T`` need not be a multiple of ``chunk_size`` (zero padding, ``g = 0``, leaves the state
    unchanged).
    """
    _check(q, k, v, g)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    T = q.shape[1]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    qc, kc, vc, gc = (split_chunks(x, chunk_size) for x in (q, k, v, g))  # [B, H, n, C, ...]
    qc = qc * scale
    d = chunk_decays(gc)
    dS = d.decay_keys(kc).transpose(-1, -2) @ vc  # [B, H, n, K, V]: each chunk's own writes
    states = []
    # unbind, not indexing: the backward of x[:, :, i] zero-fills a full-size gradient per chunk
    for total_i, dS_i in zip(d.total.unbind(2), dS.unbind(2)):
        states.append(S)
        S = S * total_i + dS_i
    o = d.scores(qc, kc) @ vc + d.decay_queries(qc) @ torch.stack(states, dim=2)
    return merge_chunks(o, T).to(dtype), S


def simple_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch: ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else chunk);
    ``backend`` "torch" / "fla" / "auto" (fla's Triton kernels ``chunk_simple_gla`` /
    ``fused_recurrent_simple_gla`` on CUDA when fla is installed, else the torch forms above).

    Returns ``(o [B, T, H, V], final_state [B, H, K, V] float32)``. Raises ValueError on an
    unknown mode / backend, or backend "fla" where the kernels cannot run.
    """
    mode = resolve_mode(mode, q.shape[1])
    if use_fla(backend, q):
        if mode == "chunk":
            from fla.ops.simple_gla import chunk_simple_gla as fla_op
        else:
            from fla.ops.simple_gla import fused_recurrent_simple_gla as fla_op
        init = None if initial_state is None else initial_state.float()
        q, k, v = (t.contiguous() for t in (q, k, v))
        o, S = fla_op(
            q,
            k,
            v,
            g=g.float().contiguous(),
            scale=scale,
            initial_state=init,
            output_final_state=True,
        )
        return o, S.float()
    if mode == "chunk":
        return chunk_simple_gla(
            q, k, v, g, scale=scale, initial_state=initial_state, chunk_size=chunk_size
        )
    return recurrent_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state)
