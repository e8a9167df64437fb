"""A parameter-free mechanism that reads the passkey_swar stream and answers by the task's rules (docs/TASK.md).

It proves the metrics pipeline end to end: on every supervised position it puts almost all
probability (``answer_logit`` above the rest) on the correct token, so every accuracy must read
100%. Rules (docs/TASK.md, "Format" / "Answer rule" / "Vocabulary"):

- ``PK p1 p2 p3 p4``: the 4 tokens after PK are the passkey.
- ``W k v``: a write; writes are counted, and each key remembers its latest value and write number.
- ``Q k``: the next token is the value of k's latest write if its age (writes since that write;
  the immediately preceding write has age 1) is <= w, else NULL (also when k was never written).
- ``PKQ``: the next 4 tokens are the passkey, in order.
Everywhere else the logits are uniform (all zero).

The state is fixed size (int64 tensors): the last 4 tokens, the write counter, per-key latest
value and write number, and the passkey.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from swar_bench.mechanisms.base import check_positive_int
from swar_bench.mechanisms.protocol import map_state

# Token ids of the task's vocabulary (section "Vocabulary").
PAD, BOS, EOS, PK, PKQ, W, Q, NULL = range(8)
FIRST_KEY = 8
PASSKEY_LEN = 4
LOOKBACK = PASSKEY_LEN  # tokens of left context any rule needs


@dataclasses.dataclass
class OracleState:
    """``recent [B, 4]`` last tokens (-1 = none), ``n_writes [B]`` writes seen,
    ``last_write [B, n_keys]`` write number of each key's latest write (0 = never),
    ``last_value [B, n_keys]`` its value token, ``passkey [B, 4]`` passkey tokens (-1 = unknown)."""

    recent: torch.Tensor
    n_writes: torch.Tensor
    last_write: torch.Tensor
    last_value: torch.Tensor
    passkey: torch.Tensor


class Oracle(nn.Module):
    """The task's answer rule (docs/TASK.md, "Answer rule") as a ContextMechanism (no parameters, no training).

    Args:
        vocab_size: must equal ``8 + n_keys + n_values`` (40 for the task's default parameters).
        params: optional ``swar_bench.tasks.passkey_swar.PasskeySwarParams``, a dict of its fields,
            or anything with ``w``, ``n_keys``, ``n_values`` attributes; the task's defaults
            (16, 16, 16) when None. The harness checks them against the data's parameters.
        answer_logit: logit of the predicted token at answer positions (others are 0), so its
            probability is ``e^a / (e^a + V - 1)`` (> 0.9999999 for a = 20, V = 40).

    Raises:
        ValueError: when ``vocab_size`` does not match the parameters.
    """

    fixed_size_state = True

    def __init__(self, vocab_size: int = 40, params: Any = None, answer_logit: float = 20.0):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)  # a size first, as every mechanism: then the task's rule
        if isinstance(params, Mapping):  # e.g. --model.mechanism.init_args.params='{"w": 32}'
            from swar_bench.tasks.passkey_swar import PasskeySwarParams

            try:
                params = PasskeySwarParams(**params)
            except TypeError as err:
                raise ValueError(f"params={dict(params)!r}: {err}; expected fields of PasskeySwarParams") from None
        if params is None:
            from swar_bench.tasks.passkey_swar import PasskeySwarParams

            params = PasskeySwarParams()
        self.task_params = params  # the rules it reads the stream with (checked against the data's)
        self.w = int(getattr(params, "w", 16))
        self.n_keys = int(getattr(params, "n_keys", 16))
        self.n_values = int(getattr(params, "n_values", 16))
        check_positive_int("w", self.w)
        check_positive_int("n_keys", self.n_keys)
        check_positive_int("n_values", self.n_values)
        expected = FIRST_KEY + self.n_keys + self.n_values
        if vocab_size != expected:
            raise ValueError(
                f"vocab_size={vocab_size} does not match the task's vocabulary of {expected} tokens "
                f'(8 specials + n_keys={self.n_keys} + n_values={self.n_values}; docs/TASK.md, "Vocabulary")'
            )
        self.vocab_size = vocab_size
        self.first_value = FIRST_KEY + self.n_keys
        self.answer_logit = float(answer_logit)

    @property
    def n_params(self) -> int:
        return 0

    @property
    def flops_per_token(self) -> float:
        return 0.0

    def init_state(self, batch_size: int, device=None, dtype=None) -> OracleState:
        """Empty state (int64 tensors on ``device``; ``dtype`` is ignored: the state is integer)."""
        check_positive_int("batch_size", batch_size)

        def full(*shape, value):
            return torch.full(shape, value, dtype=torch.int64, device=device)

        return OracleState(
            recent=full(batch_size, LOOKBACK, value=-1),
            n_writes=full(batch_size, value=0),
            last_write=full(batch_size, self.n_keys, value=0),
            last_value=full(batch_size, self.n_keys, value=-1),
            passkey=full(batch_size, PASSKEY_LEN, value=-1),
        )

    def state_bytes(self, batch_size: int, seq_len: int = 0, dtype=None) -> int:
        """``8 * B * (4 + 1 + 2 * n_keys + 4)`` bytes (int64), independent of ``seq_len``."""
        check_positive_int("batch_size", batch_size)
        return 8 * batch_size * (LOOKBACK + 1 + 2 * self.n_keys + PASSKEY_LEN)

    def detach_state(self, state: OracleState) -> OracleState:
        return map_state(torch.Tensor.detach, state)

    def _last_occurrence(
        self, hit: torch.Tensor, values: torch.Tensor, carried: torch.Tensor
    ) -> torch.Tensor:
        """For ``hit [B, T, S]`` (bool), ``values [B, T]`` and ``carried [B, S]``: the value at the latest
        hit at or before each t per slot s, else the carried one. -> ``[B, T, S]``."""
        B, T, S = hit.shape
        pos = torch.arange(T, device=hit.device).view(1, T, 1).expand(B, T, S)
        last = torch.where(hit, pos, torch.full_like(pos, -1)).cummax(dim=1).values
        taken = values.gather(1, last.clamp(min=0).reshape(B, T * S)).view(B, T, S)
        return torch.where(last >= 0, taken, carried.unsqueeze(1).expand(B, T, S))

    def forward(
        self, input_ids: torch.Tensor, state: OracleState | None = None
    ) -> tuple[torch.Tensor, OracleState]:
        """``input_ids[B, T]`` -> ``(logits[B, T, vocab_size]`` float32, state)``; position t's logits
        predict token t + 1. Vectorised over T (cumulative maxima), exact for any chunking."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [B, T], got shape {tuple(input_ids.shape)}")
        x = input_ids.long()
        B, T = x.shape
        if state is None:
            state = self.init_state(B, x.device)
        ext = torch.cat([state.recent, x], dim=1)  # [B, 4 + T]

        def prev(j: int) -> torch.Tensor:  # token j steps before each position, [B, T]
            return ext[:, LOOKBACK - j : LOOKBACK - j + T]

        is_key = (x >= FIRST_KEY) & (x < self.first_value)
        is_value = (x >= self.first_value) & (x < self.vocab_size)
        prev_is_key = (prev(1) >= FIRST_KEY) & (prev(1) < self.first_value)

        # Writes "W k v": completed at the value token.
        is_write = (prev(2) == W) & prev_is_key & is_value
        n_writes = state.n_writes.unsqueeze(1) + is_write.long().cumsum(1)  # [B, T]
        key_slots = torch.arange(self.n_keys, device=x.device)
        write_hit = is_write.unsqueeze(-1) & (
            (prev(1) - FIRST_KEY).unsqueeze(-1) == key_slots
        )  # [B, T, K]
        last_write = self._last_occurrence(write_hit, n_writes, state.last_write)
        last_value = self._last_occurrence(write_hit, x, state.last_value)

        # Passkey "PK p1 p2 p3 p4": digit j sits j + 1 tokens after PK.
        pk_hit = torch.stack(
            [prev(j + 1) == PK for j in range(PASSKEY_LEN)], dim=-1
        ) & is_value.unsqueeze(-1)
        passkey = self._last_occurrence(pk_hit, x, state.passkey)  # [B, T, 4]

        target = torch.full_like(x, -1)
        # Query "Q k": answer the latest write if its age <= w, else NULL.
        is_query = (prev(1) == Q) & is_key
        qkey = (x - FIRST_KEY).clamp(0, self.n_keys - 1).unsqueeze(-1)
        q_last = last_write.gather(2, qkey).squeeze(-1)
        q_value = last_value.gather(2, qkey).squeeze(-1)
        age = n_writes - q_last + 1
        answer = torch.where((q_last > 0) & (age <= self.w), q_value, torch.full_like(x, NULL))
        target = torch.where(is_query, answer, target)
        # Passkey readout: j tokens after PKQ (j = 0 is PKQ itself), predict digit j.
        for j in range(PASSKEY_LEN):
            at_readout = (x == PKQ) if j == 0 else (prev(j) == PKQ)
            target = torch.where(at_readout & (passkey[..., j] >= 0), passkey[..., j], target)

        logits = torch.zeros(B, T, self.vocab_size, device=x.device, dtype=torch.float32)
        answered = target >= 0
        logits.scatter_(
            2, target.clamp(min=0).unsqueeze(-1), self.answer_logit * answered.unsqueeze(-1).float()
        )
        new_state = OracleState(
            recent=ext[:, ext.shape[1] - LOOKBACK :].clone(),
            n_writes=n_writes[:, -1].clone() if T else state.n_writes,
            last_write=last_write[:, -1].clone() if T else state.last_write,
            last_value=last_value[:, -1].clone() if T else state.last_value,
            passkey=passkey[:, -1].clone() if T else state.passkey,
        )
        return logits, new_state
