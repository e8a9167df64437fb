"""Counted nouns in what the commands print: "wrote 1 parquet file", never "1 parquet files"."""

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.text import plural


def test_reported_case():
    assert plural(1, "parquet file") == "1 parquet file"
    assert plural(4, "parquet file") == "4 parquet files"
    assert plural(0, "example") == "0 examples"
    assert plural(2, "child", "children") == "2 children"
    assert plural(12345, "example") == "12,345 examples"


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**7), st.text("abcdefghij ", min_size=1, max_size=12).map(str.strip).filter(bool))
def test_singular_exactly_for_one(count, noun):
    text = plural(count, noun)
    assert text == f"{count:,} {noun}" if count == 1 else text == f"{count:,} {noun}s"
