"""Multi-query associative recall (MQAR), as Zoology defines it.

Source: Arora, Eyuboglu et al., 2023, "Zoology: Measuring and Improving Recall in Efficient
Language Models" (arXiv:2312.04927), section 3; the generator is Zoology's
``zoology/data/multiquery_ar.py`` (HazyResearch/zoology; the figure-2 era text is
``zoology/data/associative_recall.py`` at commit b603008, identical for ``num_passes=1``).
This is our own numpy code written from that definition.

One example, ``T = input_seq_len``, ``n = num_kv_pairs``, ``P = num_passes``,
``C = 2 * n * P`` (the context)::

    k1 v1 k2 v2 ... kn vn   (repeated P times)  | query region of T - C tokens
    keys   from [1, vocab_size // 2)   without replacement within the example
    values from [vocab_size // 2, vocab_size) without replacement within the example

Each key is queried exactly once: its query sits at the even offset ``2 * g`` of the query
region (input position ``C + 2 * g``), the slot indices ``g`` drawn without replacement from
``{0, ..., (T - C) // 2 - 1}`` with probability ``p(g) ∝ a * (g + 1) ** (a - 1)``
(``a = power_a``; :func:`gap_probabilities`). The i-th drawn slot holds the i-th key, so the
order of queries is the order of the slots, not of the pairs. Every other position is 0, or,
with ``random_non_queries``, a token drawn uniformly from ``[0, vocab_size)``.

Labels are in Zoology's convention, already shifted: ``labels[t]`` is the target for the
prediction made after reading ``inputs[t]``; it is the queried key's value where ``inputs[t]``
is a query, and -100 (ignored) everywhere else.

Randomness, and where it matches Zoology:

* Keys, values and slots come from numpy's legacy Mersenne-Twister stream seeded with
  ``seed`` (:class:`numpy.random.RandomState`), drawn in Zoology's order: every example's keys
  (one ``choice`` per example), then every example's values, then every example's slots.
  Zoology seeds the *global* legacy generator with ``np.random.seed(seed)``, which is the same
  stream, so with ``random_non_queries=False`` our examples are identical to Zoology's for the
  same seed and parameters. We use a private generator: the global one is left untouched.
* Zoology fills the zeros with ``torch.randint`` from torch's global, unseeded generator, so its
  filled examples cannot be reproduced. Ours are drawn from ``numpy.random.default_rng(
  SeedSequence([seed, 1]))`` (a stream independent of the first), one draw of shape
  ``[num_examples, input_seq_len]`` whose entries at the zero positions are used -- the same
  distribution as Zoology's, reproducible from ``seed``.
* ``num_passes > 1`` (JRT-style repetition, arXiv:2407.05483): in Zoology's code the pairs are
  written into a ``[N, C]`` array through a stride-2 view of ``n * P`` columns from ``n`` keys,
  which fails to broadcast for ``n > 1`` (and for ``n == 1`` tiles twice, making inputs longer
  than ``T``). Ours does what its comments describe: the ``n`` pairs, in the same order, written
  ``P`` times, then the query region of ``T - C`` tokens. The draws are the same as for
  ``P = 1`` except that the slots range over the shorter query region.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "IGNORE_INDEX",
    "MQARParams",
    "gap_probabilities",
    "multiquery_ar",
    "query_gaps",
]

IGNORE_INDEX = -100  # Zoology's (and torch's cross_entropy's) ignored label
_FILL_STREAM = 1  # SeedSequence([seed, _FILL_STREAM]) seeds the random fill
_MAX_SEED = 2**32  # numpy's legacy seeding accepts [0, 2**32)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class MQARParams:
    """The parameters of one MQAR data segment, checked on construction.

    Args:
        vocab_size: tokens in the vocabulary (Zoology figure 2: 8192). Keys come from
            ``[1, vocab_size // 2)``, values from ``[vocab_size // 2, vocab_size)``.
        num_examples: examples in the segment (figure 2: 100,000 train, 3,000 test).
        input_seq_len: tokens per example ``T`` (even).
        seed: seed of numpy's legacy generator, in ``[0, 2**32)``.
        power_a: the power-law exponent ``a`` of the query slots (0.01: strongly favours the
            first slots; 1.0: uniform). A positive finite float.
        num_kv_pairs: key-value pairs ``n`` per example, each queried once.
        num_passes: times the pairs are written before the queries (1 in Zoology's figure 2).
        random_non_queries: fill the non-pair, non-query positions with random tokens.

    Raises:
        ValueError: one line naming the first impossible value: a non-integer or non-positive
            count, an odd ``input_seq_len``, ``vocab_size <= input_seq_len``, no room for the
            pairs and their queries (``2 * n * P + 2 * n > T``), a seed outside ``[0, 2**32)``,
            a non-positive or non-finite ``power_a``. The first three are Zoology's asserts.
    """

    vocab_size: int
    num_examples: int
    input_seq_len: int
    seed: int
    power_a: float = 0.01
    num_kv_pairs: int = 8
    num_passes: int = 1
    random_non_queries: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "num_examples", "input_seq_len", "num_kv_pairs", "num_passes"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"MQAR {name}={value!r}: expected a positive integer")
        if not _is_int(self.seed) or not 0 <= self.seed < _MAX_SEED:
            raise ValueError(f"MQAR seed={self.seed!r}: expected an integer in [0, 2**32)")
        if (
            isinstance(self.power_a, bool)
            or not isinstance(self.power_a, (int, float, np.floating, np.integer))
            or not math.isfinite(self.power_a)
            or self.power_a <= 0
        ):
            raise ValueError(f"MQAR power_a={self.power_a!r}: expected a positive finite number")
        if not isinstance(self.random_non_queries, (bool, np.bool_)):
            raise ValueError(  # noqa: TRY004 (the project reports bad values as ValueError)
                f"MQAR random_non_queries={self.random_non_queries!r}: expected true or false"
            )
        if self.input_seq_len % 2:
            raise ValueError(f"MQAR input_seq_len={self.input_seq_len}: expected an even length")
        if self.vocab_size <= self.input_seq_len:
            raise ValueError(
                f"MQAR vocab_size={self.vocab_size}: expected more than input_seq_len="
                f"{self.input_seq_len} tokens"
            )
        need = self.context_len + 2 * self.num_kv_pairs
        if need > self.input_seq_len:
            raise ValueError(
                f"MQAR input_seq_len={self.input_seq_len}: expected at least {need} tokens for "
                f"num_kv_pairs={self.num_kv_pairs} pairs x num_passes={self.num_passes} and "
                "their queries"
            )

    @property
    def context_len(self) -> int:
        """Tokens of the key-value block, ``2 * num_kv_pairs * num_passes``."""
        return 2 * self.num_kv_pairs * self.num_passes

    @property
    def num_slots(self) -> int:
        """Query slots in the query region, ``(input_seq_len - context_len) // 2``."""
        return (self.input_seq_len - self.context_len) // 2


def gap_probabilities(input_seq_len: int, num_kv_pairs: int, power_a: float = 0.01,
                      num_passes: int = 1) -> np.ndarray:
    """The power law of the query slots: ``p[g]`` for the slot at input position ``C + 2 g``.

    ``p[g] = a * (g + 1) ** (a - 1) / sum_j a * (j + 1) ** (a - 1)`` for
    ``g in [0, (T - C) // 2)``, ``C = 2 * num_kv_pairs * num_passes``, computed with Zoology's
    expression (``multiquery_ar``'s "compute power law") so the float64 values are the ones
    it draws with. The ``num_kv_pairs`` slots of an example are drawn without replacement with
    these weights (numpy's ``choice(..., replace=False, p=p)``, which renormalises after each
    draw), so the marginal of a slot is not ``p`` itself; ``p`` is the first query's law.

    Returns:
        float64 ``[(T - C) // 2]``, summing to 1.

    Raises:
        ValueError: parameters :class:`MQARParams` refuses (vocab_size is taken as ``T + 1``).
    """
    params = MQARParams(vocab_size=input_seq_len + 1, num_examples=1,
                        input_seq_len=input_seq_len, seed=0, power_a=power_a,
                        num_kv_pairs=num_kv_pairs, num_passes=num_passes)
    space = params.num_slots
    p = params.power_a * np.arange(1, space + 1) ** (params.power_a - 1)
    return p / p.sum()


def multiquery_ar(
    vocab_size: int,
    num_examples: int,
    input_seq_len: int,
    seed: int,
    power_a: float = 0.01,
    num_kv_pairs: int = 8,
    num_passes: int = 1,
    random_non_queries: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Generate one MQAR data segment (module docstring: layout, labels, randomness).

    Args: as :class:`MQARParams`.

    Returns:
        ``(inputs, labels)``, int64 ``[num_examples, input_seq_len]``; ``labels[i, t]`` is the
        value of the key at ``inputs[i, t]`` where that is a query, else -100.

    Raises:
        ValueError: parameters :class:`MQARParams` refuses.

    Cost: one legacy ``choice`` per example for keys, values and slots (a permutation of the
    ``vocab_size / 2`` keys and values each), about 0.3-0.5 ms per example at vocab 8192.
    """
    params = MQARParams(vocab_size=vocab_size, num_examples=num_examples,
                        input_seq_len=input_seq_len, seed=seed, power_a=power_a,
                        num_kv_pairs=num_kv_pairs, num_passes=num_passes,
                        random_non_queries=random_non_queries)
    n, pairs = params.num_examples, params.num_kv_pairs
    rng = np.random.RandomState(params.seed)
    half = params.vocab_size // 2
    key_choices = np.arange(1, half)
    value_choices = np.arange(half, params.vocab_size)
    # Zoology's order of draws: all keys, then all values, then all slots, one call per example.
    keys = np.stack([rng.choice(key_choices, size=pairs, replace=False) for _ in range(n)])
    values = np.stack([rng.choice(value_choices, size=pairs, replace=False) for _ in range(n)])
    p = gap_probabilities(params.input_seq_len, pairs, params.power_a, params.num_passes)
    slots = np.arange(params.num_slots)
    gaps = np.stack([rng.choice(slots, size=pairs, replace=False, p=p) for _ in range(n)])

    inputs = np.zeros((n, params.input_seq_len), dtype=np.int64)
    block = np.empty((n, 2 * pairs), dtype=np.int64)
    block[:, 0::2] = keys
    block[:, 1::2] = values
    inputs[:, : params.context_len] = np.tile(block, (1, params.num_passes))
    query_pos = params.context_len + 2 * gaps
    np.put_along_axis(inputs, query_pos, keys, axis=1)
    labels = np.full((n, params.input_seq_len), IGNORE_INDEX, dtype=np.int64)
    np.put_along_axis(labels, query_pos, values, axis=1)

    if params.random_non_queries:
        fill = np.random.default_rng(np.random.SeedSequence([params.seed, _FILL_STREAM]))
        noise = fill.integers(0, params.vocab_size, size=inputs.shape, dtype=np.int64)
        zero = inputs == 0
        inputs[zero] = noise[zero]
    return inputs, labels


def query_gaps(inputs: np.ndarray, labels: np.ndarray, num_kv_pairs: int,
               num_passes: int = 1) -> np.ndarray:
    """Tokens from each query back to its key's last writing in the key-value block.

    For every supervised position ``t`` (``labels[i, t] != -100``, so ``inputs[i, t]`` is a
    query), the distance ``t - s`` where ``s`` is the last position ``< t`` in the first
    ``2 * num_kv_pairs * P`` tokens holding that key (keys sit at even positions of the
    block). This is the recall distance the accuracy bands of the reports use; with
    ``power_a < 1`` most queries come soon after the block.

    Args:
        inputs: int ``[N, T]`` from :func:`multiquery_ar`.
        labels: int ``[N, T]`` from :func:`multiquery_ar`.
        num_kv_pairs: the ``n`` they were generated with.
        num_passes: the ``P`` they were generated with.

    Returns:
        int64 ``[N, T]``: the distance in tokens at supervised positions, 0 elsewhere.

    Raises:
        ValueError: shapes that differ or are not 2-D, or a query whose key is not among the
            pairs (not MQAR data for this ``num_kv_pairs``).
    """
    inputs = np.asarray(inputs)
    labels = np.asarray(labels)
    if inputs.ndim != 2 or inputs.shape != labels.shape:
        raise ValueError(
            f"query_gaps: inputs {inputs.shape} and labels {labels.shape}: expected equal [N, T]"
        )
    out = np.zeros(inputs.shape, dtype=np.int64)
    rows, cols = np.nonzero(labels != IGNORE_INDEX)
    if rows.size == 0:
        return out
    # Keys of the first pass sit at 0, 2, ..., 2n-2; pass k repeats them at +2n*k, so the
    # last writing of key j is at 2j + 2n(P-1).
    key_block = inputs[:, 0 : 2 * num_kv_pairs : 2]  # [N, n]
    queried = inputs[rows, cols]
    match = key_block[rows] == queried[:, None]  # [Q, n]
    if not match.any(axis=1).all():
        bad = int(np.flatnonzero(~match.any(axis=1))[0])
        raise ValueError(
            f"query_gaps: example {int(rows[bad])} position {int(cols[bad])} queries token "
            f"{int(queried[bad])}, which is not among its first {num_kv_pairs} keys"
        )
    j = match.argmax(axis=1)
    key_pos = 2 * j + 2 * num_kv_pairs * (num_passes - 1)
    out[rows, cols] = cols - key_pos
    return out
