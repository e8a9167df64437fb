"""Statistics of passkey_swar splits: the dataset card's table and a stats.md-style report.

Everything is measured from the tokens through the oracle's :func:`annotate` (not from the
generator's internals), so the same code measures generated, local and downloaded data.
Sections of the dataset card (README.md of irodkin/passkey_swar): "Statistics (measured on the
released files)" and "Full tables".
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from swar_bench.tasks.oracle import (
    AR_EXPIRED_NEVER,
    AR_EXPIRED_STALE,
    AR_VALID,
    HEAD_LEN,
    TAIL_LEN,
    annotate,
)
from swar_bench.tasks.passkey_swar import PasskeySwarParams, Q, W

# The dataset card's table (README.md of irodkin/passkey_swar): (config, split) -> (examples, mean length, queries/ex, valid, expired,
# stale share of expired). Reference values to compare against, not results of this code.
CARD_STATS: dict[tuple[str, str], tuple[int, float, float, float, float, float]] = {
    ("n32", "train"): (100_000, 132, 8.0, 0.500, 0.500, 0.000),
    ("n64", "train"): (100_000, 252, 16.0, 0.499, 0.501, 0.077),
    ("n128", "train"): (100_000, 492, 32.0, 0.500, 0.500, 0.278),
    ("n256", "train"): (100_000, 972, 64.0, 0.500, 0.500, 0.535),
    ("n32", "validation"): (1_000, 132, 8.0, 0.503, 0.497, 0.000),
    ("n64", "validation"): (1_000, 252, 16.0, 0.495, 0.505, 0.077),
    ("n128", "validation"): (1_000, 492, 32.0, 0.499, 0.501, 0.285),
    ("n256", "validation"): (1_000, 972, 64.1, 0.503, 0.497, 0.536),
    ("n512", "validation"): (1_000, 1933, 128.3, 0.501, 0.499, 0.744),
    ("n1024", "validation"): (1_000, 3850, 255.5, 0.498, 0.502, 0.873),
    ("n2048", "validation"): (1_000, 7688, 510.7, 0.501, 0.499, 0.937),
    ("n4096", "validation"): (1_000, 15371, 1023.6, 0.500, 0.500, 0.969),
    ("n8192", "validation"): (1_000, 30729, 2046.9, 0.500, 0.500, 0.984),
    ("n16384", "validation"): (1_000, 61447, 4094.4, 0.500, 0.500, 0.992),
    ("n32", "test"): (1_000, 132, 8.1, 0.499, 0.501, 0.000),
    ("n64", "test"): (1_000, 251, 15.8, 0.502, 0.498, 0.078),
    ("n128", "test"): (1_000, 491, 31.8, 0.498, 0.502, 0.281),
    ("n256", "test"): (1_000, 971, 63.8, 0.503, 0.497, 0.540),
    ("n512", "test"): (1_000, 1930, 127.3, 0.500, 0.500, 0.747),
    ("n1024", "test"): (1_000, 3853, 256.2, 0.500, 0.500, 0.874),
    ("n2048", "test"): (1_000, 7697, 513.7, 0.499, 0.501, 0.937),
    ("n4096", "test"): (1_000, 15373, 1024.2, 0.500, 0.500, 0.968),
    ("n8192", "test"): (1_000, 30726, 2046.0, 0.500, 0.500, 0.984),
    ("n16384", "test"): (1_000, 61442, 4092.6, 0.500, 0.500, 0.992),
}

TABLE_COLUMNS = (
    "config",
    "split",
    "examples",
    "mean length",
    "queries/ex",
    "valid",
    "expired",
    "stale share of expired",
)

GAP_BINS = 10  # query gaps 0..9 writes, then ">= 10"
REUSE_EDGES = (1, 2, 3, 5, 9, 17, 33, 65, 129)  # rewrite intervals: 1, 2, 3-4, 5-8, ..., >= 129


def _age_edges(w: int) -> list[int]:
    """Bin edges (lower bounds) for stale ages: (2w, 4w], (4w, 8w], ... in writes."""
    edges, lo = [], 2 * w + 1
    while lo <= 2**20:
        edges.append(lo)
        lo = 2 * (lo - 1) + 1
    return edges


@dataclass
class SplitStats:
    """Statistics of one config/split (docs/TASK.md, "Statistics").

    Attributes:
        config, split: e.g. ``"n256"``, ``"validation"``.
        examples: number of examples.
        tokens: total tokens; ``mean_length = tokens / examples``.
        queries, valid, stale, never: query counts by answer kind (``stale`` + ``never`` =
            the task's ``ar_expired``).
        query_gaps: ``int64 [GAP_BINS + 1]``, writes between consecutive queries of an example
            (0 = after the same write), last bin ``>= GAP_BINS``.
        valid_ages: ``int64 [w + 1]``, index = age in writes (index 0 unused).
        stale_ages: ``int64 [len(age_edges)]``, counts of stale ages in ``[edge_i, edge_{i+1})``.
        age_edges: lower edges of the stale-age bins, in writes.
        rewrite_intervals: ``int64 [len(REUSE_EDGES)]``, writes between two writes of the same
            key, binned at :data:`REUSE_EDGES`.
        distinct_keys: sum over examples of the number of distinct keys written.
        overwrites_valid: writes whose key still had a valid write (age <= w) before them.
        writes: total writes.
    """

    config: str
    split: str
    w: int = 16
    examples: int = 0
    tokens: int = 0
    queries: int = 0
    valid: int = 0
    stale: int = 0
    never: int = 0
    query_gaps: np.ndarray = field(default_factory=lambda: np.zeros(GAP_BINS + 1, dtype=np.int64))
    valid_ages: np.ndarray | None = None
    age_edges: list[int] = field(default_factory=list)
    stale_ages: np.ndarray | None = None
    rewrite_intervals: np.ndarray = field(
        default_factory=lambda: np.zeros(len(REUSE_EDGES), dtype=np.int64)
    )
    distinct_keys: int = 0
    overwrites_valid: int = 0
    writes: int = 0

    def __post_init__(self) -> None:
        if self.valid_ages is None:
            self.valid_ages = np.zeros(self.w + 1, dtype=np.int64)
        if not self.age_edges:
            self.age_edges = _age_edges(self.w)
        if self.stale_ages is None:
            self.stale_ages = np.zeros(len(self.age_edges), dtype=np.int64)

    @property
    def mean_length(self) -> float:
        return self.tokens / max(self.examples, 1)

    @property
    def queries_per_example(self) -> float:
        return self.queries / max(self.examples, 1)

    @property
    def valid_share(self) -> float:
        return self.valid / max(self.queries, 1)

    @property
    def expired_share(self) -> float:
        return (self.stale + self.never) / max(self.queries, 1)

    @property
    def stale_share_of_expired(self) -> float:
        return self.stale / max(self.stale + self.never, 1)

    def row(self) -> tuple:
        """The dataset card's table row: (config, split, examples, mean length, queries/ex, valid,
        expired, stale share of expired)."""
        return (
            self.config,
            self.split,
            self.examples,
            self.mean_length,
            self.queries_per_example,
            self.valid_share,
            self.expired_share,
            self.stale_share_of_expired,
        )

    def add(self, input_ids: np.ndarray, params: PasskeySwarParams | None = None) -> None:
        """Add one example (``[T]`` token ids); raises :class:`OracleError` on a malformed one."""
        params = params or PasskeySwarParams()
        ids = np.asarray(input_ids).reshape(-1)
        kind, age = annotate(ids, params)
        self.examples += 1
        self.tokens += ids.size
        answers = kind[HEAD_LEN : ids.size - TAIL_LEN]
        ages = age[HEAD_LEN : ids.size - TAIL_LEN]
        n_valid = int(np.count_nonzero(answers == AR_VALID))
        stale = answers == AR_EXPIRED_STALE
        n_stale = int(np.count_nonzero(stale))
        n_never = int(np.count_nonzero(answers == AR_EXPIRED_NEVER))
        self.valid += n_valid
        self.stale += n_stale
        self.never += n_never
        self.queries += n_valid + n_stale + n_never
        self.valid_ages += np.bincount(ages[answers == AR_VALID], minlength=self.w + 1)[
            : self.w + 1
        ]
        if n_stale:
            bins = np.searchsorted(np.asarray(self.age_edges), ages[stale], side="right") - 1
            self.stale_ages += np.bincount(bins, minlength=len(self.age_edges))

        triples = ids[HEAD_LEN : ids.size - TAIL_LEN].reshape(-1, 3)
        is_w = triples[:, 0] == W
        writes_so_far = np.cumsum(is_w)
        q_writes = writes_so_far[triples[:, 0] == Q]
        if q_writes.size > 1:
            gaps = np.minimum(np.diff(q_writes), GAP_BINS)
            self.query_gaps += np.bincount(gaps, minlength=GAP_BINS + 1)

        keys = triples[is_w, 1].astype(np.int64)
        self.writes += keys.size
        self.distinct_keys += np.unique(keys).size
        order = np.lexsort((np.arange(keys.size), keys))  # by key, then time
        same = keys[order][1:] == keys[order][:-1]
        intervals = np.diff(order)[same]
        self.rewrite_intervals += np.bincount(
            np.searchsorted(np.asarray(REUSE_EDGES), intervals, side="right") - 1,
            minlength=len(REUSE_EDGES),
        )
        self.overwrites_valid += int(np.count_nonzero(intervals <= self.w))


def compute_stats(
    examples: Iterable, config: str, split: str, params: PasskeySwarParams | None = None
) -> SplitStats:
    """Statistics of a split from its examples (dicts with ``input_ids``, or ``[T]`` arrays).

    Raises:
        OracleError: an example is malformed or queries the gray zone.
    """
    params = params or PasskeySwarParams()
    out = SplitStats(config=config, split=split, w=params.w)
    for ex in examples:
        out.add(ex["input_ids"] if isinstance(ex, dict) else ex, params)
    return out


def format_table(stats: Iterable[SplitStats], compare_card: bool = False) -> str:
    """The statistics table (docs/TASK.md, "Statistics") as markdown; with ``compare_card``, the
    released files' value of each (config, split), from the dataset card (README.md of
    irodkin/passkey_swar), follows in parentheses where the dataset card has one."""
    lines = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * 2 + "---:|" * 6]
    for s in stats:
        row = s.row()
        cells = [
            row[0],
            row[1],
            f"{row[2]:,}",
            f"{row[3]:.0f}",
            f"{row[4]:.1f}",
            f"{row[5]:.3f}",
            f"{row[6]:.3f}",
            f"{row[7]:.3f}",
        ]
        released = CARD_STATS.get((s.config, s.split)) if compare_card else None
        if released is not None:
            fmt = [None, "{:.0f}", "{:.1f}", "{:.3f}", "{:.3f}", "{:.3f}"]
            for i in range(1, 6):
                cells[i + 2] += f" ({fmt[i].format(released[i])})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _hist_table(labels: list[str], counts: np.ndarray, unit: str) -> str:
    total = max(int(counts.sum()), 1)
    lines = [f"| {unit} | count | share |", "|---|---:|---:|"]
    for label, c in zip(labels, counts.tolist()):
        lines.append(f"| {label} | {c:,} | {c / total:.4f} |")
    return "\n".join(lines) + "\n"


def format_report(
    stats: list[SplitStats], title: str = "passkey_swar statistics", compare_card: bool = True
) -> str:
    """A stats.md-style markdown report: the dataset card's table, then per config/split the query-gap
    histogram, the age histograms of valid and of stale queries, and key-reuse statistics."""
    parts = [f"# {title}\n", "## Summary\n", format_table(stats, compare_card=compare_card)]
    if compare_card:
        parts.append("\nValues in parentheses: the released files' statistics, from the dataset card (README.md) of "
            "irodkin/passkey_swar.\n")
    for s in stats:
        parts.append(f"\n## {s.config} / {s.split}\n")
        parts.append(
            "\n### Query gap (writes between consecutive queries; 0 = after the same write)\n\n"
        )
        gap_labels = [str(i) for i in range(GAP_BINS)] + [f">= {GAP_BINS}"]
        parts.append(_hist_table(gap_labels, s.query_gaps, "gap"))
        parts.append(f"\n### Age of valid queries (writes; 1 <= age <= w = {s.w})\n\n")
        parts.append(_hist_table([str(a) for a in range(1, s.w + 1)], s.valid_ages[1:], "age"))
        parts.append(f"\n### Age of stale queries (writes; age > 2w = {2 * s.w})\n\n")
        edges = s.age_edges
        age_labels = [f"{lo}-{hi - 1}" for lo, hi in itertools.pairwise(edges)] + [
            f">= {edges[-1]}"
        ]
        last = int(np.max(np.flatnonzero(s.stale_ages), initial=0)) + 1
        parts.append(_hist_table(age_labels[:last], s.stale_ages[:last], "age"))
        parts.append("\n### Key reuse\n\n")
        parts.append(
            f"- distinct keys written per example: {s.distinct_keys / max(s.examples, 1):.2f}\n"
            f"- writes per distinct key: {s.writes / max(s.distinct_keys, 1):.2f}\n"
            f"- share of writes that overwrite a key written within the last w writes: "
            f"{s.overwrites_valid / max(s.writes, 1):.4f}\n\n"
        )
        reuse_labels = [
            (f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}")
            for lo, hi in itertools.pairwise(REUSE_EDGES)
        ] + [f">= {REUSE_EDGES[-1]}"]
        parts.append("Writes between two writes of the same key:\n\n")
        parts.append(_hist_table(reuse_labels, s.rewrite_intervals, "interval"))
    return "".join(parts)


def stats_to_dict(s: SplitStats) -> dict:
    """JSON-ready form of :class:`SplitStats` (arrays as lists, plus the table's columns)."""
    d = dataclasses.asdict(s)
    for k, v in list(d.items()):
        if isinstance(v, np.ndarray):
            d[k] = v.tolist()
    d.update(dict(zip(TABLE_COLUMNS, s.row())))
    return d
