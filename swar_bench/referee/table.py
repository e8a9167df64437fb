"""``comparison_table``: ``evaluate`` results side by side as plain text, refusing unmatched comparisons.

Source: the E7 card, "Matched-FLOPs / matched-state-bytes protocols": two mechanisms compared on the
same ranges, seed and budgets are compared at matched FLOPs and state bytes; here the table checks
that instead of trusting the caller.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from swar_bench.referee.evaluate import PROTOCOL_KEYS, SCHEMA
from swar_bench.referee.suites import SUITE_NAMES


def _named(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    if not isinstance(results, Mapping) or not results:
        raise ValueError(
            "results: expected one evaluate() result or a non-empty {name: result} mapping"
        )
    if "schema" in results:
        return {str(results["mechanism"]["class"]).rsplit(".", 1)[-1]: results}
    named = {}
    for name, r in results.items():
        if not isinstance(r, Mapping) or r.get("schema") != SCHEMA:
            raise ValueError(
                f"results[{name!r}]: expected an evaluate() result with schema {SCHEMA!r}"
            )
        named[str(name)] = r
    return named


def check_comparable(named: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise ``ValueError`` naming the first setting in ``PROTOCOL_KEYS`` on which two results differ.

    Ranges, seed, vocab, state budget, FLOP budget, and the training / evaluation sizes must all
    match, or the numbers side by side would not be measured on the same terms.
    """
    items = list(named.items())
    base_name, base = items[0]
    for name, r in items[1:]:
        for key in PROTOCOL_KEYS:
            a, b = base["protocol"].get(key), r["protocol"].get(key)
            if a != b:
                raise ValueError(
                    f"cannot compare {base_name!r} and {name!r}: {key}={a!r} vs {key}={b!r}; "
                    f"expected results evaluated with the same {key} (rerun evaluate with matching settings)"
                )


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def comparison_table(results: Mapping[str, Any]) -> str:
    """Render one ``evaluate`` result, or a ``{name: result}`` mapping, as a plain-text table.

    Per suite, one row per mechanism and one column per range; a probe cell reads
    ``acc / proxy / loss`` (exact argmax accuracy, "-" for loss-only mechanisms; fraction of trials
    with loss < 0.5 * ln(vocab); mean probe loss in nats), a perplexity cell ``ppl / acc``. A summary
    gives parameters, state bytes against the budget, FLOPs and the self-knowledge correlation.

    Raises:
        ValueError: not an ``evaluate`` result, or results run with different ranges, seeds, vocab,
        state budgets, FLOP budgets or sizes (``check_comparable``).
    """
    named = _named(results)
    check_comparable(named)
    first = next(iter(named.values()))
    p = first["protocol"]
    ranges = p["ranges"]
    lines = [
        (
            f"E7 referee: ranges {', '.join(str(r) for r in ranges)} tokens | seed {p['seed']} | "
            f"vocab {p['vocab']} | state budget {p['state_budget_bytes']:g} B | "
            f"FLOP budget {p['compute_budget_flops']:.3g} per ledger"
        ),
        f"solved = probe loss < 0.5 * ln({p['vocab']}) = {first['solved_threshold']:.3f} nats",
        "",
    ]
    rows = [["suite / mechanism"] + [f"range={r}" for r in ranges]]
    for suite in SUITE_NAMES:
        head = "ppl / acc" if suite == "perplexity" else "acc / proxy / loss"
        rows.append([f"{suite} ({head})"] + [""] * len(ranges))
        for name, r in named.items():
            row = [f"  {name}"]
            for c in r["suites"][suite]:
                if suite == "perplexity":
                    row.append(f"{_fmt(c['perplexity'], '.3g')} / {_fmt(c['accuracy'], '.2f')}")
                else:
                    row.append(
                        f"{_fmt(c['accuracy'], '.2f')} / {_fmt(c['proxy_accuracy'], '.2f')} / {_fmt(c['loss'], '.3f')}"
                    )
            rows.append(row)
    lines += _grid(rows) + [""]
    rows = [
        [
            "mechanism",
            "n_params",
            "state_bytes",
            "within_budget",
            "FLOPs total",
            "self_knowledge_r",
            "curriculum pulls",
        ]
    ]
    for name, r in named.items():
        st = r["state"]
        cur = r.get("curriculum")
        rows.append(
            [
                name,
                str(r["mechanism"]["n_params"]),
                f"{st['state_bytes']:g}",
                "yes" if st["within_budget"] else "NO",
                _fmt(r["flops"]["total"], ".3g"),
                _fmt(r["self_knowledge_correlation"], "+.3f"),
                "/".join(str(n) for n in cur["pulls"]) if cur else "-",
            ]
        )
    lines += _grid(rows)
    notes = [
        f"{name}: self_knowledge_r {r['self_knowledge_reason']}"
        for name, r in named.items()
        if r["self_knowledge_correlation"] is None
    ]
    notes += [
        f"{name}: {r['accuracy_note']}" for name, r in named.items() if r["mechanism"]["loss_only"]
    ]
    if notes:
        lines += [""] + notes
    return "\n".join(lines)
