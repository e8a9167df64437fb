"""The chunk-parallel form of gated linear attention (the training form; Yang et al., 2024,
"Gated Linear Attention Transformers with Hardware-Efficient Training", section 4).

Within a chunk of ``C`` tokens, token ``i`` reads token ``j <= i`` through the per-channel decay
``exp(sum_{j < l <= i} g_l)`` (:func:`causal_gated_scores`: a factored matmul where the decays
allow it, segment sums where a ``-inf`` log decay or a strong burst does not); the carried state
is read out as ``(q_i * exp(sum_{l <= i} g_l)) S``. Only the ``T / C`` state updates are
sequential.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from swar_bench.mechanisms.ops.chunking import initial_state_of, merge_chunks, segsum, split_chunks
from swar_bench.mechanisms.ops.gla.recurrent import check_gla_shapes
from swar_bench.mechanisms.ops.precision import float32_op


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
"""In-sub-chunk decays are factored (``exp(b_i) * exp(-b_j)`` with ``b`` the running sum of log
decays from the sub-chunk's start, a matmul) only in a sub-chunk whose total log decay is at least
``-FACTORED_DECAY_LIMIT`` in every channel, so the factors stay below ``e^40``; ``b`` is summed in
float64, so its difference keeps the small decays next to a burst (float32 running sums near
-40 would lose up to about 1e-5 relative)."""


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


@dataclass(frozen=True)
class InChunkDecays:
    """What the in-chunk decays of chunked log decays ``g [..., C, K]`` contribute to scores
    ``sum_c q_ic k_jc exp(sum_{j < l <= i} g_lc)``, computed once per ``g`` (KDA needs two score
    matrices with the same decays); see :func:`in_chunk_decays` and :meth:`scores`."""

    g: torch.Tensor  # [..., s, c, K], the log decays in sub-chunks
    factored: torch.Tensor  # [..., s] bool, the sub-chunks whose decays are factored
    q_factor: torch.Tensor  # [..., s, c, K] exp(b), b from the sub-chunk start (0 if unfactored)
    k_factor: torch.Tensor  # [..., s, c, K] exp(-b)
    # between sub-chunks (None when the chunk is one sub-chunk):
    from_start: torch.Tensor | None  # [..., s, c, K] exp(sum from the sub-chunk start to i)
    to_end: torch.Tensor | None  # [..., s, c, K] exp(sum after j to the sub-chunk end)
    between: torch.Tensor | None  # [..., s, s, K] exp(sum over sub-chunks r < m < p), 0 if r >= p

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """``q, k [..., C, K]`` -> ``[..., C, C]``, the decayed scores for ``j <= i``, 0 above."""
        *lead, C, K = q.shape
        s, c = self.g.shape[-3:-1]
        qs, ks = q.reshape(*lead, s, c, K), k.reshape(*lead, s, c, K)
        causal = torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
        intra = (qs * self.q_factor) @ (ks * self.k_factor).transpose(-1, -2)
        intra = intra.masked_fill(~causal, 0.0)  # [..., s, c, c]
        if not bool(self.factored.all()):
            rows = (~self.factored).reshape(-1).nonzero().squeeze(1)
            q_r, k_r, g_r = (x.reshape(-1, c, K).index_select(0, rows) for x in (qs, ks, self.g))
            exact = gated_scores(q_r, k_r, segsum(g_r, dim=-2).exp())
            intra = intra.reshape(-1, c, c).index_copy(0, rows, exact).reshape(intra.shape)
        if s == 1:
            return intra.reshape(*lead, C, C)
        q_side = (qs * self.from_start).unsqueeze(-3) * self.between.unsqueeze(-2)  # [.., p, r, c, K]
        k_side = (ks * self.to_end).unsqueeze(-4)  # [..., 1, r, c, K]
        cross = q_side @ k_side.transpose(-1, -2)  # [..., p, r, c, c]
        diagonal = torch.eye(s, dtype=torch.bool, device=q.device)[:, :, None, None]
        full = torch.where(diagonal, intra.unsqueeze(-3), cross)
        return full.transpose(-3, -2).reshape(*lead, C, C)


def in_chunk_decays(g: torch.Tensor, sub_chunk: int = 32) -> InChunkDecays:
    """The in-chunk decays of chunked log decays ``g [..., C, K]`` (values in ``[-inf, 0]``).

    Two levels, as fla's kernels. Between sub-chunks ``p > r`` the decay factors exactly into
    three segment sums, each <= 0, so nothing overflows: ``(from sub-chunk p's start to i) +
    (whole sub-chunks r < m < p) + (after j to r's end)``, and the scores are a batched matmul.
    Inside a sub-chunk the decays are factored into a matmul where that is accurate (see
    ``FACTORED_DECAY_LIMIT``); a sub-chunk with a ``-inf`` or a strong burst takes them from
    ``chunking.segsum`` instead (``[c, c, K]``, that sub-chunk only). The sub-chunk length is
    chosen by :func:`sub_chunk_for` (strong decays get shorter ones).
    """
    *lead, C, K = g.shape
    c = sub_chunk_for(g, sub_chunk)
    s = C // c
    gs = g.reshape(*lead, s, c, K)
    from_start = gs.cumsum(-2)  # sums from each sub-chunk's start: no differences
    factored = (from_start[..., -1, :] >= -FACTORED_DECAY_LIMIT).all(-1)  # [..., s]
    # b_i - b_j is a difference of running sums: summed in float64 it keeps the small decays
    # after a burst exact. Sub-chunks that may not be factored get b = 0 (replaced in scores).
    b = torch.where(factored[..., None, None], gs.double().cumsum(-2), 0.0)
    q_factor, k_factor = b.exp().to(g.dtype), (-b).exp().to(g.dtype)
    if s == 1:
        return InChunkDecays(gs, factored, q_factor, k_factor, None, None, None)
    between = segsum(from_start[..., -1, :], dim=-2)  # [..., s, s, K] over sub-chunk totals
    # sub-chunk p reads r < p through the totals of r < m < p: row p - 1 of the segment sum
    between = torch.cat(
        [torch.full_like(between[..., :1, :, :], float("-inf")), between[..., :-1, :, :]], -3
    )
    return InChunkDecays(
        gs,
        factored,
        q_factor,
        k_factor,
        from_start.exp(),
        suffix_sum(gs).exp(),
        between.exp(),
    )


def causal_gated_scores(
    q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, sub_chunk: int = 32
) -> torch.Tensor:
    """``q, k, g [..., C, K]`` -> ``[..., C, C]``: ``sum_c q_ic k_jc exp(sum_{j < l <= i} g_lc)``
    for ``j <= i``, 0 above the diagonal; see :func:`in_chunk_decays`."""
    return in_chunk_decays(g, sub_chunk).scores(q, k)


@float32_op
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
