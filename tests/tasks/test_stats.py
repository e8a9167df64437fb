"""Statistics: the card's table is reproduced by generated data; the report's histograms."""

from __future__ import annotations

import numpy as np
import pytest

from swar_bench.tasks.passkey_swar import (
    PasskeySwarParams,
    generate_flat,
    make_example,
    split_seeds,
)
from swar_bench.tasks.stats import (
    CARD_STATS,
    SplitStats,
    compute_stats,
    format_report,
    format_table,
    stats_to_dict,
)


def _split_stats(n: int, split: str, num: int) -> SplitStats:
    return compute_stats(generate_flat(split_seeds(split, n, num), n).examples(), f"n{n}", split)


@pytest.mark.parametrize("n", [32, 64, 128, 256, 512, 1024])
def test_generated_validation_reproduces_the_cards_table(n):
    # >= 1000 examples; more for short sequences (cheap) so sampling noise stays well inside.
    num = max(1000, 2**17 // n)
    s = _split_stats(n, "validation", num)
    _, mean_length, queries, valid, expired, stale = CARD_STATS[(f"n{n}", "validation")]
    assert s.examples == num
    assert s.mean_length == pytest.approx(mean_length, rel=0.01)
    assert s.queries_per_example == pytest.approx(queries, rel=0.02)
    assert s.valid_share == pytest.approx(valid, abs=0.02)
    assert s.expired_share == pytest.approx(expired, abs=0.02)
    assert s.stale_share_of_expired == pytest.approx(stale, abs=0.02)
    # the card's length identity: 12 + 3 * (N + queries)
    assert s.mean_length == pytest.approx(12 + 3 * (n + s.queries_per_example))


def test_counts_by_hand():
    ex = make_example(5, 40)
    s = compute_stats([ex], "n40", "validation")
    n_queries = len(ex["answer_type"]) - 4
    assert (s.examples, s.tokens, s.queries) == (1, len(ex["input_ids"]), n_queries)
    assert s.valid == ex["answer_type"].count("ar_valid")
    assert s.stale + s.never == ex["answer_type"].count("ar_expired")
    assert s.writes == 40 and int(s.valid_ages.sum()) == s.valid
    assert int(s.query_gaps.sum()) == max(n_queries - 1, 0)
    assert int(s.rewrite_intervals.sum()) == 40 - s.distinct_keys


def test_histograms_follow_the_rules():
    params = PasskeySwarParams()
    s = _split_stats(512, "test", 200)
    assert s.valid_ages[0] == 0 and s.valid_ages[1:].sum() == s.valid  # ages 1..w only
    assert s.stale_ages.sum() == s.stale and s.age_edges[0] == 2 * params.w + 1
    # query gaps are geometric with p = 1 - q / (1 + q) = 0.8: P(gap 0) = 0.2
    share0 = s.query_gaps[0] / s.query_gaps.sum()
    assert share0 == pytest.approx(0.2, abs=0.02)


def test_table_and_report_text():
    stats = [_split_stats(64, "validation", 100)]
    table = format_table(stats, compare_card=True)
    lines = table.strip().splitlines()
    assert lines[0].startswith(
        "| config | split | examples | mean length | queries/ex | valid | expired |"
    )
    assert (
        lines[2].startswith("| n64 | validation | 100 | ")
        and "(252)" in lines[2]
        and "(0.077)" in lines[2]
    )
    report = format_report(stats)
    for heading in (
        "## Summary",
        "### Query gap",
        "### Age of valid queries",
        "### Age of stale queries",
        "### Key reuse",
    ):
        assert heading in report
    d = stats_to_dict(stats[0])
    assert (
        d["examples"] == 100
        and isinstance(d["valid_ages"], list)
        and d["queries/ex"] == stats[0].queries_per_example
    )
    assert np.isclose(d["valid"], stats[0].valid_share)
