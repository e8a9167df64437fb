"""What every chunk-parallel form of a decayed linear recurrence shares: the initial state, the
split of a sequence into zero-padded chunks, and the decays within a chunk, computed so that an
extreme log decay (-2000, -inf) costs neither precision nor a NaN.

A chunk form of ``S_t = diag(exp(g_t)) S_{t-1} + (write of token t)`` (Yang et al., 2024,
"Gated Linear Attention", section 3; fla's layout ``[B, T, H, ...]``) needs four decays per
chunk of ``C`` tokens, each a sum of log decays ``g`` over a segment of the chunk:

==============  =====================================  ==========================================
field           log decay (``exp`` of it is stored)    used for
==============  =====================================  ==========================================
``within``      ``sum_{j < s <= i} g_s`` for j <= i,   the write of token j read at token i
                -inf for j > i (causal mask)           (intra-chunk attention)
``from_start``  ``sum_{s <= i} g_s``                   the entering state, read at token i
``to_end``      ``sum_{i < s < C} g_s``                the write of token i, at the chunk's end
``total``       ``sum_{s < C} g_s``                    the entering state, at the chunk's end
==============  =====================================  ==========================================

Numerics (the segment-sum formulation of Dao & Gu, 2024, "Transformers are SSMs", the ``segsum``
of their minimal SSD listing): every segment sum adds exactly the log decays of its segment; none
is a difference ``b_i - b_j`` of running sums ``b``. A difference loses the small decays next to a
large one (``b`` near -2000 has a float32 spacing of 1.2e-4, so ``exp(b_i - b_j)`` is off by up
to 1e-4 relative) and gives ``-inf - (-inf) = NaN`` after a log decay of -inf. Masking happens
before ``exp`` (the masked entries are -inf, not a large positive number that overflows), so all
decays lie in ``[0, 1]``. A log decay of -inf means "forget everything before this token", as
in the recurrence: its decays are exact zeros, and the backward pass stays finite (every gradient
through ``exp`` of -inf is ``0 * finite``).

Decays come in two shapes: scalar per head (``g [B, T, H]``: Mamba-2, RetNet, simple GLA, gated
delta rule) and per channel of the key dimension (``g [B, T, H, K]``: GLA, HGRN2, KDA), where
``S_t = diag(exp(g_t)) S_{t-1} + ...`` decays row ``k`` of the ``[K, V]`` state by
``exp(g_t[k])``. The per-channel ``within`` is ``[..., C, C, K]``: memory ``C * C * K`` floats
per chunk and head (C = 64, K = 64: 1 MiB), so per-channel forms may prefer a smaller chunk.

Typical use (a scalar- or per-channel-decay linear attention; see ``simple_gla.chunk_simple_gla``
and ``gated_delta_rule.chunk_gated_delta_rule``)::

    qc, kc, vc, gc = (split_chunks(x, C) for x in (q, k, v, g))   # [B, H, n, C, ...] float32
    d = chunk_decays(gc)
    o = d.scores(qc, kc) @ vc + d.decay_queries(qc) @ S_entering   # S_entering [B, H, n, K, V]
    S_next = S * d.total[:, :, i] + d.decay_keys(kc)[:, :, i].transpose(-1, -2) @ vc[:, :, i]
    o = merge_chunks(o, T)                                         # [B, T, H, V]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def initial_state_of(
    q: torch.Tensor, v: torch.Tensor, initial_state: torch.Tensor | None
) -> torch.Tensor:
    """The state ``[B, H, K, V]`` float32 to start from: ``initial_state`` (as float32) or zeros,
    for ``q [B, T, H, K]`` and ``v [B, T, H, V]``."""
    if initial_state is not None:
        return initial_state.float()
    B, _, H, K = q.shape
    return q.new_zeros(B, H, K, v.shape[-1], dtype=torch.float32)


def split_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """``x [B, T, H, ...]`` -> float32 ``[B, H, n, chunk_size, ...]`` with
    ``n = ceil(T / chunk_size)``, zero-padded at the end (a zero ``k``, ``v``, log decay ``g`` or
    ``beta`` leaves the state unchanged, so padding never changes the final state).

    Raises:
        ValueError: ``chunk_size < 1``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    B, T, H = x.shape[:3]
    pad = (-T) % chunk_size
    x = x.float().transpose(1, 2)
    if pad:
        x = torch.nn.functional.pad(x, (0, 0) * (x.dim() - 3) + (0, pad))
    return x.reshape(B, H, (T + pad) // chunk_size, chunk_size, *x.shape[3:])


def merge_chunks(x: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The inverse of :func:`split_chunks`: ``x [B, H, n, C, ...]`` -> ``[B, seq_len, H, ...]``
    (the padding dropped)."""
    B, H, n, C = x.shape[:4]
    return x.reshape(B, H, n * C, *x.shape[4:])[:, :, :seq_len].transpose(1, 2)


def segsum(g: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Segment sums of log decays: for ``g`` with ``C`` entries along ``dim``, the result has a new
    axis right after ``dim`` (``[..., C, ...]`` -> ``[..., C, C, ...]``) with
    ``out[..., i, j, ...] = sum_{j < s <= i} g[..., s, ...]`` for ``j <= i`` (0 on the diagonal)
    and ``-inf`` for ``j > i``.

    Each entry sums only its own segment (a cumulative sum down column ``j`` of a matrix masked to
    ``s > j`` before summing), never a difference of prefix sums; the Mamba-2 authors' stable
    ``segsum`` (Dao & Gu, 2024). Entries are -inf where the segment holds a -inf and never NaN;
    gradients are finite. :func:`decay_matrix` is ``exp`` of it with a cheaper backward.
    """
    dim = dim % g.dim()
    C = g.shape[dim]
    x = g.unsqueeze(dim + 1).expand(*g.shape[: dim + 1], C, *g.shape[dim + 1 :])
    idx = torch.arange(C, device=g.device)
    trailing = (1,) * (g.dim() - dim - 1)
    after = (idx[:, None] > idx[None, :]).view(C, C, *trailing)  # s > j
    x = x.masked_fill(~after, 0.0).cumsum(dim)
    return x.masked_fill(~(idx[:, None] >= idx[None, :]).view(C, C, *trailing), float("-inf"))


class _DecayMatrix(torch.autograd.Function):
    """``exp(segsum(g))`` over the last axis, ``[..., C] -> [..., C, C]``, built in place, with the
    gradient ``dg_s = sum_{i >= s > j} (dW * W)_{ij}`` (one cumulative sum, no flips)."""

    @staticmethod
    def forward(ctx, g: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(g.shape[-1], device=g.device)
        x = torch.where(idx[:, None] > idx[None, :], g[..., :, None], 0.0).cumsum_(-2)
        w = x.masked_fill_(idx[:, None] < idx[None, :], float("-inf")).exp_()
        ctx.save_for_backward(w)
        return w

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (w,) = ctx.saved_tensors
        idx = torch.arange(w.shape[-1], device=w.device)
        # r[i, c] = sum_{j <= c} (grad * w)[i, j]; dg_s = sum_{i >= s} r[i, s - 1] (dg_0 = 0)
        r = (grad * w).cumsum_(-1).masked_fill_(idx[:, None] <= idx[None, :], 0.0)
        return torch.nn.functional.pad(r.sum(-2)[..., :-1], (1, 0))


def decay_matrix(g: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``exp(segsum(g, dim))`` (values in ``[0, 1]``, zero above the diagonal), the same numbers as
    :func:`segsum` followed by ``exp``, with an analytic backward that touches the ``[C, C]``
    matrix three times instead of seven."""
    dim = dim % g.dim()
    if dim == g.dim() - 1:
        return _DecayMatrix.apply(g)
    return _DecayMatrix.apply(g.movedim(dim, -1)).movedim((-2, -1), (dim, dim + 1))


@dataclass(frozen=True)
class ChunkDecays:
    """Multiplicative decays (in ``[0, 1]``, float32) of chunks of ``C`` tokens; see the module
    docstring for the sums they are ``exp`` of. Shapes for chunked log decays ``[B, H, n, C]``
    (scalar per head) / ``[B, H, n, C, K]`` (per channel):

    - ``within``: ``[B, H, n, C, C]`` / ``[B, H, n, C, C, K]``, zero above the diagonal;
    - ``from_start``, ``to_end``: ``[B, H, n, C, 1]`` / ``[B, H, n, C, K]`` (broadcast against
      ``[B, H, n, C, K]`` queries / keys);
    - ``total``: ``[B, H, n, 1, 1]`` / ``[B, H, n, K, 1]`` (broadcast against a ``[.., K, V]``
      state).
    """

    within: torch.Tensor
    from_start: torch.Tensor
    to_end: torch.Tensor
    total: torch.Tensor

    @property
    def per_channel(self) -> bool:
        """Whether the decays are per key channel (``[..., K]``) rather than scalar per head."""
        return self.within.dim() == 6

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Decayed causal scores ``[B, H, n, C, C]``: entry ``(i, j)`` is
        ``sum_c q[i, c] k[j, c] within[i, j(, c)]`` for ``j <= i``, 0 for ``j > i``;
        ``q, k [B, H, n, C, K]``."""
        if self.per_channel:
            return torch.einsum("bhnic,bhnjc,bhnijc->bhnij", q, k, self.within)
        return q @ k.transpose(-1, -2) * self.within

    def decay_queries(self, q: torch.Tensor) -> torch.Tensor:
        """``q [B, H, n, C, K]`` scaled to read the state that entered the chunk."""
        return q * self.from_start

    def decay_keys(self, k: torch.Tensor) -> torch.Tensor:
        """``k [B, H, n, C, K]`` scaled to write into the state that leaves the chunk."""
        return k * self.to_end


def chunk_decays(g: torch.Tensor) -> ChunkDecays:
    """The decays of chunked log decays ``g [B, H, n, C]`` (scalar per head) or
    ``[B, H, n, C, K]`` (per key channel), as returned by :func:`split_chunks`; values in
    ``[-inf, 0]`` (``-inf`` = forget everything; positive values are not checked and would grow
    the state). See :class:`ChunkDecays` for the shapes.

    Raises:
        ValueError: when ``g`` is neither 4-D nor 5-D.
    """
    if g.dim() not in (4, 5):
        raise ValueError(
            f"expected chunked log decays [B, H, n, C] or [B, H, n, C, K], got {tuple(g.shape)}"
        )
    per_channel = g.dim() == 5
    within = decay_matrix(g, dim=3)  # [B, H, n, C, C(, K)]
    g = g if per_channel else g[..., None]  # [B, H, n, C, K or 1]
    from_start = g.cumsum(3)
    # Suffix sums from the end of the chunk (never total - prefix): to_end[i] = sum_{s > i} g_s.
    to_end = torch.nn.functional.pad(g[:, :, :, 1:].flip(3).cumsum(3).flip(3), (0, 0, 0, 1))
    total = from_start[:, :, :, -1]  # [B, H, n, K or 1]
    return ChunkDecays(within, from_start.exp(), to_end.exp(), total.exp()[..., None])
