"""Thompson sampling over Bernoulli arms with fractional rewards, and the FLOP ledger that rations it.

Used by the referee's ``length_curriculum`` (one arm per length range) and by the training
harness's length-curriculum callback (one arm per ``n_writes``). The rule is Thompson sampling
with Beta(1, 1) priors (Thompson 1933; Agrawal & Goyal 2012 for the fractional-reward form:
a reward ``r`` in [0, 1] updates ``alpha += r``, ``beta += 1 - r``), as the referee (docs/REFEREE.md, "The length curriculum";
"Length curriculum as a bandit") specifies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class ThompsonBernoulli:
    """Beta-Bernoulli Thompson sampling with fractional rewards.

    Args:
        n_arms: number of arms (>= 1).
        seed: seed of the sampler's own ``numpy.random.Generator``; the same seed and the same
            sequence of ``select`` / ``update`` calls give the same choices.

    Attributes:
        alpha: ``float64[n_arms]`` Beta posterior alpha (starts at 1).
        beta: ``float64[n_arms]`` Beta posterior beta (starts at 1).
        pulls: ``int64[n_arms]`` number of ``update`` calls per arm.

    Raises:
        ValueError: ``n_arms`` < 1.
    """

    def __init__(self, n_arms: int, seed: int = 0) -> None:
        if int(n_arms) != n_arms or n_arms < 1:
            raise ValueError(f"n_arms={n_arms!r}: expected an integer >= 1")
        self.n_arms = int(n_arms)
        self.seed = int(seed)
        self.alpha = np.ones(self.n_arms, dtype=np.float64)
        self.beta = np.ones(self.n_arms, dtype=np.float64)
        self.pulls = np.zeros(self.n_arms, dtype=np.int64)
        self._rng = np.random.default_rng(self.seed)

    def _check_arm(self, arm: int) -> int:
        if isinstance(arm, bool) or int(arm) != arm or not 0 <= arm < self.n_arms:
            raise ValueError(f"arm={arm!r}: expected an integer in [0, {self.n_arms})")
        return int(arm)

    def select(self, mask: Sequence[bool] | None = None) -> int:
        """Draw one sample from every arm's Beta posterior and return the allowed arm with the largest.

        Args:
            mask: ``n_arms`` bools, True = the arm may be chosen; ``None`` allows every arm.
                A sample is drawn for every arm even when masked, so the random stream (and hence
                later choices) does not depend on the mask's history.

        Returns:
            The chosen arm index (int).

        Raises:
            ValueError: the mask has the wrong length or allows no arm.
        """
        samples = self._rng.beta(self.alpha, self.beta)
        if mask is None:
            return int(np.argmax(samples))
        allowed = np.asarray(list(mask), dtype=bool)
        if allowed.shape != (self.n_arms,):
            raise ValueError(
                f"mask has {allowed.size} entries: expected one bool per arm ({self.n_arms})"
            )
        if not allowed.any():
            raise ValueError("mask allows no arm: expected at least one True entry")
        return int(np.argmax(np.where(allowed, samples, -np.inf)))

    def update(self, arm: int, reward: float) -> None:
        """Record a reward in [0, 1] for ``arm``: ``alpha[arm] += reward``, ``beta[arm] += 1 - reward``.

        Raises:
            ValueError: ``arm`` out of range, or ``reward`` not a finite number in [0, 1].
        """
        arm = self._check_arm(arm)
        r = float(reward)
        if not math.isfinite(r) or not 0.0 <= r <= 1.0:
            raise ValueError(f"reward={reward!r}: expected a number in [0, 1]")
        self.alpha[arm] += r
        self.beta[arm] += 1.0 - r
        self.pulls[arm] += 1

    def posterior_mean(self) -> np.ndarray:
        """``float64[n_arms]`` Beta posterior means ``alpha / (alpha + beta)``."""
        return self.alpha / (self.alpha + self.beta)

    def state_dict(self) -> dict:
        """Everything needed to resume exactly: posteriors, pulls and the sampler's RNG state (JSON-ready)."""
        return {
            "alpha": self.alpha.tolist(),
            "beta": self.beta.tolist(),
            "pulls": self.pulls.tolist(),
            "rng_state": self._rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()``; later ``select`` calls continue the saved random stream.

        Raises:
            ValueError: the saved arrays do not have one entry per arm.
        """
        for key in ("alpha", "beta", "pulls"):
            if len(state[key]) != self.n_arms:
                raise ValueError(
                    f"state_dict[{key!r}] has {len(state[key])} entries: expected {self.n_arms}"
                )
        self.alpha[:] = state["alpha"]
        self.beta[:] = state["beta"]
        self.pulls[:] = state["pulls"]
        self._rng.bit_generator.state = state["rng_state"]


class FlopLedger:
    """A FLOP budget split evenly across arms; an arm may only spend its own share.

    Args:
        budget_flops: total budget in FLOPs (> 0, finite); each arm gets ``budget_flops / n_arms``.
        n_arms: number of arms (>= 1).

    Attributes:
        budget_flops: the total budget (FLOPs).
        share_flops: the per-arm share (FLOPs).
        spent: ``float64[n_arms]`` FLOPs paid so far per arm.

    Raises:
        ValueError: non-positive / non-finite budget, or ``n_arms`` < 1.

    Source: docs/REFEREE.md, "The length curriculum": "a shared FLOP ledger seeded
    once from compute_budget_flops (split evenly across buckets)".
    """

    def __init__(self, budget_flops: float, n_arms: int) -> None:
        b = float(budget_flops)
        if not math.isfinite(b) or b <= 0:
            raise ValueError(f"budget_flops={budget_flops!r}: expected a finite number > 0")
        if int(n_arms) != n_arms or n_arms < 1:
            raise ValueError(f"n_arms={n_arms!r}: expected an integer >= 1")
        self.budget_flops = b
        self.n_arms = int(n_arms)
        self.share_flops = b / self.n_arms
        self.spent = np.zeros(self.n_arms, dtype=np.float64)

    def _check(self, arm: int, flops: float) -> tuple[int, float]:
        if isinstance(arm, bool) or int(arm) != arm or not 0 <= arm < self.n_arms:
            raise ValueError(f"arm={arm!r}: expected an integer in [0, {self.n_arms})")
        f = float(flops)
        if not math.isfinite(f) or f < 0:
            raise ValueError(f"flops={flops!r}: expected a finite number >= 0")
        return int(arm), f

    def remaining(self, arm: int) -> float:
        """FLOPs still available to ``arm`` (>= 0)."""
        arm, _ = self._check(arm, 0.0)
        return max(0.0, self.share_flops - float(self.spent[arm]))

    def can_pay(self, arm: int, flops: float) -> bool:
        """True when ``arm``'s remaining share covers ``flops``."""
        arm, f = self._check(arm, flops)
        return f <= self.remaining(arm)

    def pay(self, arm: int, flops: float) -> None:
        """Charge ``flops`` to ``arm``.

        Raises:
            ValueError: the arm's remaining share does not cover ``flops`` (nothing is charged).
        """
        arm, f = self._check(arm, flops)
        if f > self.remaining(arm):
            raise ValueError(
                f"arm {arm} cannot pay {f:.4g} FLOPs: expected at most its remaining {self.remaining(arm):.4g} FLOPs"
            )
        self.spent[arm] += f

    def mask(self, flops_per_arm: Sequence[float]) -> list[bool]:
        """``[can_pay(arm, flops_per_arm[arm]) for arm]``: the arms whose next pull is affordable."""
        if len(flops_per_arm) != self.n_arms:
            raise ValueError(
                f"flops_per_arm has {len(flops_per_arm)} entries: expected {self.n_arms}"
            )
        return [self.can_pay(a, f) for a, f in enumerate(flops_per_arm)]

    @property
    def total_spent(self) -> float:
        """FLOPs paid by all arms together."""
        return float(self.spent.sum())

    def state_dict(self) -> dict:
        """``{"budget_flops", "n_arms", "spent"}`` (JSON-ready)."""
        return {
            "budget_flops": self.budget_flops,
            "n_arms": self.n_arms,
            "spent": self.spent.tolist(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()``.

        Raises:
            ValueError: the saved ledger had another budget or number of arms.
        """
        if float(state["budget_flops"]) != self.budget_flops or int(state["n_arms"]) != self.n_arms:
            raise ValueError(
                f"ledger state for budget {state['budget_flops']!r} / {state['n_arms']!r} arms: expected "
                f"budget {self.budget_flops!r} / {self.n_arms} arms"
            )
        self.spent[:] = state["spent"]
