"""The diagonal-plus-low-rank (DPLR) delta rule: RWKV-7's state update (Peng et al., 2025,
"RWKV-7 'Goose' with Expressive Dynamic State Evolution", eq. 16-18; fla's generalized delta rule).

    S_t = (diag(exp(gk_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T      S: [K, V] per head
    o_t = scale * S_t^T q_t

The paper stores the transpose, ``S (diag(w) + a bᵀ) + v kᵀ``; here ``gk = log w``, ``a = -κ̂``,
``b = κ̂ · iclr`` (fla's convention). The low-rank term reads the *undecayed* previous state.
Two exact forms, checked against fla's ``fla.ops.generalized_delta_rule.dplr.naive``: a
token-by-token recurrence (streaming) and a chunk-parallel form (training), laid out as fla's
``chunk_dplr_delta_rule`` (Triton). Within a chunk the low-rank reads ``u_t = a_t^T S_{t-1}``
solve the unit lower-triangular system ``(I - A_ab) U = A_ak V + (a * exp(b_{t-1})) S_0``; its
inverse ``(I - A_ab)^{-1}`` (the UT transform of the WY representation: Yang et al., 2024,
"Parallelizing Linear Transformers with the Delta Rule over Sequence Length", section 3.3, with
per-channel decay; fla's ``prepare_wy_repr_fwd``) is one triangular solve for all chunks, and
every product that does not depend on the carried state is batched over all chunks too; only
the ``T / chunk_size`` state updates ``S' = (diag(d) + B^T W) S + (K^T V + B^T U)`` are
sequential, one ``[K, K] x [K, V]`` product each. Every decay factor ``exp(sum of gk over a segment)`` is either factored
(``exp(b_t) exp(-b_s)``, when every chunk's total log decay is >= -40) or a segment sum
(``ops.gla.chunk``), so ``gk = -inf`` (a full reset) gives exact zeros, never ``inf - inf``.

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
from swar_bench.mechanisms.ops.precision import float32_op


def _check(q, k, v, a, b, gk) -> None:
    if q.dim() != 4 or any(x.shape != q.shape for x in (k, a, b, gk)) or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            "expected q, k, a, b, gk [B, T, H, K] and v [B, T, H, V]; got "
            + ", ".join(
                f"{n} {tuple(x.shape)}"
                for n, x in zip(["q", "k", "v", "a", "b", "gk"], (q, k, v, a, b, gk))
            )
        )


@float32_op
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


class _UnitLowerInverse(torch.autograd.Function):
    """``(I - A)^{-1}`` of strictly lower-triangular ``A [N, C, C]`` (the UT transform of Yang et
    al., 2024, section 3.3; fla's ``prepare_wy_repr_fwd``), by forward substitution
    (``torch.linalg.solve_triangular`` against the identity, for all chunks in one call).
    Backward: ``dA = T^T dT T^T`` (the entries of ``dA`` on and above the diagonal are not
    zeroed; ``A`` must come out of a mask that zeroes them).

    Not ``sum_{j < C} A^j`` by repeated squaring (``(I + A)(I + A^2)(I + A^4)...``): as fast
    here, but the powers of ``A`` cancel: keys repeated along the chunk with ``iclr`` near 1 give
    ``A_ab`` entries near -1, whose powers grow like binomial coefficients while the inverse stays
    near ``+-1`` (4e-4 relative error of the gradients, against 8e-7 by substitution)."""

    @staticmethod
    def forward(ctx, A: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        inverse = torch.linalg.solve_triangular(
            -A, eye.expand_as(A), upper=False, unitriangular=True
        )
        ctx.save_for_backward(inverse)
        return inverse

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (inverse,) = ctx.saved_tensors
        return inverse.mT @ grad @ inverse.mT


class _StateScan(torch.autograd.Function):
    """The states entering each chunk of ``S_{i+1} = (diag(d_i) + M_i) S_i + W_i``:
    ``M [N, n, K, K]``, ``d [N, n, K]``, ``W [N, n, K, V]``, ``S_0 [N, K, V]`` ->
    ``(entering [N, n, K, V], S_n [N, K, V])``. One ``baddbmm`` per chunk both ways; the gradient
    of every ``M_i`` is one batched product after the backward loop (``dM_i = dS_{i+1} S_i^T``)."""

    @staticmethod
    def forward(ctx, M, d, W, S):
        M = M.clone()
        M.diagonal(dim1=-2, dim2=-1).add_(d)
        entering = torch.empty_like(W)
        for i in range(M.shape[1]):
            entering[:, i] = S
            S = torch.baddbmm(W[:, i], M[:, i], S)
        ctx.save_for_backward(M, entering)
        return entering, S

    @staticmethod
    def backward(ctx, grad_entering, grad_final):
        M, entering = ctx.saved_tensors
        grad_W = torch.empty_like(entering)
        grad = grad_final
        for i in reversed(range(M.shape[1])):
            grad_W[:, i] = grad
            grad = torch.baddbmm(grad_entering[:, i], M[:, i].mT, grad)
        grad_M = grad_W @ entering.mT
        return grad_M, grad_M.diagonal(dim1=-2, dim2=-1), grad_W, grad


def _chunk_scores(q, a, k, b, g, factors=None) -> torch.Tensor:
    """The in-chunk scores of chunked ``[B, H, n, C, K]`` inputs with per-channel decays, as one
    ``[B, H, n, 2C, 2C]`` block matrix ``[[A_qk, A_qb], [A_ak, A_ab]]``:
    ``A_qk, A_qb [t, s] = sum_c q_tc (k or b)_sc exp(g_{s+1} + .. + g_t)_c`` for ``s <= t``,
    and ``A_ak, A_ab`` the same for ``a`` over ``(s, t - 1]``, ``s < t`` (the low-rank read at t
    sees the state after t - 1), zero elsewhere. When every chunk's total log decay is at least
    ``-FACTORED_DECAY_LIMIT`` (always for RWKV-7's decays, ``>= -e^{-1/2}`` per token, at
    ``C <= 64``) the decays factor as ``exp(b_t) exp(-b_s)`` (``b`` the log decay from the chunk
    start) and ``factors = (q exp(b_t), a exp(b_{t-1}), [k exp(-b_s); b exp(-b_s)])`` give the
    block matrix in one batched matmul; with ``factors = None`` the blocks come from
    ``ops.gla.chunk.causal_gated_scores`` (segment sums where needed)."""
    C = g.shape[-2]
    if factors is not None:
        q_decay, a_decay, keys = factors
        causal = torch.ones(C, C, device=g.device)
        mask = torch.cat([causal.tril(), causal.tril(-1)]).repeat(1, 2)  # strictly before t for a
        # every factor is below e^40, so the masked products are finite: a multiply masks them
        return torch.cat([q_decay, a_decay], dim=-2) @ keys.mT * mask
    # a_t's scores placed at row t - 1 (decays over (s, t - 1]), then moved down one row
    a_next = _next_token(a)
    top = torch.cat([causal_gated_scores(q, k, g), causal_gated_scores(q, b, g)], dim=-1)
    bottom = torch.cat([causal_gated_scores(a_next, k, g), causal_gated_scores(a_next, b, g)], -1)
    return torch.cat([top, _previous_token(bottom, 0.0)], dim=-2)


@float32_op
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
    ``chunk_size`` (zero padding, ``gk = 0``, leaves the state unchanged). The four in-chunk
    score matrices are one batched matmul when the decays factor (see ``_chunk_scores``); 16
    measured fastest on a CPU (against 8 and 32, at ``K = V = 32``).

    Returns:
        ``(o [B, T, H, V] in v's dtype, final_state [B, H, K, V] float32)``.

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    _check(q, k, v, a, b, gk)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K**-0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    C = chunk_size
    qc, kc, vc, ac, bc, gc = (split_chunks(x, C) for x in (q, k, v, a, b, gk))  # [B, H, n, C, .]
    n = qc.shape[2]
    from_start = gc.cumsum(-2)  # log decay from the chunk start through t (no differences)
    factored = bool((from_start[..., -1, :] >= -FACTORED_DECAY_LIMIT).all())
    decay = from_start.exp()  # decay(chunk start -> t)
    total = decay[..., -1, :]  # [B, H, n, K] decay over the whole chunk
    if factored:  # every decay in [e^-40, 1]: products of factors, one exp
        inverse_decay = decay.reciprocal()
        keys = torch.cat([kc * inverse_decay, bc * inverse_decay], dim=-2)  # [B, H, n, 2C, K]
        keys_end = keys * total.unsqueeze(-2)  # [k; b] * decay(t -> chunk end)
        before = _previous_token(decay, 1.0)  # decay(chunk start -> t - 1)
    else:  # segment sums: a -inf log decay gives exact zeros, never inf * 0
        to_end = suffix_sum(gc).exp()
        keys_end = torch.cat([kc * to_end, bc * to_end], dim=-2)
        before = _previous_token(from_start, 0.0).exp()
    q_decay, a_decay = qc * decay, ac * before
    scores = _chunk_scores(qc, ac, kc, bc, gc, (q_decay, a_decay, keys) if factored else None)
    # [A_qk; A_ak], A_qb, A_ab; split, not sliced: the backward of a slice zero-fills a full size
    A_k, A_b = scores.split(C, dim=-1)
    A_qb, A_ab = A_b.split(C, dim=-2)
    A_qk_v, A_ak_v = (A_k @ vc).split(C, dim=-2)  # A_qk V, A_ak V
    # (I - A_ab) U = A_ak V + a_decay S_0, A_ab strictly lower: U = u_part + w_part S_0 with
    # [u_part, w_part] = (I - A_ab)^{-1} [A_ak V, a_decay]
    inverse = _UnitLowerInverse.apply(A_ab.flatten(0, 2)).view(A_ab.shape)
    sol = inverse @ torch.cat([A_ak_v, a_decay], dim=-1)  # [B, H, n, C, V + K]
    # Per chunk S' = diag(d) S + K^T V + B^T U with U = u_part + w_part S, i.e.
    # S' = (diag(d) + B^T w_part) S + (K^T V + B^T u_part): every product but one is batched over
    # the chunks before the scan, and the reads of the entering states after it.
    k_end, b_end = keys_end.flatten(0, 2).split(C, dim=-2)
    b_u, b_w = (b_end.mT @ sol.flatten(0, 2)).split([V, K], dim=-1)  # B^T u_part, B^T w_part
    write = torch.baddbmm(b_u, k_end.mT, vc.flatten(0, 2))  # [B H n, K, V]
    entering, S = _StateScan.apply(
        b_w.view(B * H, n, K, K), total.flatten(0, 1), write.view(B * H, n, K, V), S.flatten(0, 1)
    )
    # o = q_decay E + A_qk V + A_qb (u_part + w_part E) = (q_decay + A_qb w_part) E + ...
    qb_u, qb_w = (A_qb @ sol).split([V, K], dim=-1)
    o = torch.baddbmm(
        (A_qk_v + qb_u).flatten(0, 2),
        (q_decay + qb_w).flatten(0, 2),
        entering.flatten(0, 1),
        beta=scale,
        alpha=scale,
    ).view(B, H, n, C, V)
    o = merge_chunks(o, T)
    return o.to(dtype), S.unflatten(0, (B, H)).clone()  # not a view (FSDP2 hooks on outputs)


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
