"""passkey_swar: Passkey + Sliding-Window Associative Recall (the dataset card, normative).

One example is the token sequence ::

    BOS  PK p1 p2 p3 p4   <stream>   PKQ p1 p2 p3 p4 EOS

where the stream holds ``n_writes`` associative-recall writes ``W k v``; after every write,
queries ``Q k a`` follow while a coin with probability ``q / (1 + q)`` comes up
(``q = query_rate``, so about one query per ``1 / q`` writes). The answer ``a`` of a query is the
value of the key's latest write when its age is ``<= w`` (``ar_valid``) and ``NULL`` when the key
was never written or its age is ``> 2w`` (``ar_expired``); keys with ``w < age <= 2w`` (the gray
zone) are never queried. ``age`` = number of writes since the key's most recent write (the
immediately preceding write has age 1; only the latest write counts). Card sections: "Format",
"Answer rule", "Vocabulary", "Columns".

Two implementations produce the same examples, bit for bit (tested):

* :func:`make_example` -- the slow, obviously-correct per-example Python loop (the reference);
* :func:`generate_examples` -- the batched generator, vectorised with numpy across examples.

Both read their randomness from the same counter-based streams (:func:`stream_bits`): draw ``i``
of stream ``s`` of the example with seed ``seed`` is a pure function of ``(seed, s, i)``, so the
two paths cannot drift apart by consuming random numbers in a different order.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ALLOWED_N: tuple[int, ...] = tuple(2**i for i in range(5, 15))
"""The released configs ``n{N}`` (card, "Configs and splits"): N = 32, 64, ..., 16384 writes."""

TRAIN_N: tuple[int, ...] = (32, 64, 128, 256)
"""Configs that have a train split (card, "Configs and splits")."""

SPLIT_SEEDS: dict[str, int] = {"train": 1, "validation": 2, "test": 3}
"""Split seeds (card, "Generation")."""

SPLIT_SIZES: dict[str, int] = {"train": 100_000, "validation": 1_000, "test": 1_000}
"""Examples per config in each split of the release (card, "Configs and splits")."""

IGNORE_INDEX = -100
"""``labels`` value at unsupervised positions (card, "Columns"; the HF / PyTorch convention)."""

PASSKEY_LEN = 4
"""Passkey tokens (card, "Format")."""

ANSWER_TYPES: tuple[str, ...] = ("ar_valid", "ar_expired", "passkey")
"""The ``answer_type`` strings of the card's "Columns" section."""


@dataclass(frozen=True)
class PasskeySwarParams:
    """Generator parameters (card, "Generation"; defaults are the release's).

    Attributes:
        w: window in writes; a key of age ``<= w`` is valid, ``> 2w`` expired.
        n_keys: number of AR keys (tokens ``k0..``).
        n_values: number of values (tokens ``v0..``); also the passkey alphabet.
        query_rate: ``q``; after each write, queries follow while a coin with probability
            ``q / (1 + q)`` comes up, i.e. ``q`` queries per write on average.
        valid_frac: probability that a query asks a valid key (else an expired one).
        drift_rate: probability, after each write, of swapping one active key for an inactive one.
        active_min, active_max: the active set's size is uniform in ``[active_min, active_max]``.

    Raises:
        ValueError: on a value outside its range (named in the message).
    """

    w: int = 16
    n_keys: int = 16
    n_values: int = 16
    query_rate: float = 0.25
    valid_frac: float = 0.5
    drift_rate: float = 0.1
    active_min: int = 6
    active_max: int = 8

    def __post_init__(self) -> None:
        for name in ("w", "n_keys", "n_values", "active_min", "active_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"PasskeySwarParams.{name}={value!r}: expected an integer >= 1")
        for name in ("query_rate", "valid_frac", "drift_rate"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise ValueError(f"PasskeySwarParams.{name}={value!r}: expected a number")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"PasskeySwarParams.{name}={value!r}: expected a finite number >= 0")
        if self.query_rate > 1000:
            raise ValueError(f"PasskeySwarParams.query_rate={self.query_rate!r}: expected <= 1000")
        for name in ("valid_frac", "drift_rate"):
            if getattr(self, name) > 1:
                raise ValueError(f"PasskeySwarParams.{name}={getattr(self, name)!r}: expected a probability in [0, 1]")
        if self.active_min > self.active_max:
            raise ValueError(
                f"PasskeySwarParams.active_min={self.active_min} > active_max={self.active_max}: "
                "expected active_min <= active_max"
            )
        if self.active_max > self.n_keys:
            raise ValueError(
                f"PasskeySwarParams.active_max={self.active_max} > n_keys={self.n_keys}: "
                "expected active_max <= n_keys"
            )
        if N_SPECIAL + self.n_keys + self.n_values > np.iinfo(np.int16).max:
            raise ValueError(
                f"PasskeySwarParams: n_keys + n_values = {self.n_keys + self.n_values} does not fit "
                f"int16 token ids; expected <= {np.iinfo(np.int16).max - N_SPECIAL}"
            )

    def to_dict(self) -> dict:
        """The parameters as a JSON-ready dict (the card's "Parameters" line)."""
        return dataclasses.asdict(self)

    @property
    def query_prob(self) -> float:
        """``q / (1 + q)``: probability that one more query follows (card, "Format")."""
        return self.query_rate / (1.0 + self.query_rate)


SPECIAL_TOKENS: tuple[str, ...] = ("PAD", "BOS", "EOS", "PK", "PKQ", "W", "Q", "NULL")
N_SPECIAL = len(SPECIAL_TOKENS)
PAD, BOS, EOS, PK, PKQ, W, Q, NULL = range(N_SPECIAL)


@dataclass(frozen=True)
class Vocab:
    """Token ids (card, "Vocabulary"): PAD=0 BOS=1 EOS=2 PK=3 PKQ=4 W=5 Q=6 NULL=7, keys
    ``k0..k{n_keys-1}`` from 8, values ``v0..`` right after the keys (40 tokens by default)."""

    n_keys: int = 16
    n_values: int = 16
    PAD: int = PAD
    BOS: int = BOS
    EOS: int = EOS
    PK: int = PK
    PKQ: int = PKQ
    W: int = W
    Q: int = Q
    NULL: int = NULL

    @property
    def key_offset(self) -> int:
        """Id of ``k0``."""
        return N_SPECIAL

    @property
    def value_offset(self) -> int:
        """Id of ``v0``."""
        return N_SPECIAL + self.n_keys

    @property
    def size(self) -> int:
        """Number of token ids (``vocab_size`` of a model reading this task)."""
        return N_SPECIAL + self.n_keys + self.n_values

    def key_id(self, k: int) -> int:
        """Token id of key ``k`` (``0 <= k < n_keys``)."""
        return self.key_offset + k

    def value_id(self, v: int) -> int:
        """Token id of value ``v`` (``0 <= v < n_values``)."""
        return self.value_offset + v

    def is_key(self, token: int) -> bool:
        return self.key_offset <= token < self.value_offset

    def is_value(self, token: int) -> bool:
        return self.value_offset <= token < self.size

    @property
    def tokens(self) -> list[str]:
        """Token strings indexed by id."""
        return (
            list(SPECIAL_TOKENS)
            + [f"k{i}" for i in range(self.n_keys)]
            + [f"v{i}" for i in range(self.n_values)]
        )

    def to_dict(self) -> dict[str, int]:
        """``{token: id}`` in id order (the content of ``vocab.json``)."""
        return {tok: i for i, tok in enumerate(self.tokens)}

    def decode(self, ids: Iterable[int]) -> str:
        """Space-separated token strings of ``ids`` (for reading examples)."""
        toks = self.tokens
        return " ".join(toks[int(i)] if 0 <= int(i) < len(toks) else f"<{int(i)}?>" for i in ids)


def vocab(params: PasskeySwarParams | None = None) -> Vocab:
    """The vocabulary of ``params`` (the card's 40 tokens for the default parameters)."""
    params = params or PasskeySwarParams()
    return Vocab(n_keys=params.n_keys, n_values=params.n_values)


def write_vocab_json(path: str | os.PathLike, params: PasskeySwarParams | None = None) -> str:
    """Write ``vocab.json`` (``{token: id}``) atomically to ``path``; returns the path."""
    text = json.dumps(vocab(params).to_dict(), indent=1) + "\n"
    atomic_write_text(path, text)
    return str(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------------------------
# Seeds


def example_seed(split: str, n_writes: int, index: int) -> int:
    """Per-example seed ``split_seed * 10**12 + N * 10**6 + index`` (card, "Columns").

    Raises:
        ValueError: unknown ``split``, ``n_writes`` outside ``[1, 10**6)`` or ``index`` outside
            ``[0, 10**6)`` (outside those ranges two examples could share a seed).
    """
    if split not in SPLIT_SEEDS:
        raise ValueError(f"split={split!r}: expected one of {sorted(SPLIT_SEEDS)}")
    _check_n_writes(n_writes)
    if not 1 <= int(n_writes) < 10**6:
        raise ValueError(f"n_writes={n_writes!r}: expected 1 <= n_writes < 10**6 for a seed")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < 10**6:
        raise ValueError(f"index={index!r}: expected an integer in [0, 10**6)")
    return SPLIT_SEEDS[split] * 10**12 + int(n_writes) * 10**6 + int(index)


def split_seeds(split: str, n_writes: int, num_examples: int, start: int = 0) -> np.ndarray:
    """Seeds of examples ``start .. start + num_examples - 1`` of a split: ``int64 [num_examples]``."""
    if num_examples < 0 or start < 0 or start + num_examples > 10**6:
        raise ValueError(
            f"examples {start}..{start + num_examples - 1}: expected indices in [0, 10**6)"
        )
    first = example_seed(split, n_writes, start) if num_examples else 0
    return first + np.arange(num_examples, dtype=np.int64)


def _check_n_writes(n_writes: int) -> None:
    if isinstance(n_writes, bool) or not isinstance(n_writes, (int, np.integer)) or n_writes < 1:
        raise ValueError(f"n_writes={n_writes!r}: expected an integer >= 1")


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise ValueError(f"seed={seed!r}: expected an integer in [0, 2**63)")
    return int(seed)


# --------------------------------------------------------------------------------------------
# Randomness: counter-based SplitMix64 streams

_GAMMA = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1

# One stream per random decision; draw i of a write stream belongs to write i (0-based), draw i
# of a query stream to the example's i-th query (0-based, in stream order).
STREAM_PASSKEY = 0  # 4 draws: passkey values
STREAM_ACTIVE_SIZE = 1  # 1 draw: size of the active set
STREAM_ACTIVE_ORDER = 2  # n_keys draws: a random order of the keys; the active set is its head
STREAM_KEY = 3  # per write: position in the active set of the written key
STREAM_VALUE = 4  # per write: written value
STREAM_DRIFT = 5  # per write: drift coin
STREAM_DRIFT_OUT = 6  # per write: position in the active set of the key swapped out
STREAM_DRIFT_IN = 7  # per write: rank among inactive keys (ascending id) of the key swapped in
STREAM_N_QUERIES = 8  # per write: number of queries that follow it
STREAM_KIND = 9  # per query: valid (coin < valid_frac) or expired
STREAM_CHOICE = 10  # per query: rank of the queried key among the candidates (ascending id)


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


def bits_at(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Draw ``counters`` (0-based) of the SplitMix64 sequences started at ``keys``: ``uint64``,
    broadcast shape of the inputs. The ``i``-th output is ``mix64(key + (i + 1) * GAMMA)``."""
    with np.errstate(over="ignore"):
        c = np.asarray(counters).astype(np.uint64) + np.uint64(1)
        return _mix64(np.asarray(keys, dtype=np.uint64) + c * np.uint64(_GAMMA))


def stream_bits(seeds: np.ndarray | int, stream: int, count: int) -> np.ndarray:
    """Draws ``0 .. count - 1`` of ``stream`` for each seed: ``uint64 [B, count]``
    (``[count]`` for a scalar seed)."""
    seeds_arr = np.asarray(seeds, dtype=np.int64)
    keys = stream_keys(seeds_arr.reshape(-1), stream)
    out = bits_at(keys[:, None], np.arange(count, dtype=np.uint64)[None, :])
    return out[0] if seeds_arr.ndim == 0 else out


def uniform_index(bits: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Uniform integer in ``[0, n)`` from 64 random bits: ``((bits >> 32) * n) >> 32`` (the
    multiply-shift map; bias < n / 2**32). ``int64``, broadcast shape."""
    n = np.asarray(n).astype(np.uint64)
    return (((np.asarray(bits, dtype=np.uint64) >> np.uint64(32)) * n) >> np.uint64(32)).astype(np.int64)


def unit_float(bits: np.ndarray) -> np.ndarray:
    """Uniform float64 in ``[0, 1)`` from the top 53 of 64 random bits (exact conversion)."""
    return (np.asarray(bits, dtype=np.uint64) >> np.uint64(11)).astype(np.float64) * (2.0**-53)


def query_thresholds(params: PasskeySwarParams) -> np.ndarray:
    """``t[k-1] = p**k`` for ``k = 1, 2, ...`` while ``p**k >= 2**-53``, ``p = q / (1 + q)``:
    ``float64 [K]``, decreasing. A write is followed by ``#{k : u < t[k-1]}`` queries for one
    uniform ``u``; then ``P(#queries >= k) = p**k``, the law of "queries follow while a coin with
    probability p comes up" (card, "Format")."""
    p = params.query_prob
    out = []
    t = p
    while t >= 2.0**-53 and p > 0:
        out.append(t)
        t *= p
    return np.asarray(out, dtype=np.float64)


def _n_queries(u: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """``#{k : u < thresholds[k]}`` for decreasing thresholds: ``int64``, shape of ``u``."""
    ascending = thresholds[::-1]
    return (len(thresholds) - np.searchsorted(ascending, u, side="right")).astype(np.int64)


# --------------------------------------------------------------------------------------------
# The reference: one example, a plain Python loop


def make_example(seed: int, n_writes: int, params: PasskeySwarParams | None = None) -> dict:
    """Generate one example (the reference implementation; a pure function of its arguments).

    The process (issue "passkey_swar task", reproducing the card's statistics):

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
       (the card's gray zone).

       *No candidate*: a valid candidate always exists (the key just written has age 1). When
       the expired kind has no candidate (every key written within the last ``2w`` writes;
       with the card's parameters at most ``8 + (drift swaps)`` keys are written in 32 writes, so
       this needs a ``n_keys`` close to ``active_max``), the query falls back to the valid kind.
       This keeps the number of queries at ``q`` per write (the card's "queries/ex" column);
       it never happens with the card's parameters, so the card's valid share is unaffected.

    Randomness: draw ``i`` of stream ``s`` (the ``STREAM_*`` constants) is
    ``stream_bits(seed, s, ...)[i]``; uniform choices use :func:`uniform_index`, coins
    :func:`unit_float`, query counts :func:`query_thresholds`.

    Args:
        seed: example seed, ``0 <= seed < 2**63`` (see :func:`example_seed`).
        n_writes: ``N``, number of AR writes (``>= 1``).
        params: generator parameters (default: the card's).

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

    def index_draws(stream: int, count: int, m: int) -> list[int]:
        return uniform_index(stream_bits(seed, stream, count), m).tolist()

    passkey = index_draws(STREAM_PASSKEY, PASSKEY_LEN, params.n_values)
    size = params.active_min + index_draws(STREAM_ACTIVE_SIZE, 1, params.active_max - params.active_min + 1)[0]
    order_bits = stream_bits(seed, STREAM_ACTIVE_ORDER, params.n_keys).tolist()
    active = sorted(range(params.n_keys), key=lambda k: (order_bits[k], k))[:size]

    key_pos = index_draws(STREAM_KEY, n, size)
    values = index_draws(STREAM_VALUE, n, params.n_values)
    drift_u = unit_float(stream_bits(seed, STREAM_DRIFT, n)).tolist()
    drift_out = index_draws(STREAM_DRIFT_OUT, n, size)
    drift_in_bits = stream_bits(seed, STREAM_DRIFT_IN, n)
    thresholds = query_thresholds(params).tolist()
    query_u = unit_float(stream_bits(seed, STREAM_N_QUERIES, n)).tolist()
    n_queries = []
    for u in query_u:
        k = 0
        while k < len(thresholds) and u < thresholds[k]:
            k += 1
        n_queries.append(k)
    total_queries = sum(n_queries)
    kind_u = unit_float(stream_bits(seed, STREAM_KIND, total_queries)).tolist()
    choice_bits = stream_bits(seed, STREAM_CHOICE, total_queries)

    tokens = [BOS, PK] + [voc.value_id(v) for v in passkey]
    labels = [IGNORE_INDEX] * len(tokens)
    answer_type: list[str] = []
    last_write: dict[int, int] = {}  # key -> index (0-based) of its latest write
    last_value: dict[int, int] = {}
    query = 0
    for j in range(n):
        key, value = active[key_pos[j]], values[j]
        tokens += [W, voc.key_id(key), voc.value_id(value)]
        labels += [IGNORE_INDEX] * 3
        last_write[key], last_value[key] = j, value

        inactive = [k for k in range(params.n_keys) if k not in active]
        if drift_u[j] < params.drift_rate and inactive:
            active[drift_out[j]] = inactive[int(uniform_index(drift_in_bits[j], len(inactive)))]

        for _ in range(n_queries[j]):
            age = {k: j - t + 1 for k, t in last_write.items()}
            valid = [k for k in range(params.n_keys) if k in age and age[k] <= w]
            expired = [k for k in range(params.n_keys) if k not in age or age[k] > 2 * w]
            want_valid = kind_u[query] < params.valid_frac
            if not expired:
                want_valid = True
            candidates = valid if want_valid else expired
            key = candidates[int(uniform_index(choice_bits[query], len(candidates)))]
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


# --------------------------------------------------------------------------------------------
# The batched generator


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
        return _ANSWER_NAMES[flags.astype(np.int64)].tolist() + ["passkey"] * PASSKEY_LEN

    def example(self, b: int) -> dict:
        """Example ``b`` as :func:`make_example` returns it."""
        lo, hi = self.offsets[b], self.offsets[b + 1]
        return {
            "input_ids": self.input_ids[lo:hi].copy(),
            "labels": self.labels[lo:hi].copy(),
            "answer_type": self.answer_types(b),
            "n_writes": self.n_writes,
            "seed": int(self.seeds[b]),
        }


_ANSWER_NAMES = np.array(["ar_expired", "ar_valid"], dtype=object)

_MAX_BATCH_WRITES = 1 << 21  # writes simulated at once: bounds memory to ~100 MB per chunk


def generate_flat(seeds: Sequence[int] | np.ndarray, n_writes: int, params: PasskeySwarParams | None = None) -> FlatBatch:
    """Batched generator, flat output: identical, example by example, to :func:`make_example`.

    Vectorised over the batch with numpy: the writes are a loop of ``n_writes`` steps, each
    one numpy operation per decision over all ``B`` examples; every random number comes from
    the same counter-based streams as :func:`make_example`.

    Args:
        seeds: ``[B]`` example seeds in ``[0, 2**63)``.
        n_writes: ``N`` of every example of the batch.
        params: generator parameters (default: the card's).

    Raises:
        ValueError: bad seeds, ``n_writes`` or ``params``.
    """
    params = params or PasskeySwarParams()
    _check_n_writes(n_writes)
    seeds = np.asarray(seeds)
    if seeds.ndim != 1 or (seeds.size and not np.issubdtype(seeds.dtype, np.integer)):
        raise ValueError(f"seeds: expected a 1-D sequence of integers, got shape {seeds.shape} dtype {seeds.dtype}")
    if seeds.size and (seeds.min() < 0 or int(seeds.max()) >= 2**63):
        raise ValueError("seeds: expected integers in [0, 2**63)")
    seeds = seeds.astype(np.int64)
    chunk = max(1, _MAX_BATCH_WRITES // int(n_writes))
    parts = [_generate_chunk(seeds[i : i + chunk], int(n_writes), params) for i in range(0, len(seeds), chunk)]
    if len(parts) == 1:
        return parts[0]
    return _concat_flat(parts, int(n_writes), seeds)


def generate_examples(seeds: Sequence[int] | np.ndarray, n_writes: int, params: PasskeySwarParams | None = None) -> list[dict]:
    """Batched generator: ``[make_example(s, n_writes, params) for s in seeds]``, fast.

    See :func:`generate_flat` (same arguments and errors). Returns a list of ``B`` dicts with
    the keys and dtypes of :func:`make_example`.
    """
    flat = generate_flat(seeds, n_writes, params)
    return [flat.example(b) for b in range(len(flat))]


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


def _generate_chunk(seeds: np.ndarray, n: int, params: PasskeySwarParams) -> FlatBatch:
    B = len(seeds)
    n_keys, w, A = params.n_keys, params.w, params.active_max
    voc = vocab(params)
    rows = np.arange(B)

    passkey = uniform_index(stream_bits(seeds, STREAM_PASSKEY, PASSKEY_LEN), params.n_values)  # [B, 4]
    size = params.active_min + uniform_index(
        stream_bits(seeds, STREAM_ACTIVE_SIZE, 1)[:, 0], params.active_max - params.active_min + 1
    )  # [B]
    order = np.argsort(stream_bits(seeds, STREAM_ACTIVE_ORDER, n_keys), axis=1, kind="stable")
    active = np.ascontiguousarray(order[:, :A])  # [B, A]; only the first size[b] slots are active
    is_active = np.zeros((B, n_keys), dtype=bool)
    is_active[rows[:, None], active] = np.arange(A)[None, :] < size[:, None]

    # Per-write draws, laid out [N, B] so that step j reads a contiguous row.
    def write_draws(stream: int) -> np.ndarray:
        return np.ascontiguousarray(stream_bits(seeds, stream, n).T)

    slot = uniform_index(write_draws(STREAM_KEY), size[None, :]) + (rows * A)[None, :]  # [N, B] flat slot
    values = uniform_index(write_draws(STREAM_VALUE), params.n_values).T  # [B, N]
    drift = unit_float(write_draws(STREAM_DRIFT)) < params.drift_rate  # [N, B]
    drift &= (size < n_keys)[None, :]
    drift_out = uniform_index(write_draws(STREAM_DRIFT_OUT), size[None, :])  # [N, B]
    drift_in = write_draws(STREAM_DRIFT_IN)  # [N, B] raw bits
    n_queries = _n_queries(unit_float(stream_bits(seeds, STREAM_N_QUERIES, n)), query_thresholds(params))  # [B, N]
    has_queries = np.ascontiguousarray(n_queries.T > 0)  # [N, B]
    inactive_count = n_keys - size  # [B]

    # The sequential part: the active set drifts and each key's latest write moves forward.
    # Queries do not change the state, so each write with queries only snapshots `last_write`.
    active_flat = active.reshape(-1)
    keys = np.empty((n, B), dtype=np.int64)  # written key per write
    last_write = np.full(B * n_keys, -1, dtype=np.int32)  # [B * n_keys] flat
    row_base = rows * n_keys
    snap_rows, snap_writes, snaps = [], [], []
    for j in range(n):
        key = active_flat[slot[j]]
        keys[j] = key
        last_write[row_base + key] = j

        d = np.flatnonzero(drift[j])
        if d.size:
            rank = uniform_index(drift_in[j, d], inactive_count[d])
            new_key = np.argmax(np.cumsum(~is_active[d], axis=1) == (rank + 1)[:, None], axis=1)
            out_slot = d * A + drift_out[j, d]
            is_active[d, active_flat[out_slot]] = False
            is_active[d, new_key] = True
            active_flat[out_slot] = new_key

        qr = np.flatnonzero(has_queries[j])
        if qr.size:
            snap_rows.append(qr)
            snap_writes.append(np.full(qr.size, j, dtype=np.int64))
            snaps.append(last_write.reshape(B, n_keys)[qr])
    keys = keys.T  # [B, N]

    # Queries, all at once. Order them by (example, write, rank within the write).
    q_total = n_queries.sum(axis=1)  # [B]
    query_offsets = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(q_total, out=query_offsets[1:])
    q_before = np.cumsum(n_queries, axis=1) - n_queries  # [B, N] queries before write j
    n_q = int(query_offsets[-1])
    if n_q:
        s_rows = np.concatenate(snap_rows)
        s_writes = np.concatenate(snap_writes)
        s_last = np.concatenate(snaps)  # [S, n_keys]
        by_example = np.lexsort((s_writes, s_rows))
        s_rows, s_writes, s_last = s_rows[by_example], s_writes[by_example], s_last[by_example]
        reps = n_queries[s_rows, s_writes]
        qb = np.repeat(s_rows, reps)  # example of each query
        q_write = np.repeat(s_writes, reps)  # write after which the query comes
        q_rank = np.arange(n_q) - np.repeat(np.cumsum(reps) - reps, reps)  # rank within the write
        qi = np.arange(n_q) - query_offsets[qb]  # query index within its example
        lw = np.repeat(s_last, reps, axis=0)  # [M, n_keys] latest write of each key
        age = q_write[:, None] - lw + 1
        written = lw >= 0
        valid_mask = written & (age <= w)
        expired_mask = ~written | (age > 2 * w)
        q_valid = unit_float(bits_at(stream_keys(seeds, STREAM_KIND)[qb], qi)) < params.valid_frac
        q_valid |= ~expired_mask.any(axis=1)
        cand = np.where(q_valid[:, None], valid_mask, expired_mask)
        rank = uniform_index(bits_at(stream_keys(seeds, STREAM_CHOICE)[qb], qi), cand.sum(axis=1))
        q_key = np.argmax(np.cumsum(cand, axis=1) == (rank + 1)[:, None], axis=1)
        q_src = lw[np.arange(n_q), q_key]  # the write that set the queried key
        q_answer = np.where(q_valid, voc.value_offset + values[qb, np.maximum(q_src, 0)], NULL)
    else:
        q_valid = np.zeros(0, dtype=bool)

    # Layout: BOS PK p1..p4 | per write j: W k v, then its queries Q k a | PKQ p1..p4 EOS
    lengths = 12 + 3 * (n + q_total)
    offsets = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    ids = np.empty(total, dtype=np.int16)
    labels = np.full(total, IGNORE_INDEX, dtype=np.int16)
    start = offsets[:-1]
    pk_vals = (voc.value_offset + passkey).astype(np.int16)
    ids[start] = BOS
    ids[start + 1] = PK
    ids[(start + 2)[:, None] + np.arange(PASSKEY_LEN)] = pk_vals
    wpos = start[:, None] + 6 + 3 * (np.arange(n)[None, :] + q_before)  # [B, N]
    ids[wpos] = W
    ids[wpos + 1] = voc.key_offset + keys
    ids[wpos + 2] = voc.value_offset + values
    if n_q:
        qpos = start[qb] + 6 + 3 * (q_write + 1 + q_before[qb, q_write] + q_rank)
        ids[qpos] = Q
        ids[qpos + 1] = voc.key_offset + q_key
        ids[qpos + 2] = q_answer
        labels[qpos + 2] = q_answer
    end = offsets[1:]
    ids[end - 6] = PKQ
    tail = (end - 5)[:, None] + np.arange(PASSKEY_LEN)
    ids[tail] = pk_vals
    labels[tail] = pk_vals
    ids[end - 1] = EOS
    return FlatBatch(
        input_ids=ids,
        labels=labels,
        offsets=offsets,
        answer_valid=q_valid,
        query_offsets=query_offsets,
        n_writes=n,
        seeds=seeds,
    )
