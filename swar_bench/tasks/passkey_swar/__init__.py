"""passkey_swar: Passkey + Sliding-Window Associative Recall (the dataset card, normative).

One example is the token sequence ::

    BOS  PK p1 p2 p3 p4   <stream>   PKQ p1 p2 p3 p4 EOS

where the stream holds ``n_writes`` associative-recall writes ``W k v``; after every write,
queries ``Q k a`` follow while a coin with probability ``q / (1 + q)`` comes up
(``q = query_rate``, so about one query per ``1 / q`` writes). The answer ``a`` of a query is the
value of the key's latest write when its age is ``<= w`` (``ar_valid``) and ``NULL`` when the key
was never written or its age is ``> 2w`` (``ar_expired``); keys with ``w < age <= 2w`` (the gray
zone) are never queried. ``age`` = number of writes since the key's most recent write (the
immediately preceding write has age 1; only the latest write counts). docs/TASK.md sections:
"Format", "Answer rule", "Vocabulary", "Columns".

Two implementations produce the same examples, bit for bit (tested):

* :func:`make_example` (``reference.py``) -- the slow, obviously-correct per-example Python loop;
* :func:`generate_examples` (``batched.py``) -- the batched generator, vectorised with numpy
  across examples (its bit-mask helpers in ``bits.py``).

Both read their randomness from the same counter-based streams (:func:`stream_bits`, ``rng.py``):
draw ``i`` of stream ``s`` of the example with seed ``seed`` is a pure function of
``(seed, s, i)``, so the two paths cannot drift apart by consuming random numbers in a different
order. The task's constants and :class:`PasskeySwarParams` are in ``params.py``, the token ids and
:class:`Vocab` in ``vocab.py``, the per-example seed formula in ``seeds.py``. Numpy only.
"""

from swar_bench.tasks.passkey_swar.batched import (
    FlatBatch,
    examples_per_chunk,
    generate_examples,
    generate_flat,
)
from swar_bench.tasks.passkey_swar.bits import (
    or_levels,
    popcount,
    select_bit,
    select_key,
    window_or,
)
from swar_bench.tasks.passkey_swar.params import (
    ALLOWED_N,
    ANSWER_TYPES,
    IGNORE_INDEX,
    MAX_KEYS,
    PASSKEY_LEN,
    SPLIT_SEEDS,
    SPLIT_SIZES,
    TRAIN_N,
    PasskeySwarParams,
)
from swar_bench.tasks.passkey_swar.reference import make_example
from swar_bench.tasks.passkey_swar.rng import (
    STREAM_ACTIVE_ORDER,
    STREAM_ACTIVE_SIZE,
    STREAM_PASSKEY,
    STREAM_QUERY,
    STREAM_SWAP,
    STREAM_WRITE,
    bits_at,
    hi32,
    lo32,
    prob32,
    query_thresholds,
    stream_bits,
    stream_keys,
    uniform_index,
    write_cells,
)
from swar_bench.tasks.passkey_swar.seeds import example_seed, split_seeds
from swar_bench.tasks.passkey_swar.vocab import (
    BOS,
    EOS,
    N_SPECIAL,
    NULL,
    PAD,
    PK,
    PKQ,
    SPECIAL_TOKENS,
    Q,
    Vocab,
    W,
    vocab,
    write_vocab_json,
)

__all__ = [
    "ALLOWED_N",
    "ANSWER_TYPES",
    "BOS",
    "EOS",
    "IGNORE_INDEX",
    "MAX_KEYS",
    "NULL",
    "N_SPECIAL",
    "PAD",
    "PASSKEY_LEN",
    "PK",
    "PKQ",
    "SPECIAL_TOKENS",
    "SPLIT_SEEDS",
    "SPLIT_SIZES",
    "STREAM_ACTIVE_ORDER",
    "STREAM_ACTIVE_SIZE",
    "STREAM_PASSKEY",
    "STREAM_QUERY",
    "STREAM_SWAP",
    "STREAM_WRITE",
    "TRAIN_N",
    "FlatBatch",
    "PasskeySwarParams",
    "Q",
    "Vocab",
    "W",
    "bits_at",
    "example_seed",
    "examples_per_chunk",
    "generate_examples",
    "generate_flat",
    "hi32",
    "lo32",
    "make_example",
    "or_levels",
    "popcount",
    "prob32",
    "query_thresholds",
    "select_bit",
    "select_key",
    "split_seeds",
    "stream_bits",
    "stream_keys",
    "uniform_index",
    "vocab",
    "window_or",
    "write_cells",
    "write_vocab_json",
]
