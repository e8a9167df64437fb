"""The task's vocabulary (docs/TASK.md, "Vocabulary"): 8 special tokens, then keys ``k0..``, then values
``v0..``; ``vocab.json`` is ``{token: id}``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swar_bench.utils.files import atomic_write_text

if TYPE_CHECKING:
    from swar_bench.tasks.passkey_swar.params import PasskeySwarParams

SPECIAL_TOKENS: tuple[str, ...] = ("PAD", "BOS", "EOS", "PK", "PKQ", "W", "Q", "NULL")
N_SPECIAL = len(SPECIAL_TOKENS)
PAD, BOS, EOS, PK, PKQ, W, Q, NULL = range(N_SPECIAL)


@dataclass(frozen=True)
class Vocab:
    """Token ids (docs/TASK.md, "Vocabulary"): PAD=0 BOS=1 EOS=2 PK=3 PKQ=4 W=5 Q=6 NULL=7, keys
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
    """The vocabulary of ``params`` (the task's 40 tokens for the default parameters)."""
    # Imported here: params.py checks its sizes against N_SPECIAL from this module.
    from swar_bench.tasks.passkey_swar.params import PasskeySwarParams

    params = params or PasskeySwarParams()
    return Vocab(n_keys=params.n_keys, n_values=params.n_values)


def write_vocab_json(path: str | os.PathLike, params: PasskeySwarParams | None = None) -> str:
    """Write ``vocab.json`` (``{token: id}``) atomically to ``path``; returns the path."""
    text = json.dumps(vocab(params).to_dict(), indent=1) + "\n"
    atomic_write_text(path, text)
    return str(path)
