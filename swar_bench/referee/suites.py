"""The referee's probe suites: needle, copy, multi-hop at a controlled ``distance``, and the Markov stream.

Source: docs/REFEREE.md, "The probes": "needle", "copy", "multi-hop" and "multi-scale perplexity".
Every suite draws one instance from a ``numpy.random.Generator`` and returns ``(input_ids, targets)``,
two ``np.int64`` arrays of the same length ``T``:

- ``input_ids[t]`` is the token read at position ``t``;
- ``targets[t]`` is the token the model's logits at position ``t`` must predict, or ``IGNORE`` (-100)
  where nothing is supervised. Targets are *aligned* with the inputs (the original protocol's convention:
  "the target at position ``distance``"), not shifted as in the harness's ``Batch.labels`` (docs/ARCHITECTURE.md, "Hand-offs").

Alphabet: tokens ``0 .. vocab - 2`` carry content (keys, values, filler); token ``MARK(vocab) = vocab - 1``
is reserved as a content-free cue (the multi-hop anchor / query marker and the copy query), which is
why the multi-hop target is taken mod ``vocab - 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DEFAULT_VOCAB = 17
"""Alphabet size for the suites when the mechanism does not expose its own ``vocab_size`` (docs/REFEREE.md, "The probes")."""

IGNORE = -100
"""Target value of unsupervised positions (PyTorch's ``cross_entropy`` default ``ignore_index``)."""

MIN_VOCAB = 3
"""Smallest alphabet the suites accept: two content tokens (so a value can differ from a key) + MARK."""

Instance = tuple[np.ndarray, np.ndarray]


def mark(vocab: int) -> int:
    """The reserved cue token of an alphabet of ``vocab`` tokens: ``vocab - 1``."""
    return int(vocab) - 1


def _check_vocab(vocab: int) -> int:
    if isinstance(vocab, bool) or int(vocab) != vocab or vocab < MIN_VOCAB:
        raise ValueError(f"vocab={vocab!r}: expected an integer >= {MIN_VOCAB}")
    return int(vocab)


def _check_distance(distance: int, minimum: int, what: str) -> int:
    if isinstance(distance, bool) or int(distance) != distance or distance < minimum:
        raise ValueError(f"distance={distance!r}: expected an integer >= {minimum} for {what}")
    return int(distance)


def _filler(
    rng: np.random.Generator, size: int, vocab: int, exclude: int | None = None
) -> np.ndarray:
    """``size`` uniform content tokens in ``[0, vocab - 1)``, never equal to ``exclude``."""
    if exclude is None:
        return rng.integers(0, vocab - 1, size=size, dtype=np.int64)
    out = rng.integers(0, vocab - 2, size=size, dtype=np.int64)
    out[out >= exclude] += 1
    return out


def needle_suite(rng: np.random.Generator, *, distance: int, vocab: int) -> Instance:
    """Associative recall at a controlled range: ``(key, value)`` at positions 0 / 1, the key again at ``distance``.

    Layout (``T = distance + 1``): ``input_ids = [key, value, filler..., key]``; the only supervised
    position is ``distance`` with target ``value``. Key and value are content tokens (``< vocab - 1``);
    the filler never contains the key, so its recurrence at ``distance`` is the one cue.

    Returns:
        ``(input_ids, targets)``, ``np.int64[distance + 1]`` each.

    Raises:
        ValueError: ``distance`` < 2 or ``vocab`` < 3.
    """
    vocab = _check_vocab(vocab)
    distance = _check_distance(distance, 2, "needle_suite (key at 0, value at 1)")
    key = int(rng.integers(0, vocab - 1))
    value = int(rng.integers(0, vocab - 1))
    x = np.empty(distance + 1, dtype=np.int64)
    x[0], x[1] = key, value
    x[2:distance] = _filler(rng, distance - 2, vocab, exclude=key)
    x[distance] = key
    y = np.full(distance + 1, IGNORE, dtype=np.int64)
    y[distance] = value
    return x, y


def copy_suite(rng: np.random.Generator, *, distance: int, vocab: int) -> Instance:
    """Positional recall: reproduce at position ``distance`` the token read at position 0.

    Layout (``T = distance + 1``): ``input_ids = [c, filler..., MARK]``; the target at ``distance`` is
    ``c``. ``MARK`` is the same for every instance, so it says *when* to answer and nothing about *what*:
    no key / value indirection.

    Returns:
        ``(input_ids, targets)``, ``np.int64[distance + 1]`` each.

    Raises:
        ValueError: ``distance`` < 1 or ``vocab`` < 3.
    """
    vocab = _check_vocab(vocab)
    distance = _check_distance(distance, 1, "copy_suite")
    x = np.empty(distance + 1, dtype=np.int64)
    x[:distance] = _filler(rng, distance, vocab)
    x[distance] = mark(vocab)
    y = np.full(distance + 1, IGNORE, dtype=np.int64)
    y[distance] = x[0]
    return x, y


def multi_hop_suite(
    rng: np.random.Generator, *, distance: int, vocab: int, hops: int = 3
) -> Instance:
    """``hops`` anchors scattered across ``[0, distance)``; the probe at ``distance`` is their sum mod ``vocab - 1``.

    Layout (``T = distance + 1``): anchor ``i`` is the pair ``(MARK, a_i)`` at positions
    ``(p_i, p_i + 1)``, ``p_i`` even and the pairs disjoint, drawn uniformly among the
    ``distance // 2`` slots; every other position before ``distance`` is filler; position
    ``distance`` reads ``MARK`` (the ``hops + 1``-th one) and its target is
    ``(a_1 + ... + a_hops) mod (vocab - 1)``. Answering needs every anchor, not the latest one.

    Returns:
        ``(input_ids, targets)``, ``np.int64[distance + 1]`` each.

    Raises:
        ValueError: ``hops`` < 1, ``distance`` < ``2 * hops`` or ``vocab`` < 3.
    """
    vocab = _check_vocab(vocab)
    if isinstance(hops, bool) or int(hops) != hops or hops < 1:
        raise ValueError(f"hops={hops!r}: expected an integer >= 1")
    hops = int(hops)
    distance = _check_distance(
        distance, 2 * hops, f"multi_hop_suite with hops={hops} (one (MARK, value) pair per hop)"
    )
    x = np.empty(distance + 1, dtype=np.int64)
    x[:distance] = _filler(rng, distance, vocab)
    slots = np.sort(rng.choice(distance // 2, size=hops, replace=False))
    anchors = rng.integers(0, vocab - 1, size=hops, dtype=np.int64)
    x[2 * slots] = mark(vocab)
    x[2 * slots + 1] = anchors
    x[distance] = mark(vocab)
    y = np.full(distance + 1, IGNORE, dtype=np.int64)
    y[distance] = int(anchors.sum()) % (vocab - 1)
    return x, y


def random_permutation(rng: np.random.Generator, vocab: int) -> np.ndarray:
    """``np.int64[vocab]``: the Markov rule ``token -> perm[token]`` of the perplexity suite."""
    return rng.permutation(_check_vocab(vocab)).astype(np.int64)


def markov_suite(
    rng: np.random.Generator,
    *,
    length: int,
    vocab: int,
    perm: np.ndarray,
    resample_prob: float = 0.1,
) -> Instance:
    """An order-1 Markov stream: the next token is ``perm[token]``, or, with ``resample_prob``, uniform.

    ``x_0`` is uniform; ``x_{t+1} = perm[x_t]`` with probability ``1 - resample_prob``, else uniform over
    all ``vocab`` tokens. ``targets[t] = x_{t+1}`` at every position (the whole stream is scored).
    The noise keeps the stream from cycling and sets a known floor, ``markov_optimal_loss``.

    Returns:
        ``(input_ids, targets)``, ``np.int64[length]`` each.

    Raises:
        ValueError: ``length`` < 1, ``perm`` not a permutation of ``range(vocab)``, ``resample_prob``
        outside ``[0, 1]``.
    """
    vocab = _check_vocab(vocab)
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise ValueError(f"length={length!r}: expected an integer >= 1")
    perm = np.asarray(perm, dtype=np.int64)
    if perm.shape != (vocab,) or not np.array_equal(np.sort(perm), np.arange(vocab)):
        raise ValueError(f"perm of shape {perm.shape}: expected a permutation of range({vocab})")
    if not 0.0 <= float(resample_prob) <= 1.0:
        raise ValueError(f"resample_prob={resample_prob!r}: expected a probability in [0, 1]")
    n = int(length) + 1
    fresh = rng.integers(0, vocab, size=n, dtype=np.int64)
    reset = rng.random(n) < resample_prob
    reset[0] = True
    # x_t = perm^(t - r)(fresh[r]) where r is the last reset at or before t: vectorised with a table
    # of the permutation's powers up to the longest run.
    idx = np.arange(n)
    last = np.maximum.accumulate(np.where(reset, idx, 0))
    steps = idx - last
    powers = np.empty((int(steps.max()) + 1, vocab), dtype=np.int64)
    powers[0] = np.arange(vocab)
    for k in range(1, len(powers)):
        powers[k] = perm[powers[k - 1]]
    stream = powers[steps, fresh[last]]
    return stream[:-1].copy(), stream[1:].copy()


def markov_optimal_loss(vocab: int, resample_prob: float) -> float:
    """Entropy (nats per token) of ``markov_suite``'s next token: the lowest mean loss any model can reach.

    ``p = 1 - resample_prob + resample_prob / vocab`` on ``perm[x]`` and ``resample_prob / vocab`` on
    each of the ``vocab - 1`` others.
    """
    vocab = _check_vocab(vocab)
    q = float(resample_prob) / vocab
    p = 1.0 - float(resample_prob) + q
    h = -p * np.log(p)
    if q > 0:
        h -= (vocab - 1) * q * np.log(q)
    return float(h)


def markov_oracle_loss(
    input_ids: np.ndarray,
    targets: np.ndarray,
    *,
    vocab: int,
    perm: np.ndarray,
    resample_prob: float,
) -> float:
    """Summed loss (nats) of the true next-token distribution on given ``markov_suite`` streams.

    The Bayes-optimal model pays ``-ln(1 - resample_prob + resample_prob / vocab)`` where the rule held
    and ``-ln(resample_prob / vocab)`` elsewhere; divided by the token count this is the floor for
    *these* held-out streams, which differs from ``markov_optimal_loss`` by sampling noise.
    """
    q = float(resample_prob) / int(vocab)
    hit = np.asarray(targets) == np.asarray(perm)[np.asarray(input_ids)]
    n_hit = int(hit.sum())
    n_miss = int(hit.size - n_hit)
    total = -n_hit * np.log(1.0 - float(resample_prob) + q)
    if n_miss:
        total -= n_miss * np.log(q)
    return float(total)


PROBE_SUITES: dict[str, Callable[..., Instance]] = {
    "needle": needle_suite,
    "copy": copy_suite,
    "multi_hop": multi_hop_suite,
}
"""The controlled-distance probes by name (the Markov stream is ``"perplexity"``, driven separately)."""

SUITE_NAMES = ("needle", "copy", "multi_hop", "perplexity")
"""Every suite the referee runs, in report order."""

SPLITS = {"train": 0, "eval": 1, "curriculum": 2}
"""Seed-space split codes: instances of different splits come from disjoint seed tuples."""


def instance_rng(
    seed: int, split: str, suite: str, distance: int, index: int
) -> np.random.Generator:
    """The generator of one instance, keyed by ``(seed, split, suite, distance, index)``.

    Training, held-out evaluation and the curriculum use different ``split`` codes, so their instances
    are drawn from disjoint seed tuples (never the same key), whatever the indices.

    Raises:
        ValueError: unknown ``split`` or ``suite``, or a negative ``seed`` / ``index``.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: expected one of {sorted(SPLITS)}")
    if suite not in SUITE_NAMES:
        raise ValueError(f"suite={suite!r}: expected one of {SUITE_NAMES}")
    if seed < 0 or index < 0:
        raise ValueError(f"seed={seed!r}, index={index!r}: expected non-negative integers")
    return np.random.default_rng(
        [int(seed), SPLITS[split], SUITE_NAMES.index(suite), int(distance), int(index)]
    )


def make_batch(
    suite: str,
    *,
    seed: int,
    split: str,
    distance: int,
    vocab: int,
    first_index: int,
    batch_size: int,
    hops: int = 3,
    perm: np.ndarray | None = None,
    resample_prob: float = 0.1,
) -> Instance:
    """``batch_size`` instances of ``suite`` stacked: ``(input_ids, targets)``, ``np.int64[B, T]`` each.

    Row ``b`` is the instance with index ``first_index + b`` of ``instance_rng(seed, split, suite,
    distance, .)``; for ``"perplexity"`` the stream has ``T = distance`` tokens and needs ``perm``,
    for the probes ``T = distance + 1``.

    Raises:
        ValueError: unknown suite, ``perplexity`` without ``perm``, or the suite's own errors.
    """
    rows = []
    for b in range(int(batch_size)):
        rng = instance_rng(seed, split, suite, distance, first_index + b)
        if suite == "perplexity":
            if perm is None:
                raise ValueError(
                    "suite='perplexity' needs perm: expected a permutation of range(vocab)"
                )
            rows.append(
                markov_suite(
                    rng, length=distance, vocab=vocab, perm=perm, resample_prob=resample_prob
                )
            )
        elif suite == "multi_hop":
            rows.append(multi_hop_suite(rng, distance=distance, vocab=vocab, hops=hops))
        elif suite in PROBE_SUITES:
            rows.append(PROBE_SUITES[suite](rng, distance=distance, vocab=vocab))
        else:
            raise ValueError(f"suite={suite!r}: expected one of {SUITE_NAMES}")
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
