"""Randomness: counter-based SplitMix64 streams.

Draw ``i`` of stream ``s`` of the example with seed ``seed`` is a pure function of
``(seed, s, i)``, so the reference and the batched generator cannot drift apart by consuming
random numbers in a different order. Also: the maps from 32 random bits to uniform indices and
coins, and the tables that turn one write's draw into (drift coin, number of queries).
"""

from __future__ import annotations

import numpy as np

from swar_bench.tasks.passkey_swar.params import PasskeySwarParams

_GAMMA = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_U32 = np.uint64(32)
_LO32 = np.uint64(0xFFFFFFFF)

# One stream per kind of decision. Draw i of a per-write stream belongs to write i (0-based),
# draw i of the query stream to the example's i-th query (0-based, in stream order). A 64-bit
# draw serves two decisions: its high and its low 32 bits.
STREAM_PASSKEY = 0  # 4 draws; hi: passkey value
STREAM_ACTIVE_SIZE = 1  # 1 draw; hi: size of the active set
STREAM_ACTIVE_ORDER = 2  # n_keys draws: a random order of the keys; the active set is its head
STREAM_WRITE = 3  # per write; lo: (active slot of the written key, value) as one uniform
#                   cell, hi: (drift coin, number of queries after the write), see write_cells
STREAM_SWAP = 5  # per write, read when the drift coin fires; hi: active slot swapped out,
#                  lo: rank (ascending id) among inactive keys of the key swapped in
STREAM_QUERY = 6  # per query; hi: valid/expired coin, lo: rank of the key among the candidates


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on ``uint64`` arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def stream_keys(seeds: np.ndarray, stream: int) -> np.ndarray:
    """SplitMix64 starting state of ``stream`` for each seed: ``uint64 [B]``.

    ``key = mix64(mix64(seed + GAMMA) + (stream + 1) * GAMMA)``: the first SplitMix64 output of
    the seed, then the ``stream + 1``-th state of a SplitMix64 sequence started there.
    """
    with np.errstate(over="ignore"):
        s = np.asarray(seeds, dtype=np.int64).astype(np.uint64)
        base = _mix64(s + np.uint64(_GAMMA))
        return _mix64(base + np.uint64(((stream + 1) * _GAMMA) & _MASK64))


def _mix64_inplace(z: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """:func:`_mix64` overwriting ``z`` (an array this module owns): fewer temporaries.
    ``scratch``: an array of ``z``'s shape and dtype to use as the one temporary."""
    t = np.right_shift(z, np.uint64(30), out=scratch)
    z ^= t
    z *= np.uint64(0xBF58476D1CE4E5B9)
    np.right_shift(z, np.uint64(27), out=t)
    z ^= t
    z *= np.uint64(0x94D049BB133111EB)
    np.right_shift(z, np.uint64(31), out=t)
    z ^= t
    return z


def bits_at(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Draw ``counters`` (0-based) of the SplitMix64 sequences started at ``keys``: ``uint64``,
    broadcast shape of the inputs. The ``i``-th output is ``mix64(key + (i + 1) * GAMMA)``."""
    keys, counters = np.asarray(keys, dtype=np.uint64), np.asarray(counters)
    with np.errstate(over="ignore"):
        if counters.ndim and counters.shape == np.broadcast_shapes(keys.shape, counters.shape):
            z = counters.astype(np.uint64)  # a copy, then in place: no other temporaries
            z += np.uint64(1)
            z *= np.uint64(_GAMMA)
            z += keys
            return _mix64_inplace(z)
        z = keys + (counters.astype(np.uint64) + np.uint64(1)) * np.uint64(_GAMMA)
        return _mix64_inplace(z) if z.ndim else _mix64(z)


def stream_bits(seeds: np.ndarray | int, stream: int, count: int) -> np.ndarray:
    """Draws ``0 .. count - 1`` of ``stream`` for each seed: ``uint64 [B, count]``
    (``[count]`` for a scalar seed)."""
    seeds_arr = np.asarray(seeds, dtype=np.int64)
    keys = stream_keys(seeds_arr.reshape(-1), stream)
    out = bits_at(keys[:, None], np.arange(count, dtype=np.uint64)[None, :])
    return out[0] if seeds_arr.ndim == 0 else out


def hi32(bits: np.ndarray) -> np.ndarray:
    """High 32 bits of each draw, ``uint64``."""
    return np.asarray(bits, dtype=np.uint64) >> _U32


def lo32(bits: np.ndarray) -> np.ndarray:
    """Low 32 bits of each draw, ``uint64``."""
    return np.asarray(bits, dtype=np.uint64) & _LO32


def uniform_index(u32: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Uniform integer in ``[0, n)`` from 32 random bits: ``(u32 * n) >> 32`` (the
    multiply-shift map; bias < n / 2**32). ``int64``, broadcast shape."""
    n = np.asarray(n).astype(np.uint64)
    return ((np.asarray(u32, dtype=np.uint64) * n) >> _U32).view(np.int64)


def prob32(p: float) -> int:
    """``round(p * 2**32)``: a coin on 32 random bits ``u32`` comes up when ``u32 < prob32(p)``
    (probability ``p`` to within ``2**-33``; ``p = 1`` always, ``p = 0`` never)."""
    return min(round(float(p) * 2.0**32), 2**32)


def query_thresholds(params: PasskeySwarParams, span: int = 2**32) -> np.ndarray:
    """``t[k-1] = round(span * p**k)`` for ``k = 1, 2, ...`` while it is ``>= 1``,
    ``p = q / (1 + q)``: ``uint64 [K]``, non-increasing. For ``v`` uniform in ``[0, span)``,
    ``#{k : v < t[k-1]}`` queries follow a write, so ``P(#queries >= k) = p**k``: the law of
    "queries follow while a coin with probability p comes up" (docs/TASK.md, "Format"), truncated where
    ``span * p**k < 1/2``."""
    p = params.query_prob
    out = []
    t = p
    while p > 0 and round(span * t) >= 1:
        out.append(round(span * t))
        t *= p
    return np.asarray(out, dtype=np.uint64)


def write_cells(params: PasskeySwarParams) -> tuple[int, np.ndarray, np.ndarray]:
    """How the high 32 bits ``u`` of a write's draw give (drift coin, number of queries):
    ``drift = u >= S`` with ``S = 2**32 - prob32(drift_rate)``; then ``v = u`` (no drift) or
    ``u - S`` (drift) is uniform on a range of ``S`` or ``2**32 - S`` values and the number of
    queries is ``#{k : v < table[k]}`` with the table of that range (:func:`query_thresholds`).
    So the coin and the count are independent and each has its law to within ``2**-32``.

    Returns:
        ``(S, table_stay, table_drift)``, the tables ``uint64``.
    """
    stay = 2**32 - prob32(params.drift_rate)
    return stay, query_thresholds(params, stay), query_thresholds(params, 2**32 - stay)
