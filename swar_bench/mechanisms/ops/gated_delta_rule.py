"""The gated delta rule (Yang, Kautz & Hatamizadeh, 2024, "Gated Delta Networks", eq. 10).

    S_t = exp(g_t) * S_{t-1} + beta_t * k_t (v_t - exp(g_t) * S_{t-1}^T k_t)^T     S: [K, V] per head
    o_t = scale * S_t^T q_t

``g = 0`` gives DeltaNet's delta rule (Schlag et al., 2021; Yang et al., 2024, "Parallelizing
Linear Transformers with the Delta Rule over Sequence Length"). Two exact forms, the same as
fla's ``fla.ops.gated_delta_rule.naive`` (checked in the tests): a token-by-token recurrence for
streaming, and the chunk-parallel WY form for training: within a chunk the product of
Householder-like transitions is the unit lower-triangular system ``(I + A) U = diag(beta) V``,
``A = strict_tril(diag(beta) K K^T * Gamma)``, solved with ``torch.linalg.solve_triangular``
(paper section 3.3); only the ``T / chunk_size`` state updates are sequential.

Layout follows fla: ``q, k [B, T, H, K]``, ``v [B, T, H, V]``, ``g, beta [B, T, H]``,
``state [B, H, K, V]``. ``g`` may be any value in ``[-inf, 0]``: -inf forgets the state.
Computation is float32; outputs take ``v``'s dtype, the state stays float32.
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


def _check(q, k, v, g, beta) -> None:
    if (
        q.dim() != 4
        or k.shape != q.shape
        or v.shape[:3] != q.shape[:3]
        or g.shape != q.shape[:3]
        or beta.shape != q.shape[:3]
    ):
        raise ValueError(
            f"expected q, k [B, T, H, K], v [B, T, H, V], g, beta [B, T, H]; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)}, beta {tuple(beta.shape)}"
        )


@float32_op
def recurrent_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-by-token recurrence (the streaming form).

    Args:
        q, k: ``[B, T, H, K]`` (keys are expected L2-normalised for stability, not required);
        v: ``[B, T, H, V]``; g: ``[B, T, H]`` log decay (0 = DeltaNet); beta: ``[B, T, H]``
        write strength in [0, 1]; scale: default ``K ** -0.5``;
        initial_state: ``[B, H, K, V]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V], final_state [B, H, K, V] float32)``.

    Raises:
        ValueError: on inconsistent shapes.
    """
    _check(q, k, v, g, beta)
    dtype = v.dtype
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, g_t, beta_t in zip(*(x.unbind(1) for x in (q, k, v, g, beta))):
        S = S * g_t.exp()[..., None, None]
        v_new = (v_t - torch.einsum("bhkv,bhk->bhv", S, k_t)) * beta_t[..., None]
        S = S + k_t[..., :, None] * v_new[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q_t * scale, S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(v.shape)
    return o.to(dtype), S


@float32_op
def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel WY form (the training form); same arguments and result as
    :func:`recurrent_gated_delta_rule`, up to float rounding. ``T`` need not be a multiple of
    ``chunk_size`` (zero padding with ``beta = 0, g = 0`` leaves the state unchanged).

    The decays are segment sums (``chunking.chunk_decays``), so any log decay in ``[-inf, 0]``
    and any mix of them within a chunk is exact to float32 rounding: within 2e-5 relative
    (``max|o - o_ref| / max|o_ref|`` per tensor) of a float64 recurrence, for the output, the final
    state and the gradients, with -inf forgetting everything as the recurrence does. bfloat16
    inputs are computed in float32: the output (cast back to bfloat16) and the input gradients are
    within 8e-3 relative (two units of bfloat16 rounding, 2^-8 each), the float32 state within 2e-5.
    """
    _check(q, k, v, g, beta)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    T, V = q.shape[1], v.shape[-1]
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    qc, kc, vc, gc, bc = (split_chunks(x, chunk_size) for x in (q, k, v, g, beta))
    qc = qc * scale  # [B, H, n, C, ...]
    d = chunk_decays(gc)
    k_beta = kc * bc[..., None]
    # (I + strict_tril(A))^{-1} applied to the right-hand sides: a unit lower-triangular solve
    # reads only the strict lower triangle of A (its diagonal and upper part are ignored).
    A = d.scores(k_beta, kc)
    rhs = torch.cat([vc * bc[..., None], d.decay_queries(k_beta)], dim=-1)
    sol = torch.linalg.solve_triangular(A, rhs, upper=False, unitriangular=True)
    u, w = sol.split([V, sol.shape[-1] - V], dim=-1)  # one backward node (a cat), not two slices
    k_decay = d.decay_keys(kc)
    # Only the state is sequential; the readout of all chunks is batched after the loop.
    # unbind, not indexing: the backward of x[:, :, i] zero-fills a full-size gradient per chunk
    states, v_news = [], []
    for u_i, w_i, k_i, total_i in zip(*(t.unbind(2) for t in (u, w, k_decay, d.total))):
        states.append(S)
        v_news.append(u_i - w_i @ S)
        S = S * total_i + k_i.transpose(-1, -2) @ v_news[-1]
    o = d.decay_queries(qc) @ torch.stack(states, dim=2)
    o = o + d.scores(qc, kc) @ torch.stack(v_news, dim=2)
    return merge_chunks(o, T).to(dtype), S


def gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch: ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else chunk);
    ``backend`` "torch" / "fla" / "auto" (fla's Triton ``chunk_gated_delta_rule`` /
    ``fused_recurrent_gated_delta_rule`` on CUDA when fla is installed, else the torch forms).

    Returns ``(o [B, T, H, V], final_state [B, H, K, V] float32)``. Raises ValueError on an
    unknown mode / backend, or backend "fla" where the kernels cannot run.
    """
    mode = resolve_mode(mode, q.shape[1])
    if use_fla(backend, q):
        if mode == "chunk":
            from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_op
        else:
            from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fla_op
        init = None if initial_state is None else initial_state.float()
        q, k, v, beta = (t.contiguous() for t in (q, k, v, beta))
        o, S = fla_op(
            q,
            k,
            v,
            g=g.float().contiguous(),
            beta=beta,
            scale=scale,
            initial_state=init,
            output_final_state=True,
        )
        return o, S.float()
    if mode == "chunk":
        return chunk_gated_delta_rule(
            q, k, v, g, beta, scale=scale, initial_state=initial_state, chunk_size=chunk_size
        )
    return recurrent_gated_delta_rule(q, k, v, g, beta, scale=scale, initial_state=initial_state)
