"""The reference generator: one example, a plain Python loop (slow, obviously correct)."""

from __future__ import annotations

import numpy as np

from swar_bench.tasks.passkey_swar.params import IGNORE_INDEX, PASSKEY_LEN, PasskeySwarParams
from swar_bench.tasks.passkey_swar.rng import (
    STREAM_ACTIVE_ORDER,
    STREAM_ACTIVE_SIZE,
    STREAM_PASSKEY,
    STREAM_QUERY,
    STREAM_SWAP,
    STREAM_WRITE,
    hi32,
    lo32,
    prob32,
    stream_bits,
    write_cells,
)
from swar_bench.tasks.passkey_swar.seeds import _check_n_writes, _check_seed
from swar_bench.tasks.passkey_swar.vocab import BOS, EOS, NULL, PK, PKQ, Q, W, vocab


def make_example(seed: int, n_writes: int, params: PasskeySwarParams | None = None) -> dict:
    """Generate one example (the reference implementation; a pure function of its arguments).

    The process (issue "passkey_swar task", reproducing the statistics of the dataset card (README.md)):

    1. passkey: 4 uniform values;
    2. active set: size uniform in ``[active_min, active_max]``, keys uniform without
       replacement (an ordered list);
    3. each of the ``n_writes`` writes: key uniform from the active set, value uniform;
       then, with probability ``drift_rate``, one uniform active key is swapped for one
       uniform inactive key (no swap when every key is active);
       then queries follow while a coin with probability ``q / (1 + q)`` comes up. Each query
       is valid with probability ``valid_frac`` -- key uniform among keys of age ``<= w``, answer
       the value of its latest write -- else expired -- key uniform among never-written keys and
       keys of age ``> 2w``, answer ``NULL``. Keys with ``w < age <= 2w`` are never queried
       (the gray zone, docs/TASK.md "Answer rule").

       *No candidate*: a valid candidate always exists (the key just written has age 1). When
       the expired kind has no candidate (every key written within the last ``2w`` writes;
       with the release's parameters at most ``8 + (drift swaps)`` keys are written in 32 writes, so
       this needs a ``n_keys`` close to ``active_max``), the query falls back to the valid kind.
       This keeps the number of queries at ``q`` per write (the dataset card's "queries/ex" column);
       it never happens with the release's parameters, so the valid share is unaffected.

    Randomness: draw ``i`` of stream ``s`` (the ``STREAM_*`` constants) is
    ``stream_bits(seed, s, ...)[i]``. Write ``j`` uses one 64-bit draw: its low half picks the
    (active slot, value) pair uniformly among ``size * n_values`` cells, its high half the drift
    coin and the number of queries (:func:`write_cells`; "queries follow while a coin comes up"
    is drawn as its geometric count, the same law). A swap reads :data:`STREAM_SWAP` at ``j``;
    query ``i`` reads :data:`STREAM_QUERY` at ``i`` (kind coin, candidate rank). Uniform choices
    use :func:`uniform_index`, coins :func:`prob32`.

    Args:
        seed: example seed, ``0 <= seed < 2**63`` (see :func:`example_seed`).
        n_writes: ``N``, number of AR writes (``>= 1``).
        params: generator parameters (default: the release's, docs/TASK.md "Generation").

    Returns:
        ``{"input_ids": int16 [T], "labels": int16 [T], "answer_type": list[str],
        "n_writes": int, "seed": int}`` with ``T = 12 + 3 * (n_writes + n_queries)`` tokens;
        ``labels[t] = input_ids[t]`` at each query's answer token and the 4 passkey tokens after
        ``PKQ``, -100 elsewhere; ``answer_type`` has one entry per supervised position, in order.

    Raises:
        ValueError: bad ``seed``, ``n_writes`` or ``params``.
    """
    params = params or PasskeySwarParams()
    seed = _check_seed(seed)
    _check_n_writes(n_writes)
    n = int(n_writes)
    voc = vocab(params)
    w = params.w

    def pick(u32: int, m: int) -> int:  # uniform_index on Python ints
        return (u32 * m) >> 32

    def draws(stream: int, count: int) -> tuple[list[int], list[int]]:
        bits = stream_bits(seed, stream, count)
        return hi32(bits).tolist(), lo32(bits).tolist()

    passkey = [pick(u, params.n_values) for u in draws(STREAM_PASSKEY, PASSKEY_LEN)[0]]
    size = params.active_min + pick(
        draws(STREAM_ACTIVE_SIZE, 1)[0][0], params.active_max - params.active_min + 1
    )
    order_bits = stream_bits(seed, STREAM_ACTIVE_ORDER, params.n_keys).tolist()
    active = sorted(range(params.n_keys), key=lambda k: (order_bits[k], k))[:size]

    event_u, cell_u = draws(STREAM_WRITE, n)
    swap_out_u, swap_in_u = draws(STREAM_SWAP, n)
    stay_range, table_stay, table_drift = write_cells(params)
    drift, n_queries = [], []
    for u in event_u:
        drift.append(u >= stay_range)
        v, table = (u - stay_range, table_drift.tolist()) if drift[-1] else (u, table_stay.tolist())
        k = 0
        while k < len(table) and v < table[k]:
            k += 1
        n_queries.append(k)
    kind_u, choice_u = draws(STREAM_QUERY, sum(n_queries))
    valid_thr = prob32(params.valid_frac)

    tokens = [BOS, PK] + [voc.value_id(v) for v in passkey]
    labels = [IGNORE_INDEX] * len(tokens)
    answer_type: list[str] = []
    last_write: dict[int, int] = {}  # key -> index (0-based) of its latest write
    last_value: dict[int, int] = {}
    query = 0
    for j in range(n):
        slot, value = divmod(pick(cell_u[j], size * params.n_values), params.n_values)
        key = active[slot]
        tokens += [W, voc.key_id(key), voc.value_id(value)]
        labels += [IGNORE_INDEX] * 3
        last_write[key], last_value[key] = j, value

        if drift[j] and size < params.n_keys:
            inactive = [k for k in range(params.n_keys) if k not in active]
            active[pick(swap_out_u[j], size)] = inactive[pick(swap_in_u[j], len(inactive))]

        if n_queries[j]:  # the queries after write j share the keys' ages
            age = {k: j - t + 1 for k, t in last_write.items()}
            valid = [k for k in range(params.n_keys) if k in age and age[k] <= w]
            expired = [k for k in range(params.n_keys) if k not in age or age[k] > 2 * w]
        for _ in range(n_queries[j]):
            want_valid = kind_u[query] < valid_thr or not expired
            candidates = valid if want_valid else expired
            key = candidates[pick(choice_u[query], len(candidates))]
            answer = voc.value_id(last_value[key]) if want_valid else NULL
            tokens += [Q, voc.key_id(key), answer]
            labels += [IGNORE_INDEX, IGNORE_INDEX, answer]
            answer_type.append("ar_valid" if want_valid else "ar_expired")
            query += 1

    tokens += [PKQ] + [voc.value_id(v) for v in passkey] + [EOS]
    labels += [IGNORE_INDEX] + [voc.value_id(v) for v in passkey] + [IGNORE_INDEX]
    answer_type += ["passkey"] * PASSKEY_LEN
    return {
        "input_ids": np.asarray(tokens, dtype=np.int16),
        "labels": np.asarray(labels, dtype=np.int16),
        "answer_type": answer_type,
        "n_writes": n,
        "seed": seed,
    }
