"""The mechanism table of the docs: paper, parameters, state bytes per sequence, fixed size or not."""

from __future__ import annotations

import swar_bench.mechanisms as mech
from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at

PAPERS = {
    "ScalarDecayLinearAttention": "Katharopoulos et al. 2020 (linear attention) + one constant decay",
    "MultiScaleRetention": "Sun et al. 2023 (RetNet)",
    "DeltaNet": "Schlag et al. 2021; Yang et al. 2024 (chunked delta rule)",
    "GatedDeltaNet": "Yang, Kautz & Hatamizadeh 2024 (Gated Delta Networks)",
    "Mamba2": "Dao & Gu 2024 (SSD)",
    "RWKV7": "Peng et al. 2025 (RWKV-7 Goose)",
    "Based": "Arora et al. 2024 (Taylor linear attention + sliding window)",
    "GatedLinearAttention": "Yang et al. 2024 (GLA)",
    "HGRN2": "Qin et al. 2024 (HGRN2)",
    "KimiDeltaAttention": "Kimi Team 2025 (Kimi Linear, KDA)",
    "GatedDeltaProduct": "Siems et al. 2025 (DeltaProduct)",
    "mLSTM": "Beck et al. 2024 (xLSTM)",
    "Mamba": "Gu & Dao 2023 (S6 selective scan)",
    "LogLinearAttention": "Guo et al. 2025 (log-linear Mamba-2; state grows as log T)",
    "GRU": "Cho et al. 2014",
    "LSTM": "Hochreiter & Schmidhuber 1997",
    "SlidingWindowAttention": "Beltagy et al. 2020 (Longformer local attention)",
    "CausalAttention": "Vaswani et al. 2017 (KV cache grows with T)",
    "Oracle": "docs/TASK.md, answer rule (no parameters)",
}


def summary_rows(seq_len: int = 4096) -> list[dict]:
    """One row per mechanism at its defaults (vocab_size=40, d_model=64, n_layers=2): ``name``,
    ``paper``, ``n_params``, ``state_bytes`` per sequence (float32 state; after ``seq_len`` tokens
    for a growing state), ``fixed_size`` (bool), ``flops_per_token`` (forward)."""
    rows = []
    for name in mech.MECHANISMS:
        model = getattr(mech, name)()
        rows.append(
            {
                "name": name,
                "paper": PAPERS[name],
                "n_params": model.n_params,
                "state_bytes": state_bytes_at(model, 1, seq_len),
                "fixed_size": is_fixed_size(model),
                "flops_per_token": model.flops_per_token,
            }
        )
    return rows


def markdown_table(seq_len: int = 4096) -> str:
    """``summary_rows`` as the markdown table of ``docs/MECHANISMS.md``."""
    lines = [
        "| mechanism | paper | params | state bytes / sequence | fixed-size state | forward FLOPs / token |",
        "|---|---|---:|---:|---|---:|",
    ]
    for r in summary_rows(seq_len):
        size = f"{r['state_bytes']:,}" + ("" if r["fixed_size"] else f" at T={seq_len:,} (grows)")
        lines.append(
            f"| `{r['name']}` | {r['paper']} | {r['n_params']:,} | {size} | "
            f"{'yes' if r['fixed_size'] else 'no'} | {r['flops_per_token']:,.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
