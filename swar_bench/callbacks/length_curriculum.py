"""Which N to train on next: a Thompson-sampling bandit over the training ``n_writes`` buckets.

The rule is the referee's length curriculum (docs/REFEREE.md, "The length curriculum"),
reusing the referee's ``ThompsonBernoulli`` and ``FlopLedger``:

- one arm per training N;
- reward of a batch at N = ``clip((previous loss at N - this loss at N) / ln(vocab_size), 0, 1)``
  (the fraction of the largest possible loss reduction, chance loss = uniform guess) divided by
  N's FLOP cost relative to the cheapest bucket, so it lies in [0, 1] ("loss improvement per
  FLOP");
- FLOPs of a batch = 6 * n_params * tokens (Kaplan et al. 2020), counted from the tokens of the
  batch actually trained (``input_ids.numel()`` summed over ranks);
- a ledger holding ``budget_flops`` split evenly across arms masks any arm whose next batch it
  cannot pay; when no arm can pay, training stops.

The improvement is measured on the batch's own N (``batch.n_writes``, a :class:`~swar_bench.datamodules.batches.Batch`), between consecutive
batches of that N, with the module's ``last_train_loss``; the choice goes to the DataModule through
``trainer.datamodule.set_train_n(n_writes)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_info

from swar_bench.callbacks.answer_type_accuracy import check_n_writes_values
from swar_bench.referee.bandit import FlopLedger, ThompsonBernoulli
from swar_bench.tasks.passkey_swar import TRAIN_N

PASSKEY_SWAR_VOCAB_SIZE = 40
"""The task's vocabulary size (docs/TASK.md, "Vocabulary"): chance loss ln(40) nats."""


def expected_tokens_per_example(n_writes: int, query_rate: float = 0.25) -> float:
    """Mean passkey_swar sequence length in tokens at N writes: ``12 + 3 * N * (1 + query_rate)``.

    BOS, PK, 4 passkey tokens, PKQ, 4 passkey tokens and EOS make 12 tokens; every write ``W k v``
    and every query ``Q k a`` is 3 tokens, with ``query_rate`` queries per write on average
    (docs/TASK.md, "Format"; it gives 132 tokens at n32 and 972 at n256, as measured on the release).
    """
    return 12.0 + 3.0 * n_writes * (1.0 + query_rate)


class LengthCurriculum(Callback):
    """Choose the training N of every next batch with Thompson sampling under a FLOP ledger.

    Args:
        n_writes_values: the training N buckets, one arm each (default: ``TRAIN_N``, the N with a train split).
        budget_flops: total training FLOPs the ledger may hand out (split evenly across arms);
            ``None`` = no rationing (no arm is ever masked).
        vocab_size: vocabulary size; the chance loss is ``ln(vocab_size)`` nats (default 40).
        query_rate: the task's queries per write, for the relative cost of each N (default 0.25).
        seed: seed of the bandit's sampler (the same seed and losses give the same choices);
            ``None`` = the run's global seed (``seed_everything``, read from ``PL_GLOBAL_SEED``, 0
            when unset), so the independent seeds of a study draw independent curricula.

    Attributes:
        bandit: the ``ThompsonBernoulli`` over the arms. ledger: the ``FlopLedger`` (or None).
        current_n: the N last passed to ``set_train_n`` (None before training starts).
        flops_spent: FLOPs of every observed batch (6 * n_params * tokens), all ranks.
        choice_counts: ``int64[n_arms]`` how often each N was chosen.

    Needs: ``trainer.datamodule.set_train_n(n_writes: int)``; the module's ``last_train_loss``
    (float, mean loss of the last training batch); batches with ``input_ids[B, T]`` and
    ``n_writes[B]`` (one N per batch).

    Raises:
        ValueError: bad arguments, a batch whose N is not an arm, ranks training different N in
            one step, or a ``state_dict`` from a curriculum over other N.
        TypeError: no DataModule with ``set_train_n``, or a module without ``last_train_loss``.
    """

    def __init__(
        self,
        n_writes_values: Sequence[int] = TRAIN_N,
        budget_flops: float | None = None,
        vocab_size: int = PASSKEY_SWAR_VOCAB_SIZE,
        query_rate: float = 0.25,
        seed: int | None = 0,
    ) -> None:
        super().__init__()
        self.n_writes_values = check_n_writes_values(n_writes_values)
        if isinstance(vocab_size, bool) or int(vocab_size) != vocab_size or vocab_size < 2:
            raise ValueError(f"vocab_size={vocab_size!r}: expected an integer >= 2")
        if not (math.isfinite(query_rate) and query_rate >= 0):
            raise ValueError(f"query_rate={query_rate!r}: expected a finite number >= 0")
        self.chance_loss = math.log(int(vocab_size))
        if seed is None:
            seed = int(os.environ.get("PL_GLOBAL_SEED", "0"))
        if isinstance(seed, bool) or int(seed) != seed or seed < 0:
            raise ValueError(f"seed={seed!r}: expected an integer >= 0, or None for the run's global seed")
        self.seed = int(seed)
        n_arms = len(self.n_writes_values)
        self.bandit = ThompsonBernoulli(n_arms, seed=self.seed)
        self.ledger = None if budget_flops is None else FlopLedger(budget_flops, n_arms)
        tokens = np.array(
            [expected_tokens_per_example(n, query_rate) for n in self.n_writes_values]
        )
        self.relative_cost = tokens / tokens.min()
        self._expected_tokens = tokens
        self.n_params: int | None = None
        self.current_n: int | None = None
        self.flops_spent = 0.0
        self.choice_counts = np.zeros(n_arms, dtype=np.int64)
        self._prev_loss = np.full(n_arms, np.nan)
        self._flops_per_expected_token: float | None = None

    # -- the rule (no Lightning): one observed batch in, the next N out --------------------------
    def arm_of(self, n_writes: int) -> int:
        """Arm index of a training N; ``ValueError`` when it is not one of ``n_writes_values``."""
        if int(n_writes) not in self.n_writes_values:
            raise ValueError(
                f"training batch n_writes={n_writes!r}: expected one of the curriculum's {list(self.n_writes_values)}"
            )
        return self.n_writes_values.index(int(n_writes))

    def next_cost_flops(self) -> np.ndarray | None:
        """Estimated FLOPs of the next batch of every arm ``float64[n_arms]``: the FLOPs per
        expected token of the last observed batch times each N's expected tokens (None before
        any batch)."""
        if self._flops_per_expected_token is None:
            return None
        return self._flops_per_expected_token * self._expected_tokens

    def reward(self, n_writes: int, previous_loss: float, loss: float) -> float:
        """``clip((previous_loss - loss) / ln(vocab_size), 0, 1) / relative_cost[N]`` in [0, 1]."""
        fraction = min(max((previous_loss - loss) / self.chance_loss, 0.0), 1.0)
        return fraction / float(self.relative_cost[self.arm_of(n_writes)])

    def select(self) -> int | None:
        """Draw the next N among the arms the ledger can pay for; None when none can."""
        mask = None
        costs = self.next_cost_flops()
        if self.ledger is not None and costs is not None:
            mask = self.ledger.mask(costs.tolist())
            if not any(mask):
                return None
        arm = self.bandit.select(mask)
        self.current_n = self.n_writes_values[arm]
        self.choice_counts[arm] += 1
        return self.current_n

    def observe(self, n_writes: int, loss: float, tokens: int) -> int | None:
        """Account one training batch and return the next N (None: the FLOP budget is spent).

        Args:
            n_writes: the batch's N. loss: its mean loss (nats per supervised token, all ranks).
            tokens: tokens trained in the batch, all ranks (padding included: it is computed).
        """
        arm = self.arm_of(n_writes)
        if self.n_params is None:
            raise RuntimeError(
                "LengthCurriculum.n_params is unset: it is read from the module at fit start"
            )
        flops = 6.0 * self.n_params * float(tokens)
        self.flops_spent += flops
        self._flops_per_expected_token = flops / float(self._expected_tokens[arm])
        if self.ledger is not None:
            # Pay what the share still holds: an estimate that fell short must not crash training;
            # the arm is then empty and masked from now on.
            self.ledger.pay(arm, min(flops, self.ledger.remaining(arm)))
        if math.isfinite(loss):
            if math.isfinite(self._prev_loss[arm]):
                self.bandit.update(arm, self.reward(n_writes, float(self._prev_loss[arm]), loss))
            self._prev_loss[arm] = loss
        return self.select()

    # -- Lightning hooks ---------------------------------------------------------------------------
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        datamodule = getattr(trainer, "datamodule", None)
        if datamodule is None or not callable(getattr(datamodule, "set_train_n", None)):
            raise TypeError(
                f"LengthCurriculum needs a DataModule with set_train_n(n_writes); got {type(datamodule).__name__}"
            )
        # DTensor.numel() is the global size, so this also counts FSDP-sharded parameters fully.
        self.n_params = int(sum(p.numel() for p in pl_module.parameters()))

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        n = self.current_n if self.current_n is not None else self.select()
        trainer.datamodule.set_train_n(n)

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if not hasattr(pl_module, "last_train_loss"):
            raise TypeError(
                f"LengthCurriculum needs {type(pl_module).__name__}.last_train_loss (mean loss of the last training batch)"
            )
        n = batch.n
        local = torch.tensor(
            [float(pl_module.last_train_loss), float(batch.input_ids.numel()), float(n)],
            dtype=torch.float64,
            device=pl_module.device,
        )
        world = trainer.world_size
        total = trainer.strategy.reduce(local, reduce_op="sum") if world > 1 else local
        if float(total[2]) != n * world:
            raise ValueError(
                f"ranks trained different n_writes in one step (this rank n_writes={n}): expected one N per step"
            )
        next_n = self.observe(n, float(total[0]) / world, int(total[1]))
        log = {"on_step": True, "on_epoch": False, "batch_size": 1}
        pl_module.log("curriculum/flops_spent", self.flops_spent, **log)
        for value, mean in zip(self.n_writes_values, self.bandit.posterior_mean()):
            pl_module.log(f"curriculum/posterior_mean/n{value}", float(mean), **log)
        if next_n is None:
            rank_zero_info(
                f"LengthCurriculum: the FLOP budget ({self.ledger.budget_flops:.4g} FLOPs) is spent; stopping"
            )
            trainer.should_stop = True
            return
        pl_module.log("curriculum/n_writes", float(next_n), **log)
        trainer.datamodule.set_train_n(next_n)

    # -- checkpoint ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "n_writes_values": list(self.n_writes_values),
            # Posteriors, pulls and the sampler's position, so a resumed run draws what the
            # uninterrupted run would.
            "bandit": self.bandit.state_dict(),
            "ledger": None if self.ledger is None else self.ledger.state_dict(),
            "prev_loss": self._prev_loss.tolist(),
            "flops_per_expected_token": self._flops_per_expected_token,
            "flops_spent": self.flops_spent,
            "current_n": self.current_n,
            "choice_counts": self.choice_counts.tolist(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if tuple(state_dict["n_writes_values"]) != self.n_writes_values:
            raise ValueError(
                f"checkpoint curriculum over n_writes {state_dict['n_writes_values']}: expected {list(self.n_writes_values)}"
            )
        if (state_dict["ledger"] is None) != (self.ledger is None):
            raise ValueError(
                "checkpoint and configuration disagree on budget_flops (one has a FLOP ledger, the other not)"
            )
        self.bandit.load_state_dict(state_dict["bandit"])
        if self.ledger is not None:
            self.ledger.load_state_dict(state_dict["ledger"])
        self._prev_loss[:] = state_dict["prev_loss"]
        self._flops_per_expected_token = state_dict["flops_per_expected_token"]
        self.flops_spent = float(state_dict["flops_spent"])
        self.current_n = state_dict["current_n"]
        self.choice_counts[:] = state_dict["choice_counts"]
