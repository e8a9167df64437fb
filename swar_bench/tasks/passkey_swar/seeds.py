"""Per-example seeds (docs/TASK.md, "Columns") and the argument checks the generators share."""

from __future__ import annotations

import numpy as np

from swar_bench.tasks.passkey_swar.params import SPLIT_SEEDS


def example_seed(split: str, n_writes: int, index: int) -> int:
    """Per-example seed ``split_seed * 10**12 + N * 10**6 + index`` (docs/TASK.md, "Columns").

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
