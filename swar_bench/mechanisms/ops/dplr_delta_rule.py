"""The diagonal-plus-low-rank (DPLR) delta rule: RWKV-7's state update (Peng et al., 2025,
"RWKV-7 'Goose' with Expressive Dynamic State Evolution", eq. 16-18; fla's generalized delta rule).

    S_t = (diag(exp(gk_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T      S: [K, V] per head
    o_t = scale * S_t^T q_t

The paper stores the transpose, ``S (diag(w) + a bᵀ) + v kᵀ``; here ``gk = log w``, ``a = -κ̂``,
``b = κ̂ · iclr`` (fla's convention). The low-rank term reads the *undecayed* previous state.
Two exact forms, checked against fla's ``fla.ops.generalized_delta_rule.dplr.naive``: a
token-by-token recurrence (streaming) and a chunk-parallel form (training). Within a chunk the
low-rank reads ``u_t = a_t^T S_{t-1}`` solve the unit lower-triangular system
``(I - A_ab) U = A_ak V + (a * exp(b_{t-1})) S_0`` (the WY form of Yang et al., 2024, section
3.3, with per-channel decay); only the ``T / chunk_size`` state updates are sequential. Every
decay factor ``exp(sum of gk over a segment)`` is either factored (``exp(b_t) exp(-b_s)``, when
every chunk's total log decay is >= -40) or a segment sum (``ops.gla.chunk``), so ``gk = -inf`` (a
full reset) gives exact zeros, never ``inf - inf``.

Layout follows fla: ``q, k, a, b, gk [B, T, H, K]``, ``v [B, T, H, V]``, ``state [B, H, K, V]``.
Computation is float32; outputs take ``v``'s dtype, the state stays float32.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode, use_fla
from swar_bench.mechanisms.ops.chunking import initial_state_of, merge_chunks, split_chunks
from swar_bench.mechanisms.ops.gla.chunk import (
    FACTORED_DECAY_LIMIT,
    causal_gated_scores,
    suffix_sum,
)


def _check(q, k, v, a, b, gk) -> None:
    if q.dim() != 4 or any(x.shape != q.shape for x in (k, a, b, gk)) or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            "expected q, k, a, b, gk [B, T, H, K] and v [B, T, H, V]; got "
            + ", ".join(
                f"{n} {tuple(x.shape)}"
                for n, x in zip(["q", "k", "v", "a", "b", "gk"], (q, k, v, a, b, gk))
            )
        )


def recurrent_dplr_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    gk: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-by-token recurrence (the streaming form).

    Args:
        q, k, a, b: ``[B, T, H, K]``; v: ``[B, T, H, V]``; gk: ``[B, T, H, K]`` per-channel log
        decay (<= 0; -inf resets the channel); scale: default ``K ** -0.5`` (RWKV-7 uses 1);
        initial_state: ``[B, H, K, V]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V], final_state [B, H, K, V] float32)``.

    Raises:
        ValueError: on inconsistent shapes.
    """
    _check(q, k, v, a, b, gk)
    dtype = v.dtype
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, a_t, b_t, g_t in zip(*(x.float().unbind(1) for x in (q, k, v, a, b, gk))):
        u_t = torch.einsum("bhk,bhkv->bhv", a_t, S)  # low-rank read of the undecayed state
        S = S * g_t.exp()[..., None] + b_t[..., :, None] * u_t[..., None, :]
        S = S + k_t[..., :, None] * v_t.float()[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q_t * scale, S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(v.shape)
    return o.to(dtype), S


def _previous_token(x: torch.Tensor, first: float) -> torch.Tensor:
    """``x [B, H, n, C, ...]`` shifted by one token along the chunk: row ``t`` holds row ``t - 1``,
    row 0 holds ``first`` (a low-rank read at token t sees the state after token t - 1)."""
    return torch.cat([torch.full_like(x[:, :, :, :1], first), x[:, :, :, :-1]], dim=3)


def _next_token(x: torch.Tensor) -> torch.Tensor:
    """``x [B, H, n, C, ...]`` shifted the other way: row ``t`` holds row ``t + 1``, the last row 0."""
    return torch.cat([x[:, :, :, 1:], torch.zeros_like(x[:, :, :, :1])], dim=3)


def _chunk_scores(q, a, k, b, g, from_start, factored: bool):
    """The in-chunk scores of chunked ``[B, H, n, C, K]`` inputs with per-channel decays:
    ``A_qk, A_qb [t, s] = sum_c q_tc (k or b)_sc exp(g_{s+1} + .. + g_t)_c`` for ``s <= t``,
    and ``A_ak, A_ab`` the same for ``a`` over ``(s, t - 1]``, ``s < t`` (the low-rank read at t
    sees the state after t - 1). When every chunk's total log decay is at least
    ``-FACTORED_DECAY_LIMIT`` (always for RWKV-7's decays, ``>= -e^{-1/2}`` per token, at
    ``C <= 64``) the decays factor as ``exp(b_t) exp(-b_s)`` and all four are one batched matmul;
    otherwise they come from ``ops.gla.chunk.causal_gated_scores`` (segment sums where needed).
    ``from_start = g.cumsum(-2)``; ``factored``: whether every chunk's total passes the limit."""
    C = g.shape[-2]
    if factored:
        before = _previous_token(from_start, 0.0)  # log decay from the chunk start to t - 1
        left = torch.stack([q * from_start.exp(), a * before.exp()])  # [2, B, H, n, C, K]
        right = torch.stack([k, b]) * (-from_start).exp()
        scores = left[:, None] @ right[None].transpose(-1, -2)  # [2, 2, B, H, n, C, C]
        mask = torch.ones(2, 1, C, C, dtype=torch.bool, device=g.device).tril()
        mask[1] = mask[1].tril(-1)  # strictly before t for a
        scores = scores * mask.view(2, 1, *(1,) * (scores.dim() - 4), C, C)
        return scores[0, 0], scores[0, 1], scores[1, 0], scores[1, 1]
    # a_t's scores placed at row t - 1 (decays over (s, t - 1]), then moved down one row
    a_next = _next_token(a)
    A_qk, A_qb = causal_gated_scores(q, k, g), causal_gated_scores(q, b, g)
    A_ak = _previous_token(causal_gated_scores(a_next, k, g), 0.0)
    A_ab = _previous_token(causal_gated_scores(a_next, b, g), 0.0)
    return A_qk, A_qb, A_ak, A_ab


def chunk_dplr_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    gk: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel form (the training form); same arguments and result as
    :func:`recurrent_dplr_delta_rule`, up to float rounding. ``T`` need not be a multiple of
    ``chunk_size`` (zero padding, ``gk = 0``, leaves the state unchanged). The per-channel decay
    scores are one batched matmul when the decays factor (see ``_chunk_scores``); 16 measured
    fastest on a CPU.

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    _check(q, k, v, a, b, gk)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    T, K, V = q.shape[1], q.shape[3], v.shape[-1]
    scale = K**-0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    C = chunk_size
    qc, kc, vc, ac, bc, gc = (split_chunks(x, C) for x in (q, k, v, a, b, gk))  # [B, H, n, C, .]
    qc = qc * scale
    from_start = gc.cumsum(-2)  # log decay from the chunk start through t (no differences)
    factored = bool((from_start[..., -1, :] >= -FACTORED_DECAY_LIMIT).all())
    A_qk, A_qb, A_ak, A_ab = _chunk_scores(qc, ac, kc, bc, gc, from_start, factored)
    a_decay = ac * _previous_token(from_start, 0.0).exp()  # a_t * decay(chunk start -> t - 1)
    q_decay = qc * from_start.exp()  # q_t * decay(chunk start -> t)
    # (I - A_ab) U = A_ak V + a_decay S_0, A_ab strictly lower: a unit lower-triangular solve
    # (it reads only the strict lower triangle of its matrix).
    rhs = torch.cat([A_ak @ vc, a_decay], dim=-1)
    sol = torch.linalg.solve_triangular(-A_ab, rhs, upper=False, unitriangular=True)
    u_part, w_part = sol[..., :V], sol[..., V:]  # U = u_part + w_part S_0
    # decay(s -> chunk end): a suffix sum, or a difference where every total is > -40 (finite
    # values, error < 40 float32 ulps of 1, see FACTORED_DECAY_LIMIT)
    to_end = (from_start[..., -1:, :] - from_start if factored else suffix_sum(gc)).exp()
    k_end, b_end = kc * to_end, bc * to_end
    total = from_start[..., -1, :, None].exp()  # [B, H, n, K, 1] decay over the whole chunk
    # Per chunk S' = diag(d) S + K^T V + B^T U with U = u_part + w_part S, i.e.
    # S' = (diag(d) + B^T w_part) S + (K^T V + B^T u_part): every product but one is batched over
    # the chunks before the loop, and the low-rank reads after it.
    transition = b_end.transpose(-1, -2) @ w_part  # [B, H, n, K, K]
    write = k_end.transpose(-1, -2) @ vc + b_end.transpose(-1, -2) @ u_part  # [B, H, n, K, V]
    states = []
    # unbind, not indexing: the backward of x[:, :, i] zero-fills a full-size gradient per chunk
    for t_i, w_i, d_i in zip(*(x.unbind(2) for x in (transition, write, total))):
        states.append(S)
        S = S * d_i + t_i @ S + w_i
    entering = torch.stack(states, dim=2)  # [B, H, n, K, V] the state entering each chunk
    lowrank = u_part + w_part @ entering
    o = q_decay @ entering + A_qk @ vc + A_qb @ lowrank
    o = merge_chunks(o, T)
    return o.to(dtype), S


def dplr_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    gk: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 16,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch: ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else chunk);
    ``backend`` "torch" / "fla" / "auto" (fla's Triton ``chunk_dplr_delta_rule`` /
    ``fused_recurrent_dplr_delta_rule`` on CUDA when fla is installed, else the torch forms).

    Returns ``(o [B, T, H, V], final_state [B, H, K, V] float32)``. Raises ValueError on an
    unknown mode / backend, or backend "fla" where the kernels cannot run.
    """
    mode = resolve_mode(mode, q.shape[1])
    if use_fla(backend, q):
        if mode == "chunk":
            from fla.ops.generalized_delta_rule import chunk_dplr_delta_rule as fla_op
        else:
            from fla.ops.generalized_delta_rule import fused_recurrent_dplr_delta_rule as fla_op
        init = None if initial_state is None else initial_state.float()
        o, S = fla_op(
            *(t.contiguous() for t in (q, k, v, a, b)),
            gk=gk.float().contiguous(),
            scale=q.shape[-1] ** -0.5 if scale is None else scale,
            initial_state=init,
            output_final_state=True,
        )
        return o, S.float()
    if mode == "chunk":
        return chunk_dplr_delta_rule(
            q, k, v, a, b, gk, scale=scale, initial_state=initial_state, chunk_size=chunk_size
        )
    return recurrent_dplr_delta_rule(q, k, v, a, b, gk, scale=scale, initial_state=initial_state)
