"""The zoo's table: one entry per mechanism the benchmark compares, the one place a new one is listed.

``MECHANISMS`` (``swar_bench.mechanisms``), the table of docs/MECHANISMS.md, "The zoo"
(``swar_bench.mechanisms.summary``), the default config each entry names
(``configs/mechanisms/<config>``) and the tests' expected sets (every mechanism tested, every
config present, the small sizes the tests build, which mechanisms stay within 15% of
GatedDeltaNet's parameters) are all read from ``ZOO``. Names only, no imports: reading the table
builds no model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_SMALL: dict[str, Any] = {"vocab_size": 40, "d_model": 16, "n_layers": 2}


@dataclass(frozen=True)
class ZooEntry:
    """One mechanism of the zoo.

    Attributes:
        name: the class name, exported by ``swar_bench.mechanisms`` (``--model.mechanism=NAME``).
        module: the module that defines the class (``swar_bench.mechanisms.<file>``).
        config: the file under ``configs/mechanisms/`` holding the class's defaults.
        paper: the paper column of docs/MECHANISMS.md, "The zoo".
        small: init args of a small instance (``d_model`` 16) the tests build quickly.
        comparable_size: at the defaults (``d_model`` 64, 2 layers) its parameters are within 15% of
            GatedDeltaNet's, so a comparison at the defaults is not a comparison of sizes.
    """

    name: str
    module: str
    config: str
    paper: str
    small: dict[str, Any] = field(default_factory=lambda: dict(_SMALL))
    comparable_size: bool = False


def _small(**extra: Any) -> dict[str, Any]:
    return {**_SMALL, **extra}


ZOO: tuple[ZooEntry, ...] = (
    ZooEntry(
        "ScalarDecayLinearAttention", "swar_bench.mechanisms.linear_attention", "scalar_decay_linear_attention.yaml",
        "Katharopoulos et al. 2020 (linear attention) + one constant decay",
        small=_small(decay=0.9, chunk_size=16),
    ),
    ZooEntry(
        "MultiScaleRetention", "swar_bench.mechanisms.linear_attention", "multi_scale_retention.yaml",
        "Sun et al. 2023 (RetNet)",
        small=_small(n_heads=2, decays=[0.9, 1.0], chunk_size=16),
    ),
    ZooEntry(
        "DeltaNet", "swar_bench.mechanisms.delta_net", "delta_net.yaml",
        "Schlag et al. 2021; Yang et al. 2024 (chunked delta rule)",
        small=_small(n_heads=2, chunk_size=16),
    ),
    ZooEntry(
        "GatedDeltaNet", "swar_bench.mechanisms.delta_net", "gated_delta_net.yaml",
        "Yang, Kautz & Hatamizadeh 2024 (Gated Delta Networks)",
        small=_small(n_heads=2, chunk_size=16),
    ),
    ZooEntry(
        "Mamba2", "swar_bench.mechanisms.mamba2", "mamba2.yaml",
        "Dao & Gu 2024 (SSD)",
        small=_small(d_state=8, head_dim=8, chunk_size=16),
    ),
    ZooEntry(
        "RWKV7", "swar_bench.mechanisms.rwkv7", "rwkv7.yaml",
        "Peng et al. 2025 (RWKV-7 Goose)",
        small=_small(n_heads=2, decay_rank=4, a_rank=4, gate_rank=4, chunk_size=8),
        comparable_size=True,
    ),
    ZooEntry(
        "Based", "swar_bench.mechanisms.based", "based.yaml",
        "Arora et al. 2024 (Taylor linear attention + sliding window)",
        small=_small(n_heads=2, feature_dim=4, window=8, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "mLSTM", "swar_bench.mechanisms.mlstm", "mlstm.yaml",
        "Beck et al. 2024 (xLSTM)",
        small=_small(n_heads=2, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "LogLinearAttention", "swar_bench.mechanisms.log_linear_attention", "log_linear_attention.yaml",
        "Guo et al. 2025 (log-linear Mamba-2; state grows as log T)",
        small=_small(n_heads=2, chunk_size=8),
        comparable_size=True,
    ),
    ZooEntry(
        "GatedLinearAttention", "swar_bench.mechanisms.gla", "gated_linear_attention.yaml",
        "Yang et al. 2024 (GLA)",
        small=_small(n_heads=2, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "HGRN2", "swar_bench.mechanisms.gla", "hgrn2.yaml",
        "Qin et al. 2024 (HGRN2)",
        small=_small(n_heads=2, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "KimiDeltaAttention", "swar_bench.mechanisms.delta_net", "kimi_delta_attention.yaml",
        "Kimi Team 2025 (Kimi Linear, KDA)",
        small=_small(n_heads=2, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "GatedDeltaProduct", "swar_bench.mechanisms.delta_net", "gated_delta_product.yaml",
        "Siems et al. 2025 (DeltaProduct)",
        small=_small(n_heads=2, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry(
        "Mamba", "swar_bench.mechanisms.mamba", "mamba.yaml",
        "Gu & Dao 2023 (S6 selective scan)",
        small=_small(d_state=4, chunk_size=16),
        comparable_size=True,
    ),
    ZooEntry("GRU", "swar_bench.mechanisms.recurrent", "gru.yaml", "Cho et al. 2014"),
    ZooEntry("LSTM", "swar_bench.mechanisms.recurrent", "lstm.yaml", "Hochreiter & Schmidhuber 1997"),
    ZooEntry(
        "SlidingWindowAttention", "swar_bench.mechanisms.attention", "sliding_window_attention.yaml",
        "Beltagy et al. 2020 (Longformer local attention)",
        small=_small(n_heads=2, window=8),
    ),
    ZooEntry(
        "CausalAttention", "swar_bench.mechanisms.attention", "causal_attention.yaml",
        "Vaswani et al. 2017 (KV cache grows with T)",
        small=_small(n_heads=2),
    ),
    ZooEntry(
        "Oracle", "swar_bench.mechanisms.oracle", "oracle.yaml",
        "docs/TASK.md, answer rule (no parameters)",
        small={"vocab_size": 40},
    ),
)
"""Every mechanism of the zoo, in the order the docs list them."""

ZOO_BY_NAME: dict[str, ZooEntry] = {entry.name: entry for entry in ZOO}
"""``ZOO`` by class name."""
