"""`swar-bench data ...` end to end on small data; errors are one line with exit status 2."""

from __future__ import annotations

import json

import datasets
import pyarrow.parquet as pq
import pytest

from swar_bench.tasks.cli import main
from swar_bench.tasks.hub_io import split_path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def test_generate_verify_check_stats_show(tmp_path, capsys):
    out = tmp_path / "data"
    assert (
        main(
            [
                "generate",
                "--out",
                str(out),
                "--configs",
                "n32,n64",
                "--splits",
                "validation,test",
                "--num-examples",
                "12",
                "--no-progress",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        f"wrote 4 parquet files, README.md and vocab.json under {out}",
        "splits are disjoint (hash of input_ids) in n32, n64",
    ]
    assert pq.read_table(split_path(out, "n64", "test")).num_rows == 12
    assert json.loads((out / "vocab.json").read_text())["v15"] == 39

    assert main(["verify", str(out), "--regenerate"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [
        f"{c}/{s}: 12 examples pass the oracle and regenerate from their seeds"
        for c in ("n32", "n64")
        for s in ("validation", "test")
    ]
    assert main(["check", str(out)]) == 0
    assert capsys.readouterr().out.strip() == "splits are disjoint in 2 config(s): n32, n64"

    assert main(["stats", "--source", str(out), "--num-examples", "3"]) == 0  # configs found there
    assert [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines()[2:]] == [
        "| n32",
        "| n64",
    ]
    assert main(["stats", "--source", str(out), "--configs", "n32", "--num-examples", "5"]) == 0
    assert "| n32 | validation | 5 |" in capsys.readouterr().out  # a selection of rows
    assert main(["stats", "--source", str(out), "--configs", "n32,n64", "--splits", "test"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].startswith("| config | split | examples |") and len(table) == 4
    assert table[2].startswith("| n32 | test | 12 | 1") and table[3].startswith(
        "| n64 | test | 12 | "
    )

    report = tmp_path / "stats.md"
    assert (
        main(["stats", "--configs", "n128", "--num-examples", "20", "--report", str(report)]) == 0
    )
    assert capsys.readouterr().out.splitlines()[2].startswith("| n128 | validation | 20 | ")
    assert "### Age of stale queries" in report.read_text()

    assert main(["show", "--config", "n32", "--index", "2", "--source", str(out)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith("n32/validation index 2 seed 2000032000002 n_writes 32")
    assert shown[1].startswith("BOS PK ") and shown[1].endswith(" EOS")


def test_verify_reports_a_corrupted_example(tmp_path, capsys):
    out = tmp_path / "data"
    assert (
        main(
            [
                "generate",
                "--out",
                str(out),
                "--configs",
                "n32",
                "--splits",
                "test",
                "--num-examples",
                "5",
                "--no-progress",
            ]
        )
        == 0
    )
    path = split_path(out, "n32", "test")
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[3]["answer_type"] = rows[3]["answer_type"][:-1]
    pq.write_table(table.from_pylist(rows, schema=table.schema), path)
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        "n32/test: FAILED: example seed=3000032000003 index=3: answer_type length mismatch" in err
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["stats", "--configs", "n33x"],
            "config='n33x': expected 'n' followed by the number of writes",
        ),
        (["stats", "--splits", "dev"], "--splits: 'dev' is not a split"),
        (["stats", "--num-examples", "0"], "--num-examples=0: expected an integer in [1, 10**6)"),
        (
            ["stats", "--params", '{"w": 0}', "--configs", "n32"],
            "PasskeySwarParams.w=0: expected an integer >= 1",
        ),
        (["stats", "--params", '{"window": 3}'], "--params: unknown field(s) ['window']"),
        (
            ["generate", "--out", "x", "--configs", "n512", "--splits", "train"],
            "config n512 has no train split",
        ),
        (["verify", "./no/such/folder"], "source='./no/such/folder': no such folder"),
        (["check", "./no/such/folder"], "source='./no/such/folder': no such folder"),
    ],
)
def test_user_errors_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and message in err
        and err.startswith(f"swar-bench data {argv[0]}: error: ")
    )
