"""The chunk-parallel WY form of Kimi Delta Attention (the training form; Kimi Team, 2025,
section 3.1, after Yang et al., 2024, "Parallelizing Linear Transformers with the Delta Rule over
Sequence Length", section 3.3).

Within a chunk, with ``Gamma_{i <- j} = diag(exp(sum_{j < l <= i} g_l))`` (per key channel) and
``b_i = sum_{l <= i} g_l`` from the chunk start, the updates ``u`` written by the tokens solve the
unit lower-triangular system

    (I + A) u = diag(beta) (V - (K * exp(b)) S),   A_ij = beta_i k_i^T Gamma_{i <- j} k_j  (j < i)

so ``o = (Q * exp(b)) S + (Q Gamma K^T, j <= i) u`` and
``S' = diag(exp(b_C)) S + (K * exp(sum_{j < l <= C} g_l))^T u``. The in-chunk decays are GLA's
(``gla.chunk.in_chunk_decays``, computed once for both score matrices), so ``-inf`` and bursts
stay exact.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.chunking import initial_state_of, merge_chunks, split_chunks
from swar_bench.mechanisms.ops.gla.chunk import in_chunk_decays, suffix_sum
from swar_bench.mechanisms.ops.kda.recurrent import check_kda_shapes
from swar_bench.mechanisms.ops.precision import float32_op


@float32_op
def chunk_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel WY form; same arguments and result as
    :func:`~swar_bench.mechanisms.ops.kda.recurrent.recurrent_kda`, up to float rounding. ``T``
    need not be a multiple of ``chunk_size`` (padding with ``beta = 0``, ``g = 0`` leaves the
    state unchanged).

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    check_kda_shapes(q, k, v, g, beta)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    T, K, V = q.shape[1], q.shape[-1], v.shape[-1]
    scale = K**-0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    qc, kc, vc, gc, bc = (split_chunks(x, chunk_size) for x in (q, k, v, g, beta))
    from_start = gc.cumsum(-2).exp()  # [B, H, n, C, K], sums from the chunk start: no differences
    # A unit lower-triangular solve reads only the strict lower triangle of A.
    decays = in_chunk_decays(gc)
    A = decays.scores(kc, kc) * bc[..., None]
    rhs = torch.cat([vc, kc * from_start], dim=-1) * bc[..., None]
    sol = torch.linalg.solve_triangular(A, rhs, upper=False, unitriangular=True)
    u, w = sol.split([V, sol.shape[-1] - V], dim=-1)  # one backward node (a cat), not two slices
    attn = decays.scores(qc * scale, kc)  # [B, H, n, C, C], j <= i
    q_decay = qc * scale * from_start
    k_decay = kc * suffix_sum(gc).exp()
    a_last = from_start[..., -1, :, None]  # [B, H, n, K, 1]
    states, v_news = [], []
    # Only the state is sequential; the readout of all chunks is batched after the loop.
    # unbind, not indexing: the backward of x[:, :, i] zero-fills a full-size gradient per chunk
    for u_i, w_i, k_i, a_i in zip(*(t.unbind(2) for t in (u, w, k_decay, a_last))):
        states.append(S)
        v_news.append(u_i - w_i @ S)
        S = S * a_i + k_i.transpose(-1, -2) @ v_news[-1]
    o = q_decay @ torch.stack(states, dim=2) + attn @ torch.stack(v_news, dim=2)
    return merge_chunks(o, T).to(dtype), S
