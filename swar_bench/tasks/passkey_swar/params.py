"""The task's constants (configs, splits, special label values) and the generator's parameters
(docs/TASK.md, "Configs and splits", "Generation", "Columns")."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from swar_bench.tasks.passkey_swar.vocab import N_SPECIAL

ALLOWED_N: tuple[int, ...] = tuple(2**i for i in range(5, 15))
"""The released configs ``n{N}`` (docs/TASK.md, "Configs and splits"): N = 32, 64, ..., 16384 writes."""

TRAIN_N: tuple[int, ...] = (32, 64, 128, 256)
"""Configs that have a train split (docs/TASK.md, "Configs and splits")."""

SPLIT_SEEDS: dict[str, int] = {"train": 1, "validation": 2, "test": 3}
"""Split seeds (docs/TASK.md, "Generation")."""

SPLIT_SIZES: dict[str, int] = {"train": 100_000, "validation": 1_000, "test": 1_000}
"""Examples per config in each split of the release (docs/TASK.md, "Configs and splits")."""

MAX_KEYS = 64
"""Largest ``n_keys`` the generator supports (key sets are 64-bit masks)."""

IGNORE_INDEX = -100
"""``labels`` value at unsupervised positions (docs/TASK.md, "Columns"; the HF / PyTorch convention)."""

PASSKEY_LEN = 4
"""Passkey tokens (docs/TASK.md, "Format")."""

ANSWER_TYPES: tuple[str, ...] = ("ar_valid", "ar_expired", "passkey")
"""The ``answer_type`` strings of docs/TASK.md's "Columns" section."""


@dataclass(frozen=True)
class PasskeySwarParams:
    """Generator parameters (docs/TASK.md, "Generation"; defaults are the release's).

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
        """The parameters as a JSON-ready dict (the ``Parameters:`` line of a generated README.md)."""
        return dataclasses.asdict(self)

    @property
    def query_prob(self) -> float:
        """``q / (1 + q)``: probability that one more query follows (docs/TASK.md, "Format")."""
        return self.query_rate / (1.0 + self.query_rate)
