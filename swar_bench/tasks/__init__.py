"""The passkey_swar task (numpy only): parameters, vocabulary, generators, oracle, statistics.

See ``passkey_swar`` (generation, docs/TASK.md "Format" / "Answer rule"), ``oracle``
(verification and per-position annotation), ``stats`` (the statistics table, docs/TASK.md "Statistics") and
``store`` (the release's parquet layout on disk and on the Hub, one module per idea; its names
imported from ``hub_io``).
"""

from swar_bench.tasks.oracle import ANSWER_KINDS, OracleError, annotate, verify_example
from swar_bench.tasks.passkey_swar import (
    ALLOWED_N,
    SPLIT_SEEDS,
    TRAIN_N,
    PasskeySwarParams,
    Vocab,
    example_seed,
    generate_examples,
    make_example,
    vocab,
)

__all__ = [
    "ALLOWED_N",
    "ANSWER_KINDS",
    "SPLIT_SEEDS",
    "TRAIN_N",
    "OracleError",
    "PasskeySwarParams",
    "Vocab",
    "annotate",
    "example_seed",
    "generate_examples",
    "make_example",
    "verify_example",
    "vocab",
]
