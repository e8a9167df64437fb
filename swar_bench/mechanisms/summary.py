"""The mechanism table of the docs (docs/MECHANISMS.md, "The zoo"), generated from ``zoo.ZOO`` and the
classes themselves: paper, parameters, state bytes per sequence, fixed size or not, FLOPs per token."""

from __future__ import annotations

import swar_bench.mechanisms as mech
from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at
from swar_bench.mechanisms.zoo import ZOO

PAPERS = {entry.name: entry.paper for entry in ZOO}
"""The paper column, by mechanism (``zoo.ZOO``)."""


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
