"""Verifying a split's examples: the Oracle's rules on each, and (``regenerate``) each example
again from its seed."""

from __future__ import annotations

import numpy as np

from swar_bench.tasks.oracle import verify_example
from swar_bench.tasks.passkey_swar import PasskeySwarParams, make_example
from swar_bench.tasks.store.errors import DataSourceError
from swar_bench.tasks.store.parquet import iter_examples


def verify_dataset(ds, params: PasskeySwarParams | None = None, regenerate: bool = False) -> int:
    """Run the oracle on every example (and, with ``regenerate``, check that ``make_example``
    reproduces each from its seed). Returns the number of examples checked.

    Raises:
        OracleError: the first example that breaks a rule (message names seed, index, position).
        DataSourceError: ``regenerate`` and an example differs from its regeneration.
    """
    params = params or PasskeySwarParams()
    count = 0
    for index, ex in enumerate(iter_examples(ds)):
        verify_example(ex, params, index=index)
        if regenerate:
            again = make_example(ex["seed"], ex["n_writes"], params)
            if not (
                np.array_equal(again["input_ids"], ex["input_ids"])
                and np.array_equal(again["labels"], ex["labels"])
                and again["answer_type"] == ex["answer_type"]
            ):
                raise DataSourceError(
                    f"example seed={ex['seed']} index={index}: differs from make_example(seed, {ex['n_writes']}) "
                    "(expected the stored example to be reproducible from its seed)"
                )
        count += 1
    return count
