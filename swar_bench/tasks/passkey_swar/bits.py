"""Bit-mask and sliding-window helpers of the batched generator: key sets are 64-bit masks
(bit ``k`` = key ``k``), the keys of an age window are ORs of those masks over a window of
writes."""

from __future__ import annotations

import functools

import numpy as np


def popcount(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each ``uint64``: ``int64``, shape of ``x``."""
    x = np.asarray(x, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    with np.errstate(over="ignore"):
        return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def select_bit(mask: np.ndarray, rank: np.ndarray, n_bits: int) -> np.ndarray:
    """Position of the ``rank``-th (0-based) set bit of each ``uint64`` mask, by binary search
    over prefix popcounts: ``int64``. Requires ``0 <= rank < popcount(mask)``, ``n_bits <= 64``."""
    mask = np.asarray(mask, dtype=np.uint64)
    rank = np.asarray(rank, dtype=np.int64)
    lo = np.zeros(mask.shape, dtype=np.int64)  # the lowest `lo` bits hold <= rank set bits
    step = 1 << max(0, (n_bits - 1).bit_length() - 1)
    while step:
        cand = lo + step
        ok = cand < n_bits
        low = (np.uint64(1) << np.minimum(cand, 63).astype(np.uint64)) - np.uint64(1)
        ok &= popcount(mask & low) <= rank
        lo = np.where(ok, cand, lo)
        step >>= 1
    return lo


@functools.lru_cache(maxsize=1)
def _select_table() -> np.ndarray:
    """``table[mask, rank]`` = position of the ``rank``-th set bit of a 16-bit ``mask``
    (-1 where ``rank >= popcount(mask)``): ``int8 [65536, 16]``, built once."""
    masks = np.repeat(np.arange(1 << 16, dtype=np.uint64), 16)
    ranks = np.tile(np.arange(16, dtype=np.int64), 1 << 16)
    table = np.where(ranks < popcount(masks), select_bit(masks, ranks, 16), -1)
    return table.astype(np.int8).reshape(1 << 16, 16)


def select_key(mask: np.ndarray, rank: np.ndarray, n_keys: int) -> np.ndarray:
    """:func:`select_bit` for key sets: a table lookup when ``n_keys <= 16``. ``int64``."""
    if n_keys <= 16:
        return _select_table()[np.asarray(mask).astype(np.intp), rank].astype(np.int64)
    return select_bit(mask, rank, n_keys)


def or_levels(bits: np.ndarray, max_span: int) -> dict[int, np.ndarray]:
    """Sliding-window ORs of power-of-two spans along axis 1 of an unsigned integer array
    ``[B, N]``: ``{span: out}`` with ``out[:, j] = bits[:, max(0, j - span + 1)] | ... | bits[:, j]``
    for ``span = 1, 2, 4, ... <= max_span`` (doubling)."""
    levels = {1: bits}
    span = 1
    while 2 * span <= max_span:
        prev, nxt = levels[span], np.empty_like(levels[span])
        nxt[:, :span] = prev[:, :span]
        np.bitwise_or(prev[:, span:], prev[:, :-span], out=nxt[:, span:])
        span *= 2
        levels[span] = nxt
    return levels


def window_or(levels: dict[int, np.ndarray], length: int) -> np.ndarray:
    """Sliding-window OR of any ``length >= 1`` from :func:`or_levels` (two overlapping
    power-of-two windows)."""
    span = 1 << (length.bit_length() - 1)
    out = levels[span]
    rest = length - span
    if rest:
        out = out.copy()
        out[:, rest:] |= levels[span][:, :-rest]
    return out


def _row_items(rows: np.ndarray) -> np.ndarray:
    """A C-contiguous ``[R, 3]`` int16 array seen as ``R`` 6-byte items (for fast row moves)."""
    return rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).reshape(-1)


def _window_at(
    levels: dict[int, np.ndarray], length: int, flat: np.ndarray, j: np.ndarray
) -> np.ndarray:
    """:func:`window_or` of ``levels`` read only at the flat positions ``flat = b * N + j``
    (``j``: write index within the example): ``[len(flat)]``, the dtype of the levels."""
    span = 1 << (length.bit_length() - 1)
    level = levels[span].reshape(-1)
    out = level[flat]
    rest = length - span
    if rest:
        # Writes j < rest have no write `rest` back in their example: the span-window at j
        # already covers writes 0..j. Their index is clamped (it may point before the block,
        # by more than the block's size when the window 2w exceeds it) and the read masked.
        prev = level[np.maximum(flat - rest, 0)]
        prev[j < rest] = 0
        out |= prev
    return out
