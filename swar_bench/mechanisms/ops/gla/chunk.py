"""The chunk-parallel form of gated linear attention (the training form; Yang et al., 2024,
"Gated Linear Attention Transformers with Hardware-Efficient Training", section 4).

Within a chunk of ``C`` tokens, token ``i`` reads token ``j <= i`` through the per-channel decay
``exp(sum_{j < l <= i} g_l)``, always taken from sums over segments (never a difference of
cumulative sums, so a ``-inf`` log decay or a large burst stays exact); the carried state is read out as
``(q_i * exp(sum_{l <= i} g_l)) S``. Only the ``T / C`` state updates are sequential.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.chunking import initial_state_of, merge_chunks, segsum, split_chunks
from swar_bench.mechanisms.ops.gla.recurrent import check_gla_shapes


def gated_scores(q: torch.Tensor, k: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    """``sum_c q[..., i, c] k[..., j, c] decay[..., i, j, c]``: ``q, k [..., C, K]`` and
    ``decay [..., C, C, K]`` -> ``[..., C, C]``."""
    return (q.unsqueeze(-2) * k.unsqueeze(-3) * decay).sum(-1)


def suffix_sum(g: torch.Tensor) -> torch.Tensor:
    """``g [..., C, K]`` -> ``[..., C, K]`` with entry ``j`` = ``sum_{j < l < C} g_l`` (0 at the
    end): a sum of the segment itself, not a difference, so it is ``-inf``-safe."""
    after = torch.nn.functional.pad(g[..., 1:, :], (0, 0, 0, 1))
    return after.flip(-2).cumsum(-2).flip(-2)


FACTORED_DECAY_LIMIT = 40.0
"""In-sub-chunk decays are factored (``exp(b_i) * exp(-b_j)``, a matmul) only in a sub-chunk whose
total log decay is at least ``-FACTORED_DECAY_LIMIT`` in every channel: the factors
then stay below ``e^40`` and ``b`` (a running sum over at most one sub-chunk, |b| <= 40) carries an
absolute error below 40 float32 ulps of 1, i.e. < 3e-6 relative in each decay."""


def sub_chunk_for(g: torch.Tensor, sub_chunk: int = 32) -> int:
    """The sub-chunk length for chunked log decays ``g [..., C, K]``: the largest of ``sub_chunk``,
    ``sub_chunk / 2``, ... (at least 8) that divides ``C`` and lets every sub-chunk be factored
    (``FACTORED_DECAY_LIMIT``), else the smallest of them (its unfactorable sub-chunks take
    segment sums); ``C`` itself when none divides it."""
    C = g.shape[-2]
    sizes = [
        c
        for c in (sub_chunk >> i for i in range(8))
        if c >= min(8, sub_chunk) and c <= C and C % c == 0
    ]
    if not sizes:
        return C
    for c in sizes[:-1]:
        totals = g.unflatten(-2, (C // c, c)).sum(-2)
        if bool((totals >= -FACTORED_DECAY_LIMIT).all()):
            return c
    return sizes[-1]


def causal_gated_scores(
    q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, sub_chunk: int = 32
) -> torch.Tensor:
    """``q, k, g [..., C, K]`` -> ``[..., C, C]``: ``sum_c q_ic k_jc exp(sum_{j < l <= i} g_lc)``
    for ``j <= i``, 0 above the diagonal.

    Two levels, as fla's kernels. Between sub-chunks ``p > r`` of ``sub_chunk`` tokens the decay
    factors exactly into three segment sums, each <= 0, so nothing overflows:
    ``(from sub-chunk p's start to i) + (whole sub-chunks r < m < p) + (after j to r's end)``,
    and the scores are a batched matmul. Inside a sub-chunk the decays are factored into a
    matmul where that is accurate (see ``FACTORED_DECAY_LIMIT``); a sub-chunk with a ``-inf`` or
    a strong burst takes them from ``chunking.segsum`` instead (``[c, c, K]``, that sub-chunk only).
    The sub-chunk length is chosen by :func:`sub_chunk_for` (strong decays get shorter ones).
    """
    *lead, C, K = q.shape
    c = sub_chunk_for(g, sub_chunk)
    s = C // c
    qs, ks, gs = (x.reshape(*lead, s, c, K) for x in (q, k, g))
    from_start = gs.cumsum(-2)  # [..., s, c, K], sums from each sub-chunk's start
    factored = (from_start[..., -1, :] >= -FACTORED_DECAY_LIMIT).all(-1)  # [..., s]
    # sub-chunks that may not be factored get b = 0 here (finite values, replaced below)
    b = torch.where(factored[..., None, None], from_start, 0.0)
    causal = torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
    intra = ((qs * b.exp()) @ (ks * (-b).exp()).transpose(-1, -2)).masked_fill(~causal, 0.0)
    if not bool(factored.all()):
        rows = (~factored).reshape(-1).nonzero().squeeze(1)
        q_r, k_r, g_r = (x.reshape(-1, c, K).index_select(0, rows) for x in (qs, ks, gs))
        exact = gated_scores(q_r, k_r, segsum(g_r, dim=-2).exp())
        intra = intra.reshape(-1, c, c).index_copy(0, rows, exact).reshape(intra.shape)
    if s == 1:
        return intra.reshape(*lead, C, C)
    between = segsum(from_start[..., -1, :], dim=-2)  # [..., s, s, K] over sub-chunk totals
    # sub-chunk p reads r < p through the totals of r < m < p: row p - 1 of the segment sum
    between = torch.cat(
        [torch.full_like(between[..., :1, :, :], float("-inf")), between[..., :-1, :, :]], -3
    )
    q_side = (qs * from_start.exp()).unsqueeze(-3) * between.exp().unsqueeze(-2)  # [.., p, r, c, K]
    k_side = (ks * suffix_sum(gs).exp()).unsqueeze(-4)  # [..., 1, r, c, K]
    cross = q_side @ k_side.transpose(-1, -2)  # [..., p, r, c, c]
    diagonal = torch.eye(s, dtype=torch.bool, device=q.device)[:, :, None, None]
    full = torch.where(diagonal, intra.unsqueeze(-3), cross)
    return full.transpose(-3, -2).reshape(*lead, C, C)


def chunk_gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel form; same arguments and result as
    :func:`~swar_bench.mechanisms.ops.gla.recurrent.recurrent_gla`, up to float rounding.
    ``T`` need not be a multiple of ``chunk_size`` (zero padding, ``g = 0``, leaves the state
    unchanged). The in-chunk scores come from :func:`causal_gated_scores`.

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    check_gla_shapes(q, k, v, g)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtype = v.dtype
    T, K = q.shape[1], q.shape[-1]
    scale = K**-0.5 if scale is None else scale
    S = initial_state_of(q, v, initial_state)
    if T == 0:
        return v.new_zeros(v.shape), S
    qc, kc, vc, gc = (split_chunks(x, chunk_size) for x in (q, k, v, g))  # [B, H, n, C, ...]
    qc = qc * scale
    o = causal_gated_scores(qc, kc, gc) @ vc  # in-chunk
    dS = (kc * suffix_sum(gc).exp()).transpose(-1, -2) @ vc  # [B, H, n, K, V]
    b = gc.cumsum(-2)  # [B, H, n, C, K]: log decay from the chunk start, no differences taken
    states = []
    # unbind, not indexing: the backward of x[:, :, i] zero-fills a full-size gradient per chunk
    for a_i, dS_i in zip(b[..., -1, :, None].exp().unbind(2), dS.unbind(2)):
        states.append(S)
        S = S * a_i + dS_i
    o = o + (qc * b.exp()) @ torch.stack(states, dim=2)
    return merge_chunks(o, T).to(dtype), S
