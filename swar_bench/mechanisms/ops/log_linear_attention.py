"""Log-linear attention (Guo et al., 2025, "Log-Linear Attention"): linear attention whose memory is
a Fenwick tree of ``O(log T)`` states, one per power-of-two bucket of the past, each read with its
own data-dependent weight.

    o_t = scale * sum_{s <= t} exp(g_{s+1} + ... + g_t) * lambda_t[level(t, s)] * (q_t . k_s) v_s
    level(t, s) = bit_length(t XOR s)          (0-based positions; level 0 is s = t)

(the paper's eq. 5-7 with Mamba-2's scalar decay, as fla's ``naive_log_linear_attn``; levels as
in its level masks). For the query at position ``p`` the keys ``s < p`` fall into the buckets of
the set bits of ``p``: bucket ``l`` (``l >= 1``, bit ``l - 1`` of ``p`` set) holds the ``2^(l-1)``
keys that agree with ``p`` above bit ``l - 1`` and have that bit clear. The state after ``p``
tokens is those buckets, ``S[l] = sum_{s in bucket l} exp(g_{s+1} + ... + g_{p-1}) k_s v_s^T``,
``bit_length(p)`` of them: it grows as ``log2 T`` (``fixed_size_state = False``). Moving to
``p + 1`` merges the new token with the buckets of the trailing ones of ``p`` into one bucket
(a binary counter's carry).

Two exact forms: a token-by-token recurrence (streaming), and a chunk-parallel form for chunks
aligned to multiples of ``chunk_size`` (a power of two): levels ``<= log2(chunk_size)`` stay inside
a chunk (masked attention with the level weights), higher ones are the same Fenwick tree over
whole chunks; decays come from ``ops.chunking.chunk_decays`` (segment sums, ``g = -inf`` safe).
Tokens before the first aligned position and after the last whole chunk run the recurrence.

Layout: ``q, k [B, T, H, K]``, ``v [B, T, H, V]``, ``g [B, T, H]`` (log decay), ``level_scales
[B, T, H, L]``; state ``(levels [B, H, bit_length(p), K, V] float32, position [B] int64)``, every
row at the same position ``p``.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode
from swar_bench.mechanisms.ops.chunking import chunk_decays, split_chunks
from swar_bench.mechanisms.ops.precision import float32_op

LogLinearState = tuple[torch.Tensor, torch.Tensor]


def levels_needed(seq_len: int) -> int:
    """Level weights a query at positions ``0 .. seq_len - 1`` reads: ``bit_length(seq_len - 1) + 1``
    (levels 0 .. bit_length)."""
    return max(seq_len - 1, 0).bit_length() + 1


def _trailing_ones(x: int) -> int:
    return (~x & (x + 1)).bit_length() - 1


def _prepare(q, k, v, g, level_scales, initial_state):
    if (
        q.dim() != 4
        or k.shape != q.shape
        or v.shape[:3] != q.shape[:3]
        or g.shape != q.shape[:3]
        or level_scales.dim() != 4
        or level_scales.shape[:3] != q.shape[:3]
    ):
        raise ValueError(
            f"expected q, k [B, T, H, K], v [B, T, H, V], g [B, T, H], level_scales [B, T, H, L];"
            f" got q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)},"
            f" level_scales {tuple(level_scales.shape)}"
        )
    B, T, H, K = q.shape
    if initial_state is None:
        levels = q.new_zeros(B, H, 0, K, v.shape[-1], dtype=torch.float32)
        position = 0
    else:
        levels, pos = initial_state
        position = int(pos[0]) if pos.numel() else 0
        if pos.numel() and bool((pos != position).any()):
            raise ValueError(
                f"every row must be at the same position, got positions {pos.tolist()}"
            )
        if levels.shape[2] != position.bit_length():
            raise ValueError(
                f"a state at position {position} has {position.bit_length()} levels, got "
                f"{levels.shape[2]}"
            )
    if level_scales.shape[-1] < levels_needed(position + T):
        raise ValueError(
            f"level_scales has {level_scales.shape[-1]} levels; positions up to {position + T - 1} "
            f"need {levels_needed(position + T)}"
        )
    return list(levels.float().unbind(2)), position


def _finish(lv, position, q, v, outs) -> tuple[torch.Tensor, LogLinearState]:
    B, _, H, K = q.shape
    if lv:
        levels = torch.stack(lv, dim=2)
    else:
        levels = q.new_zeros(B, H, 0, K, v.shape[-1], dtype=torch.float32)
    pos = torch.full((B,), position, dtype=torch.int64, device=q.device)
    o = torch.cat(outs, dim=1) if outs else v.new_zeros(v.shape)
    return o.to(v.dtype), (levels, pos)


def _recurrent_steps(q, k, v, g, lam, lv, position):
    """The recurrence over ``q, k, v [B, T, H, .]`` (float32, q scaled) from buckets ``lv`` at
    ``position``; returns ``(o [B, T, H, V], lv, position)``."""
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, g_t, lam_t in zip(*(x.unbind(1) for x in (q, k, v, g, lam))):
        decay = g_t.exp()[..., None, None]
        lv = [S * decay for S in lv]
        new = k_t[..., :, None] * v_t[..., None, :]  # level 0: the token itself
        stacked = torch.stack([new, *lv], dim=2)  # [B, H, 1 + levels, K, V]
        weights = lam_t[..., : stacked.shape[2]]
        outs.append(torch.einsum("bhk,bhl,bhlkv->bhv", q_t, weights, stacked))
        carry = _trailing_ones(position)  # merge the token with levels 1..carry into carry + 1
        for level in range(carry):
            new = new + lv[level]
            lv[level] = torch.zeros_like(new)
        lv = lv + [new] if carry == len(lv) else [*lv[:carry], new, *lv[carry + 1 :]]
        position += 1
    o = torch.stack(outs, dim=1) if outs else v[:, :0]
    return o, lv, position


@float32_op
def recurrent_log_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    level_scales: torch.Tensor,
    scale: float = 1.0,
    initial_state: LogLinearState | None = None,
) -> tuple[torch.Tensor, LogLinearState]:
    """Token-by-token recurrence (the streaming form).

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; g: ``[B, T, H]`` log decay (<= 0, -inf
        forgets everything); level_scales: ``[B, T, H, L]`` weight of each level at each query,
        ``L >= levels_needed(position + T)``; scale: query scale (fla's default 1);
        initial_state: ``(levels, position)`` or None (position 0, no levels).

    Returns:
        ``(o [B, T, H, V], (levels [B, H, bit_length(position + T), K, V], position [B]))``.

    Raises:
        ValueError: on inconsistent shapes, rows at different positions, a level count that does
            not match the position, or too few level scales.
    """
    lv, position = _prepare(q, k, v, g, level_scales, initial_state)
    x = (q.float() * scale, k.float(), v.float(), g.float(), level_scales.float())
    o, lv, position = _recurrent_steps(*x, lv, position)
    return _finish(lv, position, q, v, [o])


def _level_matrix(C: int, device) -> torch.Tensor:
    """``[C, C]`` int64: ``bit_length(i XOR j)`` (the level of key j for query i in one chunk)."""
    i = torch.arange(C)
    x = (i[:, None] ^ i[None, :]).tolist()
    return torch.tensor([[e.bit_length() for e in row] for row in x], device=device)


def _chunk_steps(q, k, v, g, lam, lv, position, C):
    """Whole aligned chunks: ``q, k, v, g, lam [B, n * C, H, .]``, ``position % C == 0``."""
    c0 = C.bit_length() - 1  # levels 0..c0 stay inside a chunk
    qc, kc, vc, gc, lc = (split_chunks(x, C) for x in (q, k, v, g, lam))  # [B, H, n, C, .]
    B, H, n = qc.shape[:3]
    d = chunk_decays(gc)
    level = _level_matrix(C, q.device).expand(B, H, n, C, C)
    lam_intra = torch.gather(lc[..., : c0 + 1], -1, level)  # [B, H, n, C, C]
    o = (d.scores(qc, kc) * lam_intra) @ vc
    dS = d.decay_keys(kc).transpose(-1, -2) @ vc  # [B, H, n, K, V] the chunk as one bucket
    chunk_lv = lv[c0:]  # buckets above the chunk: a Fenwick tree over whole chunks
    entering = []
    for j, (dS_j, total_j) in enumerate(zip(dS.unbind(2), d.total.unbind(2))):
        entering.append(chunk_lv)
        chunk_lv = [S * total_j for S in chunk_lv]
        carry = _trailing_ones(position // C + j)
        new = dS_j + sum(chunk_lv[:carry], torch.zeros_like(dS_j))
        zeros = [torch.zeros_like(new)] * carry
        chunk_lv = zeros + [new] + chunk_lv[carry + 1 :]
    n_levels = max(len(e) for e in entering)
    if n_levels:
        zero = torch.zeros_like(dS[:, :, 0])
        padded = [torch.stack(e + [zero] * (n_levels - len(e)), dim=2) for e in entering]
        S_in = torch.stack(padded, dim=2)  # [B, H, n, levels, K, V]
        lam_inter = lc[..., c0 + 1 : c0 + 1 + n_levels]  # [B, H, n, C, levels]
        o = o + torch.einsum("bhnck,bhnlkv,bhncl->bhncv", d.decay_queries(qc), S_in, lam_inter)
    lv = [torch.zeros_like(dS[:, :, 0])] * c0 + chunk_lv
    return o.reshape(B, H, n * C, -1).transpose(1, 2), lv, position + n * C


@float32_op
def chunk_log_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    level_scales: torch.Tensor,
    scale: float = 1.0,
    initial_state: LogLinearState | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, LogLinearState]:
    """Chunk-parallel form (the training form); same arguments and result as
    :func:`recurrent_log_linear_attention`, up to float rounding. Tokens before the first
    multiple of ``chunk_size`` and after the last whole chunk run the recurrence.

    Raises:
        ValueError: as the recurrent form, and when ``chunk_size`` is not a power of two.
    """
    if chunk_size < 1 or chunk_size & (chunk_size - 1):
        raise ValueError(f"chunk_size must be a power of two, got {chunk_size}")
    lv, position = _prepare(q, k, v, g, level_scales, initial_state)
    x = (q.float() * scale, k.float(), v.float(), g.float(), level_scales.float())
    T = q.shape[1]
    head = min((-position) % chunk_size, T)
    body = (T - head) // chunk_size * chunk_size
    outs = []
    for start, stop, steps in (
        (0, head, _recurrent_steps),
        (head, head + body, lambda *a: _chunk_steps(*a, chunk_size)),
        (head + body, T, _recurrent_steps),
    ):
        if stop > start:
            o, lv, position = steps(*(t[:, start:stop] for t in x), lv, position)
            outs.append(o)
    return _finish(lv, position, q, v, outs)


def log_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    level_scales: torch.Tensor,
    scale: float = 1.0,
    initial_state: LogLinearState | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
) -> tuple[torch.Tensor, LogLinearState]:
    """Dispatch on ``mode``: "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else
    chunk). Both are torch code and run on CUDA too (fla's ``chunk_log_linear_attn`` keeps its
    own state type, not the bucket list carried here)."""
    if resolve_mode(mode, q.shape[1]) == "chunk":
        return chunk_log_linear_attention(
            q, k, v, g, level_scales, scale, initial_state, chunk_size
        )
    return recurrent_log_linear_attention(q, k, v, g, level_scales, scale, initial_state)
