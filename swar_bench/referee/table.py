"""``comparison_table``: ``evaluate`` results side by side as plain text, refusing unmatched comparisons.

Source: docs/REFEREE.md, "FLOPs and state bytes": two mechanisms compared on the
same ranges, seed and budgets are compared at matched FLOPs and state bytes; here the table checks
that instead of trusting the caller.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from swar_bench.referee.evaluate import PROTOCOL_KEYS, SCHEMA, TRAIN_PROTOCOLS
from swar_bench.referee.suites import SUITE_NAMES
from swar_bench.utils.intervals import FEW_ITEMS, FEW_MARK, MISSING

FLOPS_TOLERANCE = 0.05
"""Default largest relative difference ``|a - b| / max(a, b)`` of two results' training FLOPs in one
(suite, range) cell that ``comparison_table`` accepts as matched."""

PROTOCOL_LABELS = {
    "fixed_steps": "fixed steps (the referee's protocol: at most n_train_steps / perplexity_steps "
    "steps per cell; training FLOPs differ with model size)",
    "matched_flops": "matched FLOPs (each cell trains until its share of compute_budget_flops is "
    "spent)",
}


class _Malformed(Exception):
    """One problem found in a result (its field path and what is wrong), for ``check_result``."""


_NUMBER = (int, float)
_SUITE_CELL_KEYS = {
    "needle": ("accuracy", "proxy_accuracy", "loss", "correct"),
    "copy": ("accuracy", "proxy_accuracy", "loss", "correct"),
    "multi_hop": ("accuracy", "proxy_accuracy", "loss", "correct"),
    "perplexity": ("perplexity", "accuracy", "correct"),
}
"""The cell fields ``comparison_table`` shows, per suite (each a number, or null)."""


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    text = repr(value)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({type(value).__name__})"


RANGES = {"accuracy": (0.0, 1.0, "an accuracy in [0, 1]"), "proxy_accuracy": (0.0, 1.0, "an accuracy in [0, 1]"),
          "loss": (0.0, math.inf, "a finite loss >= 0"), "perplexity": (1.0, math.inf, "a finite perplexity >= 1"),
          "correct": (0.0, math.inf, "a number of correct positions >= 0")}
"""The values a result's cell and curve fields can hold (null aside): a result file whose numbers
are out of them (an accuracy of 7.5, a NaN loss) would print as if it were measured."""


def _in_range(obj: Mapping[str, Any], key: str, path: str, value: Any) -> None:
    """``_Malformed`` when the number ``value`` of ``obj[key]`` is NaN or outside ``RANGES[key]``."""
    if value is None or key not in RANGES:
        return
    low, high, what = RANGES[key]
    if not (math.isfinite(value) and low <= value <= high):
        raise _Malformed(f"{path}.{key} is {_kind(value)}, not {what}")


def _get(obj: Mapping[str, Any], key: str, path: str, kinds: tuple, what: str, null=False) -> Any:
    """``obj[key]``, checked to be an instance of ``kinds`` (or None if ``null``); else ``_Malformed``."""
    name = f"{path}.{key}" if path else key
    if key not in obj:
        raise _Malformed(f"{name} is missing")
    value = obj[key]
    if value is None and null:
        return value
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _Malformed(f"{name} is {_kind(value)}, not {what}")
    return value


def _check(result: Any) -> None:
    if not isinstance(result, Mapping):
        raise _Malformed(f"the top level is {_kind(result)}, not a mapping")
    schema = _get(result, "schema", "", (str,), f"{SCHEMA!r}")
    if schema != SCHEMA:
        raise _Malformed(f"schema is {schema!r}, not {SCHEMA!r}")
    protocol = _get(result, "protocol", "", (Mapping,), "a mapping")
    missing = [k for k in PROTOCOL_KEYS if k not in protocol]
    if missing:
        raise _Malformed(f"protocol.{missing[0]} is missing")
    ranges = _get(protocol, "ranges", "protocol", (list, tuple), "a list of distances")
    if not ranges or not all(isinstance(r, _NUMBER) and not isinstance(r, bool) for r in ranges):
        raise _Malformed(f"protocol.ranges is {_kind(ranges)}, not a non-empty list of distances")
    train_protocol = _get(protocol, "train_protocol", "protocol", (str,), "a protocol name")
    if train_protocol not in TRAIN_PROTOCOLS:
        raise _Malformed(
            f"protocol.train_protocol is {train_protocol!r}, not one of {', '.join(TRAIN_PROTOCOLS)}"
        )
    _get(protocol, "seed", "protocol", (int,), "an integer")
    _get(protocol, "vocab", "protocol", (int,), "an integer")
    _get(protocol, "state_budget_bytes", "protocol", _NUMBER, "a number of bytes")
    _get(protocol, "compute_budget_flops", "protocol", _NUMBER, "a number of FLOPs")
    _get(result, "solved_threshold", "", _NUMBER, "a number of nats")
    suites = _get(result, "suites", "", (Mapping,), "a mapping")
    for suite, keys in _SUITE_CELL_KEYS.items():
        cells = _get(suites, suite, "suites", (list,), "a list of cells")
        if len(cells) != len(ranges):
            raise _Malformed(
                f"suites.{suite} has {len(cells)} cells, not one per range ({len(ranges)})"
            )
        for i, cell in enumerate(cells):
            path = f"suites.{suite}[{i}]"
            if not isinstance(cell, Mapping):
                raise _Malformed(f"{path} is {_kind(cell)}, not a mapping")
            for key in keys:
                _in_range(cell, key, path, _get(cell, key, path, _NUMBER, "a number or null", null=True))
            count = _get(cell, "count", path, (int,), "a number of supervised positions")
            if count < 0 or not 0 <= (cell.get("correct") or 0) <= count:
                raise _Malformed(f"{path} has count {count} and correct {cell.get('correct')}, not "
                                 "0 <= correct <= count")
            ci = _get(cell, "accuracy_ci", path, (list,), "[low, high] or null", null=True)
            if ci is not None and (
                len(ci) != 2 or not all(isinstance(v, _NUMBER) and not isinstance(v, bool) for v in ci)
                or not 0 <= ci[0] <= ci[1] <= 1
            ):
                raise _Malformed(f"{path}.accuracy_ci is {_kind(ci)}, not [low, high] in [0, 1] or null")
            cell_flops = _get(cell, "flops", path, (Mapping,), "a mapping")
            _get(cell_flops, "train", f"{path}.flops", _NUMBER, "a number of FLOPs")
    curve = _get(result, "forgetting_curve", "", (list,), "a list of points")
    if len(curve) != len(ranges):
        raise _Malformed(
            f"forgetting_curve has {len(curve)} points, not one per range ({len(ranges)})"
        )
    for i, point in enumerate(curve):
        path = f"forgetting_curve[{i}]"
        if not isinstance(point, Mapping):
            raise _Malformed(f"{path} is {_kind(point)}, not a mapping")
        _get(point, "range", path, _NUMBER, "a distance in tokens")
        for key in ("accuracy", "proxy_accuracy", "loss"):
            _in_range(point, key, path, _get(point, key, path, _NUMBER, "a number or null", null=True))
    mechanism = _get(result, "mechanism", "", (Mapping,), "a mapping")
    _get(mechanism, "class", "mechanism", (str,), "a class name")
    _get(mechanism, "n_params", "mechanism", (int,), "an integer")
    if _get(mechanism, "loss_only", "mechanism", (bool,), "true or false"):
        _get(result, "accuracy_note", "", (str,), "a note")
    state = _get(result, "state", "", (Mapping,), "a mapping")
    _get(state, "state_bytes", "state", _NUMBER, "a number of bytes")
    _get(state, "within_budget", "state", (bool,), "true or false")
    flops = _get(result, "flops", "", (Mapping,), "a mapping")
    _get(flops, "total", "flops", _NUMBER, "a number of FLOPs or null", null=True)
    r = _get(result, "self_knowledge_correlation", "", _NUMBER, "a number or null", null=True)
    if r is None:
        _get(result, "self_knowledge_reason", "", (str,), "a reason")
    curriculum = result.get("curriculum")
    if curriculum is not None:
        if not isinstance(curriculum, Mapping):
            raise _Malformed(f"curriculum is {_kind(curriculum)}, not a mapping or null")
        pulls = _get(curriculum, "pulls", "curriculum", (list,), "a list of counts")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in pulls):
            raise _Malformed(f"curriculum.pulls is {_kind(pulls)}, not a list of counts")


def check_result(result: Any, where: str) -> None:
    """Check that ``result`` has every field ``comparison_table`` and the forgetting-curve plot read.

    A result loaded from a file (``swar-bench referee compare``) may be valid JSON of the right
    top-level shape yet be missing a suite or hold a string where a mapping belongs; this finds
    that at the boundary instead of deep in the rendering. Checked: ``schema`` equals ``SCHEMA``;
    ``protocol`` holds every key of ``PROTOCOL_KEYS`` (``ranges`` a non-empty list of distances
    in tokens); ``suites`` holds one cell per range for each suite of ``SUITE_NAMES`` with the
    fields shown (numbers, or null); ``forgetting_curve`` one point per range; ``mechanism``,
    ``state``, ``flops``, ``self_knowledge_correlation`` and ``curriculum`` (null allowed).

    Args:
        result: the object to check (an ``evaluate`` result, or what a JSON file held).
        where: what to call it in the error (a file path, ``results['name']``).

    Raises:
        ValueError: one line naming ``where``, the first field missing or of the wrong type, and
            what was expected.
    """
    try:
        _check(result)
    except _Malformed as e:
        raise ValueError(
            f"{where}: {e}; expected an evaluate() result (schema {SCHEMA!r})"
        ) from None


def _named(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    if not isinstance(results, Mapping) or not results:
        raise ValueError(
            "results: expected one evaluate() result or a non-empty {name: result} mapping"
        )
    if "schema" in results:
        check_result(results, "result")
        return {str(results["mechanism"]["class"]).rsplit(".", 1)[-1]: results}
    named = {}
    for name, r in results.items():
        check_result(r, f"results[{name!r}]")
        named[str(name)] = r
    return named


FLOPS_TOLERANCE_EXPECTED = "a relative difference >= 0 (e.g. 0.05; inf to compare whatever the FLOPs)"
"""What ``flops_tolerance`` (``compare`` / ``verdict --flops-tolerance``) must be."""


def check_flops_tolerance(flops_tolerance: float | None) -> float | None:
    """``flops_tolerance`` as a float >= 0 (``inf`` or None: FLOPs are not checked); else
    ``ValueError`` (one line)."""
    if flops_tolerance is None:
        return None
    try:
        tol = float(flops_tolerance)
    except (TypeError, ValueError):
        tol = math.nan
    if math.isnan(tol) or tol < 0:
        raise ValueError(f"flops_tolerance={flops_tolerance!r}: expected {FLOPS_TOLERANCE_EXPECTED}")
    return None if math.isinf(tol) else tol


def flops_mismatch(
    a: Mapping[str, Any], b: Mapping[str, Any], flops_tolerance: float
) -> str | None:
    """The first (suite, range) cell whose training FLOPs differ between ``a`` and ``b`` by more
    than ``flops_tolerance`` (relative to the larger), described in words; None when all match."""
    for suite in SUITE_NAMES:
        for ca, cb in zip(a["suites"][suite], b["suites"][suite]):
            fa, fb = float(ca["flops"]["train"]), float(cb["flops"]["train"])
            top = max(abs(fa), abs(fb))
            if top > 0 and abs(fa - fb) / top > flops_tolerance:
                return (
                    f"{suite} at range {ca['range']} spent {fa:.4g} vs {fb:.4g} training FLOPs "
                    f"({abs(fa - fb) / top:.1%} apart, more than the tolerance {flops_tolerance:.1%})"
                )
    return None


def check_comparable(
    named: Mapping[str, Mapping[str, Any]], flops_tolerance: float | None = FLOPS_TOLERANCE
) -> None:
    """Raise ``ValueError`` naming the first setting in ``PROTOCOL_KEYS`` on which two results
    differ, or the first (suite, range) cell whose spent training FLOPs differ by more than
    ``flops_tolerance``.

    The training protocol, ranges, seed, vocab, state budget, FLOP budget and the training /
    evaluation sizes must all match, and (docs/REFEREE.md, "A verdict: does the challenger beat the baseline?": it beats the baseline at matched FLOPs) so
    must the FLOPs each cell really spent, or the numbers side by side would not be measured on the
    same terms. ``flops_tolerance=None`` (or ``inf``) skips the FLOPs check.
    """
    tol = check_flops_tolerance(flops_tolerance)
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
        if tol is not None:
            why = flops_mismatch(base, r, tol)
            if why is not None:
                raise ValueError(
                    f"cannot compare {base_name!r} and {name!r} at matched FLOPs: {why}; expected "
                    "results run with train_protocol='matched_flops' (or a larger flops tolerance, "
                    "inf to compare them anyway)"
                )


FLOPS_FORMAT = ".3e"
"""Every FLOP count of the table (budget, training, total): 4 significant digits, one notation."""


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    return format(v, spec)


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _acc_cell(c: Mapping[str, Any]) -> str:
    """``0.91 [0.82, 0.96] (64)``: exact accuracy, its 95% Wilson interval, the positions counted
    (``*`` below 30); ``none`` for a loss-only mechanism."""
    if c.get("accuracy") is None or c.get("accuracy_ci") is None:
        return MISSING
    low, high = c["accuracy_ci"]
    mark = FEW_MARK if 0 < c["count"] < FEW_ITEMS else ""
    return f"{c['accuracy']:.2f} [{low:.2f}, {high:.2f}] ({c['count']}){mark}"


def comparison_table(
    results: Mapping[str, Any], flops_tolerance: float | None = FLOPS_TOLERANCE
) -> str:
    """Render one ``evaluate`` result, or a ``{name: result}`` mapping, as a plain-text table.

    Per suite, one row per mechanism and one column per range; a probe cell reads
    ``acc [low, high] (n) / proxy / loss`` (exact argmax accuracy with its 95% Wilson interval over
    the ``n`` probe positions, ``*`` when ``n < 30``, ``none`` for loss-only mechanisms; fraction of
    trials with loss < 0.5 * ln(vocab); mean probe loss in nats), a perplexity cell
    ``ppl / acc [low, high] (n)``. The header names the training protocol. A summary gives
    parameters, state bytes against the budget, training and total FLOPs and the self-knowledge
    correlation.

    Args:
        results: one ``evaluate`` result or ``{name: result}``.
        flops_tolerance: largest accepted relative difference of two results' training FLOPs per
            cell (default ``FLOPS_TOLERANCE`` = 5%); None or ``inf`` accepts any.

    Raises:
        ValueError: not an ``evaluate`` result or missing a field it shows (``check_result``,
        naming the result and the field), results run with a different training protocol, ranges,
        seeds, vocab, state budgets, FLOP budgets or sizes, or spending training FLOPs more than
        ``flops_tolerance`` apart (``check_comparable``).
    """
    named = _named(results)
    check_comparable(named, flops_tolerance)
    first = next(iter(named.values()))
    p = first["protocol"]
    ranges = p["ranges"]
    lines = [
        (
            f"referee: ranges {', '.join(str(r) for r in ranges)} tokens | seed {p['seed']} | "
            f"vocab {p['vocab']} | state budget {p['state_budget_bytes']:g} B | "
            f"FLOP budget {p['compute_budget_flops']:{FLOPS_FORMAT}} per ledger"
        ),
        f"training: {PROTOCOL_LABELS[p['train_protocol']]}",
        f"solved = probe loss < 0.5 * ln({p['vocab']}) = {first['solved_threshold']:.3f} nats",
        f"acc [95% Wilson interval] (probe positions); {FEW_MARK} = fewer than {FEW_ITEMS} positions",
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
                    row.append(f"{_fmt(c['perplexity'], '.2f')} / {_acc_cell(c)}")
                else:
                    row.append(
                        f"{_acc_cell(c)} / {_fmt(c['proxy_accuracy'], '.2f')} / {_fmt(c['loss'], '.3f')}"
                    )
            rows.append(row)
    lines += _grid(rows) + [""]
    rows = [
        [
            "mechanism",
            "n_params",
            "state_bytes",
            "within_budget",
            "FLOPs train",
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
                f"{int(r['mechanism']['n_params']):,}",
                f"{st['state_bytes']:,.0f}",
                "yes" if st["within_budget"] else "NO",
                _fmt(r["flops"].get("train"), FLOPS_FORMAT),
                _fmt(r["flops"]["total"], FLOPS_FORMAT),
                _fmt(r["self_knowledge_correlation"], "+.3f"),
                "/".join(str(n) for n in cur["pulls"]) if cur else MISSING,
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
