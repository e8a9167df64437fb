"""The table in docs/MECHANISMS.md is what the code reports."""

from pathlib import Path

from swar_bench.mechanisms.summary import markdown_table, summary_rows
from swar_bench.mechanisms.zoo import ZOO

DOC = Path(__file__).resolve().parents[2] / "docs" / "MECHANISMS.md"


def doc_table() -> str:
    """The first table under docs/MECHANISMS.md's "## The zoo" heading, as its lines."""
    section = DOC.read_text().split("\n## The zoo\n", 1)[1]
    lines = section.split("\n| mechanism |", 1)[1].splitlines()
    table = ["| mechanism |" + lines[0]]
    for line in lines[1:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table)


def test_docs_table_is_the_generated_one():
    # the table, whole: a row added, dropped or edited by hand in the doc fails here
    assert doc_table() == markdown_table()
    assert [line.split("`")[1] for line in doc_table().splitlines()[2:]] == [entry.name for entry in ZOO]


def test_every_zoo_entry_is_described_in_the_docs():
    text = DOC.read_text().split("What each one is:", 1)[1].split("\n### ", 1)[0]
    described = {name for line in text.splitlines() if line.startswith("- `")
                 for name in line[2:].split(":", 1)[0].replace("`", "").split(", ")}
    assert described == {entry.name for entry in ZOO}


def test_rows_state_sizes():
    rows = {r["name"]: r for r in summary_rows(seq_len=100)}
    assert rows["CausalAttention"]["state_bytes"] == 2 * 2 * 100 * 64 * 4
    assert rows["CausalAttention"]["fixed_size"] is False
    assert rows["GRU"]["state_bytes"] == 2 * 64 * 4
    assert rows["GatedDeltaNet"]["state_bytes"] == 2 * (2 * 32 * 32 + 3 * 64 * 3) * 4
    assert rows["Oracle"]["n_params"] == 0
    growing = {"CausalAttention", "LogLinearAttention"}
    assert all(r["fixed_size"] for n, r in rows.items() if n not in growing)
    assert rows["LogLinearAttention"]["fixed_size"] is False
    assert rows["LogLinearAttention"]["state_bytes"] == 4624 + 16384 * (100).bit_length()


SIZED_LIKE_GATED_DELTA_NET = tuple(entry.name for entry in ZOO if entry.comparable_size)
"""The zoo entries marked ``comparable_size`` (swar_bench/mechanisms/zoo.py)."""


def test_default_sizes_are_comparable_to_gated_delta_net():
    """At d_model 64, 2 layers, each of these baselines is within 15% of GatedDeltaNet's
    parameters, so a comparison at the defaults is not a comparison of sizes."""
    rows = {r["name"]: r for r in summary_rows()}
    reference = rows["GatedDeltaNet"]["n_params"]
    for name in SIZED_LIKE_GATED_DELTA_NET:
        assert abs(rows[name]["n_params"] / reference - 1) <= 0.15, name
