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
import functools
import gc
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

MAX_KEYS = 64
"""Largest ``n_keys`` the generator supports (key sets are 64-bit masks)."""

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
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.floating, np.integer)
            ):
                raise ValueError(f"PasskeySwarParams.{name}={value!r}: expected a number")  # noqa: TRY004 (the project reports bad values as ValueError)
            if not math.isfinite(value) or value < 0:
                raise ValueError(
                    f"PasskeySwarParams.{name}={value!r}: expected a finite number >= 0"
                )
        if self.query_rate > 1000:
            raise ValueError(f"PasskeySwarParams.query_rate={self.query_rate!r}: expected <= 1000")
        for name in ("valid_frac", "drift_rate"):
            if getattr(self, name) > 1:
                raise ValueError(
                    f"PasskeySwarParams.{name}={getattr(self, name)!r}: expected a probability in [0, 1]"
                )
        if self.active_min > self.active_max:
            raise ValueError(
                f"PasskeySwarParams.active_min={self.active_min} > active_max={self.active_max}: "
                "expected active_min <= active_max"
            )
        if self.n_keys > MAX_KEYS:
            raise ValueError(
                f"PasskeySwarParams.n_keys={self.n_keys}: expected n_keys <= {MAX_KEYS} "
                "(the batched generator holds key sets in 64-bit masks)"
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


def new_file_mode() -> int:
    """Permission bits of a newly created regular file under the process umask
    (``0o666 & ~umask``, e.g. ``0o644`` for umask ``0o022``), as ``open()`` would give it.
    ``tempfile.mkstemp`` creates files ``0o600``; files written through a temporary name are
    set to this mode before the rename."""
    mask = os.umask(0o022)  # reading the umask means setting it; restored at once
    os.umask(mask)
    return 0o666 & ~mask


def path_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` (raised while writing ``path`` through a temporary file) as an ``OSError`` that
    names ``path``, the file the user asked for, instead of the internal temporary name:
    ``[Errno 2] No such file or directory: 'path'``. Raise it ``from exc``."""
    if exc.errno is None:
        return OSError(f"{os.fspath(path)}: {exc}")
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file ``.tmp-*{basename}`` in the same
    folder and a rename; the file gets the umask's mode (:func:`new_file_mode`), not
    ``mkstemp``'s ``0o600``.

    Raises:
        OSError: the folder cannot be created or written; the message names ``path`` (never
            the temporary file, which is removed).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise path_error(exc, path) from exc
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
    if (
        isinstance(index, bool)
        or not isinstance(index, (int, np.integer))
        or not 0 <= index < 10**6
    ):
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
    "queries follow while a coin with probability p comes up" (card, "Format"), truncated where
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
    ``stream_bits(seed, s, ...)[i]``. Write ``j`` uses one 64-bit draw: its low half picks the
    (active slot, value) pair uniformly among ``size * n_values`` cells, its high half the drift
    coin and the number of queries (:func:`write_cells`; "queries follow while a coin comes up"
    is drawn as its geometric count, the same law). A swap reads :data:`STREAM_SWAP` at ``j``;
    query ``i`` reads :data:`STREAM_QUERY` at ``i`` (kind coin, candidate rank). Uniform choices
    use :func:`uniform_index`, coins :func:`prob32`.

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
        params: generator parameters (default: the card's).

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
