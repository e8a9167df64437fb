"""The long-context referee: probe suites, train-then-probe, calibration, matched FLOPs and state bytes.

``evaluate(mechanism, ranges=..., state_budget_bytes=..., seed=...)`` returns a JSON-ready dict;
``comparison_table({name: result})`` puts results side by side (refusing unmatched ones, training
FLOPs more than 5% apart among them); ``verdict(baseline, challenger)`` judges a challenger per suite
and range with a paired test;
``swar-bench referee --config configs/referee/<name>.yaml`` runs it from a config.
See ``docs/REFEREE.md``.
"""

import os
import sys

# OpenMP threads that spin while waiting for work slow tiny models down many times over once other
# processes compete for the cores; sleeping waiters do not. The policy is read when torch loads its
# OpenMP runtime, so it only takes effect if torch is not imported yet (as under `swar-bench referee`).
if "torch" not in sys.modules:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from swar_bench.referee.bandit import FlopLedger, ThompsonBernoulli
from swar_bench.referee.evaluate import (
    PROTOCOL_KEYS,
    SCHEMA,
    TRAIN_PROTOCOLS,
    evaluate,
    length_curriculum,
    self_knowledge_correlation,
    solved_threshold,
)
from swar_bench.referee.suites import (
    DEFAULT_VOCAB,
    copy_suite,
    markov_suite,
    multi_hop_suite,
    needle_suite,
)
from swar_bench.referee.table import FLOPS_TOLERANCE, check_result, comparison_table
from swar_bench.referee.train import train_tbptt
from swar_bench.referee.verdict import verdict, verdict_table

__all__ = [
    "DEFAULT_VOCAB",
    "FLOPS_TOLERANCE",
    "PROTOCOL_KEYS",
    "SCHEMA",
    "TRAIN_PROTOCOLS",
    "FlopLedger",
    "ThompsonBernoulli",
    "check_result",
    "comparison_table",
    "copy_suite",
    "evaluate",
    "length_curriculum",
    "markov_suite",
    "multi_hop_suite",
    "needle_suite",
    "self_knowledge_correlation",
    "solved_threshold",
    "train_tbptt",
    "verdict",
    "verdict_table",
]
