"""The batched generator: identical, example by example, to the reference
(:func:`~swar_bench.tasks.passkey_swar.reference.make_example`), vectorised with numpy across
examples."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from swar_bench.tasks.passkey_swar.bits import (
    _row_items,
    _select_table,
    _window_at,
    or_levels,
    popcount,
    select_bit,
)
from swar_bench.tasks.passkey_swar.params import IGNORE_INDEX, PASSKEY_LEN, PasskeySwarParams
from swar_bench.tasks.passkey_swar.rng import (
    _GAMMA,
    _LO32,
    _U32,
    STREAM_ACTIVE_ORDER,
    STREAM_ACTIVE_SIZE,
    STREAM_PASSKEY,
    STREAM_QUERY,
    STREAM_SWAP,
    STREAM_WRITE,
    _mix64_inplace,
    bits_at,
    hi32,
    lo32,
    prob32,
    stream_bits,
    stream_keys,
    uniform_index,
    write_cells,
)
from swar_bench.tasks.passkey_swar.seeds import _check_n_writes
from swar_bench.tasks.passkey_swar.vocab import BOS, EOS, NULL, PK, PKQ, Q, W, vocab


@dataclass
class FlatBatch:
    """A generated batch as flat buffers (what the parquet writer consumes without copies).

    Attributes:
        input_ids: ``int16 [sum T_b]``, the examples concatenated.
        labels: ``int16 [sum T_b]``.
        offsets: ``int64 [B + 1]``; example ``b`` is ``input_ids[offsets[b]:offsets[b + 1]]``.
        answer_valid: ``bool [sum Q_b]``, per query in order: True = ``ar_valid``.
        query_offsets: ``int64 [B + 1]``; the queries of example ``b``.
        n_writes: ``N`` of every example.
        seeds: ``int64 [B]``.
    """

    input_ids: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    answer_valid: np.ndarray
    query_offsets: np.ndarray
    n_writes: int
    seeds: np.ndarray

    def __len__(self) -> int:
        return len(self.seeds)

    def answer_types(self, b: int) -> list[str]:
        """``answer_type`` of example ``b`` (queries in order, then ``passkey`` x 4)."""
        flags = self.answer_valid[self.query_offsets[b] : self.query_offsets[b + 1]]
        return [_ANSWER_NAMES[int(f)] for f in flags] + _PASSKEY_TYPES

    def example(self, b: int) -> dict:
        """Example ``b`` as :func:`make_example` returns it (arrays are copies)."""
        lo, hi = self.offsets[b], self.offsets[b + 1]
        return {
            "input_ids": self.input_ids[lo:hi].copy(),
            "labels": self.labels[lo:hi].copy(),
            "answer_type": self.answer_types(b),
            "n_writes": self.n_writes,
            "seed": int(self.seeds[b]),
        }

    def examples(self) -> list[dict]:
        """All examples as :func:`make_example` returns them; the arrays are disjoint views
        into this batch's buffers (no copies)."""
        B = len(self.seeds)
        off, q_off = self.offsets.tolist(), self.query_offsets.tolist()
        ids, labels, seeds, n = self.input_ids, self.labels, self.seeds.tolist(), self.n_writes
        valid = self.answer_valid.view(np.uint8)
        # The answer_type strings of a group of examples (~2**16 queries) in one list of shared
        # str objects; each example takes a slice and appends the passkey's. Groups keep the
        # list small (no large short-lived allocation) and the calls per example few.
        group = max(1, (1 << 16) * B // max(1, q_off[-1]))
        out = []
        gc_was_enabled = gc.isenabled()
        gc.disable()  # only new acyclic containers here; a collection pass would cost O(all)
        try:
            for g0 in range(0, B, group):
                g1 = min(B, g0 + group)
                base = q_off[g0]
                names = _ANSWER_OBJECTS.take(valid[base : q_off[g1]]).tolist()
                for b in range(g0, g1):
                    answer_type = names[q_off[b] - base : q_off[b + 1] - base]
                    answer_type += _PASSKEY_TYPES
                    out.append(
                        {
                            "input_ids": ids[off[b] : off[b + 1]],
                            "labels": labels[off[b] : off[b + 1]],
                            "answer_type": answer_type,
                            "n_writes": n,
                            "seed": seeds[b],
                        }
                    )
            return out
        finally:
            if gc_was_enabled:
                gc.enable()


_ANSWER_NAMES = ("ar_expired", "ar_valid")
_ANSWER_OBJECTS = np.array(_ANSWER_NAMES, dtype=object)
_PASSKEY_TYPES = ["passkey"] * PASSKEY_LEN

_MAX_BATCH_WRITES = 1 << 21  # writes simulated at once: ~30-50 bytes each, outputs included


def examples_per_chunk(n_writes: int) -> int:
    """Examples generated at once for ``n_writes``: about ``2**21`` writes (~30-50 bytes of
    memory per write, the chunk's outputs included), but at least 1024 examples up to ``2**23``
    writes (~220 MB at N = 16384), since the drift-event loop costs per chunk (about
    ``drift_rate * N`` rounds) and long sequences want wide chunks."""
    n = max(1, int(n_writes))
    return max(1, _MAX_BATCH_WRITES // n, min(1024, 4 * _MAX_BATCH_WRITES // n))


def generate_flat(
    seeds: Sequence[int] | np.ndarray, n_writes: int, params: PasskeySwarParams | None = None
) -> FlatBatch:
    """Batched generator, flat output: identical, example by example, to :func:`make_example`.

    Vectorised with numpy across the examples of a chunk (:func:`examples_per_chunk`): the
    counter-based draws (the same streams as :func:`make_example`) in cache-sized blocks of
    writes, the active set through a loop over the e-th drift event of every example (about
    ``drift_rate * N`` rounds, each a few numpy calls on the examples that have an e-th
    event), then, in cache-sized blocks of examples, the written keys, the key sets of each
    query as sliding-window ORs of key bit masks, the answers by binary lifting and the layout
    (rows of 3 tokens moved as 6-byte items). Per-write arrays use the smallest dtype that holds
    them (int8 slots, keys and query counts; uint32 draw halves); the generator is bound by
    memory traffic, not arithmetic.

    Returns:
        :class:`FlatBatch` (``input_ids`` / ``labels`` int16 concatenated, offsets, answer kinds).

    Args:
        seeds: ``[B]`` example seeds in ``[0, 2**63)``.
        n_writes: ``N`` of every example of the batch.
        params: generator parameters (default: the release's, docs/TASK.md "Generation").

    Raises:
        ValueError: bad seeds, ``n_writes`` or ``params``.
    """
    params = params or PasskeySwarParams()
    _check_n_writes(n_writes)
    seeds = np.asarray(seeds)
    if seeds.ndim != 1 or (seeds.size and not np.issubdtype(seeds.dtype, np.integer)):
        raise ValueError(
            f"seeds: expected a 1-D sequence of integers, got shape {seeds.shape} dtype {seeds.dtype}"
        )
    if seeds.size and (seeds.min() < 0 or int(seeds.max()) >= 2**63):
        raise ValueError("seeds: expected integers in [0, 2**63)")
    seeds = seeds.astype(np.int64)
    chunk = examples_per_chunk(int(n_writes))
    parts = [
        _generate_chunk(seeds[i : i + chunk], int(n_writes), params)
        for i in range(0, len(seeds), chunk)
    ]
    if len(parts) == 1:
        return parts[0]
    return _concat_flat(parts, int(n_writes), seeds)


def generate_examples(
    seeds: Sequence[int] | np.ndarray, n_writes: int, params: PasskeySwarParams | None = None
) -> list[dict]:
    """Batched generator: ``[make_example(s, n_writes, params) for s in seeds]``, fast.

    See :func:`generate_flat` (same arguments and errors). Returns a list of ``B`` dicts with
    the keys and dtypes of :func:`make_example`; each example's ``input_ids`` / ``labels`` are
    disjoint views into one buffer per chunk (no per-example copies). Speed against the
    per-example loop: ``benchmarks/bench_generator.py`` and ``docs/BENCHMARKS.md``.
    """
    flat = generate_flat(seeds, n_writes, params)
    return flat.examples()


def _concat_flat(parts: list[FlatBatch], n_writes: int, seeds: np.ndarray) -> FlatBatch:
    def offsets(key: str) -> np.ndarray:
        out = [np.zeros(1, dtype=np.int64)]
        base = 0
        for p in parts:
            off = getattr(p, key)
            out.append(off[1:] + base)
            base += off[-1]
        return np.concatenate(out)

    return FlatBatch(
        input_ids=np.concatenate([p.input_ids for p in parts]),
        labels=np.concatenate([p.labels for p in parts]),
        offsets=offsets("offsets"),
        answer_valid=np.concatenate([p.answer_valid for p in parts]),
        query_offsets=offsets("query_offsets"),
        n_writes=n_writes,
        seeds=seeds,
    )


_BLOCK_WRITES = 1 << 15
"""Writes whose draws :func:`_draw_writes` computes at once (256 KiB of ``uint64``: the block
stays in cache through the ~15 passes over it)."""


def _draw_writes(
    seeds: np.ndarray,
    n: int,
    params: PasskeySwarParams,
    size: np.ndarray,
    items: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The :data:`STREAM_WRITE` draws of ``B`` examples of ``n`` writes, block by block.

    Low half: cell ``uniform_index(lo32, size[b] * n_values)`` = ``slot * n_values + value``; the
    value tokens are written to ``items[:, 2 : n + 2, 2]`` (``int16 [B, n + 4, 3]``). High half
    ``u``: drift coin and number of queries (:func:`write_cells`).

    Returns:
        ``slot`` (``int8 [B * n]``: active slot of each written key), ``n_queries`` (``int8`` or
        ``int32 [B * n]``: queries after each write) and ``coin_events`` (``int64``: flat
        ``b * n + j`` of the writes whose drift coin came up, in order).
    """
    B = len(seeds)
    n_values, value_offset = params.n_values, vocab(params).value_offset
    rows = max(1, _BLOCK_WRITES // n)
    keys = stream_keys(seeds, STREAM_WRITE)
    with np.errstate(over="ignore"):
        steps = (np.arange(n, dtype=np.uint64) + np.uint64(1)) * np.uint64(_GAMMA)
    hi_word = 1 if np.little_endian else 0  # the high 32 bits of a uint64 seen as two uint32
    draws, scratch = np.empty(rows * n, dtype=np.uint64), np.empty(rows * n, dtype=np.uint64)
    slot = np.empty(B * n, dtype=np.int8)
    stay_range, table_stay, table_drift = write_cells(params)
    n_cells = (np.asarray(size) * n_values).astype(np.uint64)
    stay_first = min(int(table_stay[0]), stay_range) if table_stay.size else 0
    drift_first = min(int(table_drift[0]), 2**32 - stay_range) if table_drift.size else 0
    high = np.empty(B * n, dtype=np.uint32)  # u of every write
    shift = n_values.bit_length() - 1 if n_values & (n_values - 1) == 0 else -1
    for r0 in range(0, B, rows):
        r1 = min(B, r0 + rows)
        z, t = draws[: (r1 - r0) * n], scratch[: (r1 - r0) * n]
        with np.errstate(over="ignore"):
            np.add(keys[r0:r1, None], steps[None, :], out=z.reshape(r1 - r0, n))
            _mix64_inplace(z, t)
        high[r0 * n : r1 * n] = z.view(np.uint32)[hi_word::2]
        z &= _LO32  # uniform_index(lo32, n_cells), in place
        z.reshape(r1 - r0, n)[...] *= n_cells[r0:r1, None]
        z >>= _U32
        cell = z.view(np.uint32)[1 - hi_word :: 2]  # < 2**32: the low words hold the cells
        if shift >= 0:  # n_values a power of two: shift and mask
            np.right_shift(cell, np.uint32(shift), out=slot[r0 * n : r1 * n], casting="unsafe")
            value = cell & np.uint32(n_values - 1)
        else:
            quotient, value = np.divmod(cell, np.uint32(n_values))
            slot[r0 * n : r1 * n] = quotient
        np.add(
            value.reshape(r1 - r0, n),
            value_offset,
            out=items[r0:r1, 2 : n + 2, 2],
            casting="unsafe",
        )
    coin_events = (
        np.flatnonzero(high >= np.uint32(stay_range))
        if stay_range < 2**32
        else np.zeros(0, dtype=np.int64)
    )
    # Queries: the first threshold on all writes at once (a write with drift has
    # u >= S >= stay_first, so it counts 0 here), the next ones on ever fewer writes.
    has_query = np.less(high, np.uint32(stay_first)) if stay_first else np.zeros(B * n, bool)
    longest = max(table_stay.size, table_drift.size)
    n_queries = has_query.view(np.int8) if longest < 128 else has_query.astype(np.int32)
    if table_stay.size > 1:
        at = np.flatnonzero(has_query)
        _count_queries(n_queries, at, high[at], table_stay[1:])
    if drift_first:  # v = u - S, uniform on [0, 2**32 - S)
        v = high[coin_events] - np.uint32(stay_range)
        keep = v < np.uint32(drift_first)
        at = coin_events[keep]
        n_queries[at] = 1
        _count_queries(n_queries, at, v[keep], table_drift[1:])
    return slot, n_queries, coin_events


def _count_queries(out: np.ndarray, hit: np.ndarray, v: np.ndarray, table: np.ndarray) -> None:
    """``out[hit] += #{k : v < table[k]}`` (``table`` non-increasing, :func:`write_cells`),
    narrowing ``hit`` threshold by threshold (each keeps about ``q / (1 + q)`` of the writes)."""
    for t in table.tolist():
        keep = v < np.uint32(t)
        hit = hit[keep]
        if not hit.size:
            break
        v = v[keep]
        out[hit] += 1


_BLOCK_ROWS_WRITES = 1 << 18
"""Writes per block of examples in :func:`_rows_block` (its arrays stay in cache)."""


def _rows_block(
    seeds: np.ndarray,
    n: int,
    params: PasskeySwarParams,
    slot: np.ndarray,
    n_queries: np.ndarray,
    epochs: np.ndarray,
    epoch_row: np.ndarray,
    epoch_len: np.ndarray,
    items: np.ndarray,
    query_offsets: np.ndarray,
    rows: np.ndarray,
    labels: np.ndarray,
    q_valid: np.ndarray,
) -> None:
    """Keys, queries and layout of a block of ``B`` examples of :func:`_generate_chunk`.

    Inputs: ``slot`` (``[B * n]`` active slot of each write), ``n_queries`` (``[B * n]``),
    ``epochs`` (flat active slots of every epoch), ``epoch_row`` / ``epoch_len`` (the epochs of
    these examples in order: entry of ``epochs // A`` and number of writes), ``items`` (``int16
    [B, n + 4, 3]``, the non-query rows with the value tokens and head / tail rows filled),
    ``query_offsets`` (``[B + 1]`` from 0). Fills ``items``' key tokens and the outputs ``rows``
    (``int16 [R, 3]``), ``labels`` (``int16 [3 R]``, passkey labels excepted) and ``q_valid``.
    """
    B = len(seeds)
    n_keys, w, A = params.n_keys, params.w, params.active_max
    voc = vocab(params)
    mask_dtype = np.uint16 if n_keys <= 16 else np.uint32 if n_keys <= 32 else np.uint64
    one, all_keys = np.ones(1, dtype=mask_dtype), mask_dtype((1 << n_keys) - 1)
    n_pow2 = n & (n - 1) == 0
    # Written key = epochs[pos[b], epoch of the write, slot]: repeat each epoch over its writes.
    src = np.repeat(epoch_row * A, epoch_len)
    src += slot
    keys = epochs.take(src)  # [M] int8 written keys
    del src
    items[:, 2 : n + 2, 0] = W
    np.add(keys.reshape(B, n), voc.key_offset, out=items[:, 2 : n + 2, 1], casting="unsafe")

    # Queries, vectorised, in example order. After write j the valid keys are those written in
    # the last w writes (age <= w); the expired ones were not written in the last 2w writes
    # (age > 2w, or never written). Key sets are bit masks.
    n_q = int(query_offsets[-1])
    if n_q:
        with_queries = np.flatnonzero(n_queries != 0)
        flat_write = np.repeat(with_queries, n_queries[with_queries])  # [n_q] b * N + j
        del with_queries
        if n_pow2:  # the configs' N are powers of two: shift and mask
            qb, q_write = flat_write >> (n.bit_length() - 1), flat_write & (n - 1)
        else:
            qb, q_write = np.divmod(flat_write, n)
        g = np.arange(n_q)
        qi = g - query_offsets[qb]  # query index within its example
        draw = bits_at(stream_keys(seeds, STREAM_QUERY)[qb], qi)
        del qi
        key_bits = np.left_shift(one, np.arange(n_keys, dtype=mask_dtype))
        levels = or_levels(key_bits.take(keys).reshape(B, n), 2 * w)
        del keys
        expired_sets = _window_at(levels, 2 * w, flat_write, q_write)
        np.invert(expired_sets, out=expired_sets)
        expired_sets &= all_keys
        hi_word = 1 if np.little_endian else 0
        kind_u = draw.view(np.uint32)[hi_word::2]  # hi32(draw), a view
        choice_u = draw.view(np.uint32)[1 - hi_word :: 2]  # lo32(draw)
        valid_thr = prob32(params.valid_frac)
        if valid_thr < 2**32:
            np.less(kind_u, np.uint32(valid_thr), out=q_valid)
        else:
            q_valid.fill(True)
        q_valid |= expired_sets == 0
        cand = np.where(q_valid, _window_at(levels, w, flat_write, q_write), expired_sets)
        del expired_sets, q_write
        count = np.bitwise_count(cand) if hasattr(np, "bitwise_count") else popcount(cand)
        rank = np.multiply(choice_u, count, dtype=np.uint64)  # uniform_index(lo32, count)
        rank >>= _U32
        rank = rank.view(np.int64)
        del draw, kind_u, choice_u, count
        if n_keys <= 16:
            at = cand.astype(np.intp) << 4
            at |= rank
            q_key = _select_table().reshape(-1).take(at)
            del at
        else:
            q_key = select_bit(cand, rank, n_keys)
        del cand, rank
        # A valid query's answer: the value of the key's latest write. Its offset back from
        # write j is < w; find it by binary lifting over the window ORs: step back by `span`
        # whenever the key is absent from the `span` writes ending at the current position.
        v_idx = np.flatnonzero(q_valid)
        v_bit = np.left_shift(one, q_key[v_idx].astype(mask_dtype))
        src = flat_write[v_idx]  # b * N + j, moved back to the answering write
        span = 1 << ((w - 1).bit_length() - 1) if w > 1 else 0
        while span:
            absent = (levels[span].reshape(-1)[src] & v_bit) == 0
            src -= absent * span
            span >>= 1
        del levels, v_bit
        src += 4 * qb[v_idx] + 2  # its row among the non-query rows (items)
        q_answer = np.full(n_q, NULL, dtype=np.int16)
        q_answer[v_idx] = items.reshape(-1, 3)[src, 2]
        del src, v_idx
        q_row = flat_write + g + 4 * qb + 3  # rows of all earlier writes, queries, heads, tails
        del flat_write, g, qb

    # Rows are moved as 6-byte items (void views).
    labels.fill(IGNORE_INDEX)
    other = np.ones(len(rows), dtype=bool)  # False at query rows
    if n_q:
        query_rows = np.empty((n_q, 3), dtype=np.int16)
        query_rows[:, 0] = Q
        np.add(q_key, voc.key_offset, out=query_rows[:, 1], casting="unsafe")
        query_rows[:, 2] = q_answer
        np.put(_row_items(rows), q_row, _row_items(query_rows))
        other[q_row] = False
        labels[3 * q_row + 2] = q_answer
    _row_items(rows)[other] = _row_items(items.reshape(-1, 3))


def _generate_chunk(seeds: np.ndarray, n: int, params: PasskeySwarParams) -> FlatBatch:
    # Arrays over the B * N writes are flat and example-major (the order of the output), in the
    # smallest dtype that holds them: the batched generator is bound by memory traffic. Python
    # loops: over blocks of writes / examples (cache-sized), and over the e-th drift event of
    # every example (~drift_rate * N rounds).
    B = len(seeds)
    n_keys, n_values, A = params.n_keys, params.n_values, params.active_max
    voc = vocab(params)
    mask_dtype = np.uint16 if n_keys <= 16 else np.uint32 if n_keys <= 32 else np.uint64
    one, all_keys = np.ones(1, dtype=mask_dtype), mask_dtype((1 << n_keys) - 1)
    n_pow2 = n & (n - 1) == 0

    passkey = uniform_index(
        hi32(stream_bits(seeds, STREAM_PASSKEY, PASSKEY_LEN)), n_values
    )  # [B, 4]
    size = params.active_min + uniform_index(
        hi32(stream_bits(seeds, STREAM_ACTIVE_SIZE, 1)[:, 0]),
        params.active_max - params.active_min + 1,
    )  # [B]
    order = np.argsort(stream_bits(seeds, STREAM_ACTIVE_ORDER, n_keys), axis=1, kind="stable")
    active = order[:, :A].astype(np.int8)  # [B, A]; only the first size[b] slots are active

    # One draw per write: high half -> drift coin and number of queries (write_cells), low
    # half -> (active slot, value); the value tokens go straight into `items`.
    items = np.empty((B, n + 4, 3), dtype=np.int16)  # non-query rows: 2 head, N writes, 2 tail
    slot, n_queries, coin_events = _draw_writes(seeds, n, params, size, items)

    # The active set changes only at drift events. Loop over the e-th event of every example;
    # examples are taken in decreasing number of events, so those with an e-th event are a
    # prefix. `epochs[p, e]` = active slots (key ids) after e events of the p-th example so taken.
    if size.max(initial=0) >= n_keys:  # every key active: nothing to swap in
        coin_events = coin_events[size[coin_events // n] < n_keys]
    if n_pow2:
        eb, ej = coin_events >> (n.bit_length() - 1), coin_events & (n - 1)
    else:
        eb, ej = np.divmod(coin_events, n)
    del coin_events
    n_events = np.bincount(eb, minlength=B)  # [B]
    n_epochs = int(n_events.max(initial=0)) + 1
    ee = np.arange(eb.size) - np.repeat(np.cumsum(n_events) - n_events, n_events)  # event rank
    swap = bits_at(stream_keys(seeds, STREAM_SWAP)[eb], ej)  # draws only where the coin fired
    by_events = np.argsort(-n_events, kind="stable")
    pos = np.empty(B, dtype=np.intp)
    pos[by_events] = np.arange(B)
    with_event = np.cumsum(np.bincount(n_events, minlength=n_epochs)[::-1])[::-1]  # [n_epochs]
    # Event (p, e) (the e-th event, 0-based, of the p-th example in that order) is entry
    # start[e] + p of the flat event arrays: the events of each round are a contiguous slice.
    start = np.zeros(n_epochs, dtype=np.intp)
    np.cumsum(with_event[1:], out=start[1:])
    pe = pos[eb]
    at = start[ee] + pe
    ev_slot = np.empty(eb.size, dtype=np.int32)  # p * A + the slot swapped out
    ev_slot[at] = pe * A + uniform_index(hi32(swap), size[eb])
    ev_rank = np.empty(eb.size, dtype=np.int8)  # rank of the key swapped in (< n_keys <= 64)
    ev_rank[at] = uniform_index(lo32(swap), n_keys - size[eb])
    # Epoch e of example b covers the writes up to its e-th event (the swap follows the write):
    # entry b + (event index) of `ends` is the last write of the epoch, n - 1 for the last one.
    ends = np.full(B + eb.size, n - 1, dtype=np.int64)
    ends[np.arange(eb.size) + eb] = ej
    epoch_len = np.diff(ends, prepend=-1)
    first_epoch = np.cumsum(n_events + 1) - (n_events + 1)  # [B] entry of each example's epoch 0
    epoch_len[first_epoch] = ends[first_epoch] + 1
    epoch_row = np.repeat(pos * n_epochs - first_epoch, n_events + 1) + np.arange(ends.size)
    del eb, ej, ee, pe, at, swap, ends, first_epoch
    cur = active[by_events]  # [B, A] active slots now
    in_set = np.arange(A)[None, :] < size[by_events, None]
    active_set = np.bitwise_or.reduce(
        np.where(in_set, np.left_shift(one, cur.astype(mask_dtype)), 0), axis=1
    ).astype(mask_dtype)  # [B] bit mask of the active keys
    epochs = np.empty((B, n_epochs, A), dtype=np.int8)
    epochs[:, 0] = cur
    cur_flat = cur.reshape(-1)
    ev_slot, ev_rank = ev_slot.astype(np.intp), ev_rank.astype(np.intp)  # no casts in the loop
    rounds = zip(range(1, n_epochs), with_event[1:].tolist(), start.tolist())
    if n_keys <= 16:  # inactive sets as select-table row offsets: (mask << 4) + rank
        table = _select_table().reshape(-1)
        inactive = (~active_set & all_keys).astype(np.intp) << 4
        key_step = np.left_shift(1, np.arange(n_keys, dtype=np.intp)) << 4
        at_table = np.empty(B, dtype=np.intp)
        for e, k, lo in rounds:
            at = ev_slot[lo : lo + k]
            old = cur_flat.take(at)
            np.add(inactive[:k], ev_rank[lo : lo + k], out=at_table[:k])
            new = table.take(at_table[:k])
            cur_flat[at] = new
            inactive[:k] += key_step.take(old)
            inactive[:k] -= key_step.take(new)
            epochs[:k, e] = cur[:k]
    else:
        inactive = ~active_set & all_keys
        for e, k, lo in rounds:
            at = ev_slot[lo : lo + k]
            old = cur_flat.take(at)
            new = select_bit(inactive[:k], ev_rank[lo : lo + k], n_keys)
            cur_flat[at] = new
            inactive[:k] ^= np.left_shift(one, old.astype(mask_dtype)) | np.left_shift(
                one, new.astype(mask_dtype)
            )
            epochs[:k, e] = cur[:k]
    del ev_slot, ev_rank, cur, inactive, active_set

    # Layout in rows of 3 tokens: (BOS PK p1) (p2 p3 p4) | write j: (W k v), then its queries
    # (Q k a) | (PKQ p1 p2) (p3 p4 EOS). `items` holds the non-query rows.
    pk = (voc.value_offset + passkey).astype(np.int16)  # [B, 4]
    items[:, 0, 0], items[:, 0, 1], items[:, 0, 2] = BOS, PK, pk[:, 0]
    items[:, 1] = pk[:, 1:]
    items[:, n + 2, 0], items[:, n + 2, 1:] = PKQ, pk[:, :2]
    items[:, n + 3, :2], items[:, n + 3, 2] = pk[:, 2:], EOS
    q_total = n_queries.reshape(B, n).sum(axis=1, dtype=np.int64)  # [B]
    query_offsets = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(q_total, out=query_offsets[1:])
    t_off = np.zeros(B + 1, dtype=np.int64)  # first row of each example
    np.cumsum(4 + n + q_total, out=t_off[1:])
    e_off = np.zeros(B + 1, dtype=np.int64)  # first epoch entry of each example
    np.cumsum(n_events + 1, out=e_off[1:])
    rows = np.empty((int(t_off[-1]), 3), dtype=np.int16)
    labels = np.empty(rows.size, dtype=np.int16)
    q_valid = np.empty(int(query_offsets[-1]), dtype=bool)
    # The rest works on blocks of examples small enough to stay in cache.
    block = max(1, _BLOCK_ROWS_WRITES // n)
    for b0 in range(0, B, block):
        b1 = min(B, b0 + block)
        _rows_block(
            seeds[b0:b1],
            n,
            params,
            slot[b0 * n : b1 * n],
            n_queries[b0 * n : b1 * n],
            epochs.reshape(-1),
            epoch_row[e_off[b0] : e_off[b1]],
            epoch_len[e_off[b0] : e_off[b1]],
            items[b0:b1],
            query_offsets[b0 : b1 + 1] - query_offsets[b0],
            rows[t_off[b0] : t_off[b1]],
            labels[3 * t_off[b0] : 3 * t_off[b1]],
            q_valid[query_offsets[b0] : query_offsets[b1]],
        )
    labels[3 * t_off[1:, None] + np.array([-5, -4, -3, -2])] = pk  # the passkey after PKQ
    return FlatBatch(
        input_ids=rows.reshape(-1),
        labels=labels,
        offsets=3 * t_off,
        answer_valid=q_valid,
        query_offsets=query_offsets,
        n_writes=n,
        seeds=seeds,
    )
