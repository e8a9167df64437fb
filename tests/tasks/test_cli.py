"""`swar-bench data ...` end to end on small data; errors are one line with exit status 2."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks.cli import main
from swar_bench.tasks.hub_io import record_checksums, split_path
from swar_bench.tasks.store import write as store_write


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
    record_checksums(out)  # the record matches: the oracle, not the checksum, must find it
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        "n32/test: FAILED: example seed=3000032000003 index=3: answer_type length mismatch" in err
    )
    assert err.splitlines()[-1] == "1 of 1 split(s) FAILED: n32/test"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["stats", "--configs", "n33x"],
            "--configs: 'n33x' is not a passkey_swar config (N in 32..16384, powers of 2;",
        ),
        (["stats", "--splits", "dev"], "--splits: 'dev' is not a split"),
        (["stats", "--num-examples", "0"], "--num-examples=0: expected an integer in [1, 10**6)"),
        (
            ["stats", "--params", '{"w": 0}', "--configs", "n32"],
            "--params: w=0: expected an integer >= 1",
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
    try:
        code = main(argv)
    except SystemExit as stop:  # refused by the parser (--num-examples=0), as argparse ends
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and message in err
        and err.startswith(f"swar-bench data {argv[0]}: error: ")
    )


def _generate(out, *extra):
    """``data generate`` into ``out``, 20 examples per split unless ``extra`` says how many."""
    count = [] if "--num-examples" in extra else ["--num-examples", "20"]
    return main(["generate", "--out", str(out), "--no-progress", *count, *extra])


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--configs", "n7"],
            (
                "--configs: 'n7' is not a passkey_swar config (N in 32..16384, powers of 2; docs/TASK.md, "
                '"Configs and '
                'splits"); '
                "expected some of n32, n64, n128, n256, n512, n1024, n2048, n4096, n8192, n16384"
            ),
        ),
        (["--configs", "n32,n33"], "--configs: 'n33' is not a passkey_swar config"),
        (
            ["--configs", "n4096", "--splits", "train"],
            ('--splits=train: config n4096 has no train split; train splits exist only for n32, n64, n128, n256 '
            '(docs/TASK.md, "Configs and splits")'),
        ),
        (["--configs", "n32,n32"], "--configs='n32,n32': n32 given more than once"),
        (["--configs", "n32", "--splits", "test,test"], "--splits='test,test': test given more"),
        (["--configs", ""], "--configs='': expected a comma-separated list, e.g. n32,n64"),
        (["--configs", " , "], "--configs=' , ': expected a comma-separated list"),
        # reported: an empty item between commas was dropped without a word
        (["--configs", "n32,,n64"], ("--configs='n32,,n64': item 2 is empty; expected names separated by single "
                                     "commas, e.g. n32,n64")),
        (["--configs", "n32", "--splits", "test,,validation"], "--splits='test,,validation': item 2 is empty"),
        (["--configs", "n32,"], "--configs='n32,': item 2 is empty"),
        (["--configs", "n32", "--splits", ""], "--splits='': expected a comma-separated list"),
    ],
)
def test_generate_rejects_requests_off_the_card_before_writing(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert _generate(out, *extra) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.out == "" and not out.exists()


def test_output_paths_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    cases = [
        (
            ["generate", "--out", "afile/out", "--configs", "n32"],
            f"--out=afile/out: {tmp_path / 'afile'} is not a folder",
        ),
        (["generate", "--out", "afile", "--configs", "n32"], "--out=afile: afile is not a folder"),
        (
            ["stats", "--configs", "n32", "--num-examples", "2", "--report", "afile/stats.md"],
            f"--report=afile/stats.md: {tmp_path / 'afile'} is not a folder",
        ),
        (
            ["stats", "--configs", "n32", "--num-examples", "2", "--report", "."],
            "--report=.: . is a folder; expected a file name",
        ),
        (
            ["vocab", "--out", "afile/vocab.json"],
            f"--out=afile/vocab.json: {tmp_path / 'afile'} is not a folder",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == ""  # no table printed, nothing generated
        assert captured.err == f"swar-bench data {argv[0]}: error: {message}\n"
    assert set(os.listdir(tmp_path)) - {"hf_cache"} == {"afile"}  # nothing written


def test_check_and_verify_name_folders_that_are_not_card_configs(tmp_path, capsys):
    out = tmp_path / "data"
    (out / "n7").mkdir(parents=True)
    for command in ("check", "verify"):
        assert main([command, str(out)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0] == (
            f"skipping {out / 'n7'}: not a passkey_swar config (expected one of n32, n64, n128, "
            "n256, n512, n1024, n2048, n4096, n8192, n16384)"
        )
        assert err[1] == (
            f"swar-bench data {command}: error: no passkey_swar config folder under {str(out)!r}: "
            f"expected the Hub layout {out}/n{{N}}/{{split}}-00000-of-00001.parquet with N in 32..16384"
        )
    assert _generate(out, "--configs", "n32", "--splits", "test") == 0
    capsys.readouterr()
    assert main(["check", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "splits are disjoint in 1 config(s): n32\n"
    assert captured.err.startswith(f"skipping {out / 'n7'}: not a passkey_swar config")
    assert main(["verify", str(out)]) == 0
    assert capsys.readouterr().out == "n32/test: 20 examples pass the oracle\n"


def test_corrupted_parquet_is_named_in_one_line(tmp_path, capfd, caplog):
    out = tmp_path / "data"
    assert _generate(out, "--configs", "n32", "--splits", "validation,test") == 0
    path = split_path(out, "n32", "validation")
    path_text = str(path)
    with open(path, "wb") as f:
        f.write(b"garbage\n")
    record_checksums(out)  # the record matches: reading the file, not the checksum, must find it
    capfd.readouterr()
    reason = f"{path_text}: not a readable parquet file (Parquet magic bytes not found"
    assert main(["verify", str(out)]) == 1
    captured = capfd.readouterr()
    # one line for the unreadable split; the other split is still verified; then the summary
    assert captured.err.count("\n") == 2
    assert captured.err.startswith(f"n32/validation: FAILED: {reason}")
    assert captured.err.splitlines()[1] == "1 of 2 split(s) FAILED: n32/validation"
    assert (
        captured.out.splitlines()[-1].startswith("n32/test: ") and "pass the oracle" in captured.out
    )
    # `check` finds a fault of the release, as `verify` does: exit 1 naming the file
    assert main(["check", str(out)]) == 1
    captured = capfd.readouterr()
    assert captured.err.startswith(f"FAILED: {reason}") and captured.err.count("\n") == 1, captured.err
    # `show` and `stats` cannot read what they were asked for: a fault of the data (exit 1)
    for argv in (
        ["show", "--source", str(out), "--config", "n32"],
        ["stats", "--source", str(out)],
    ):
        assert main(argv) == 1
        captured = capfd.readouterr()
        assert captured.err.startswith(f"swar-bench data {argv[0]}: FAILED: {reason}"), argv
        assert captured.err.count("\n") == 1, captured.err  # no "Failed to read schema" line
    assert [r.getMessage() for r in caplog.records if r.name.startswith("datasets")] == []


def test_show_says_how_many_examples_the_split_has(tmp_path, capsys):
    out = tmp_path / "data"
    assert _generate(out, "--configs", "n32", "--splits", "validation") == 0
    capsys.readouterr()
    argv = ["show", "--source", str(out), "--config", "n32", "--index"]
    assert main(argv + ["25"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data show: error: --index=25: out of range; the split has 20 examples (0..19)\n"
    )
    assert main(argv + ["19"]) == 0
    assert capsys.readouterr().out.startswith("n32/validation index 19 seed 2000032000019 ")
    assert main(["show", "--config", "n64", "--split", "test", "--index", "1000"]) == 2
    assert capsys.readouterr().err.endswith(
        "--index=1000: out of range; the split has 1000 examples (0..999)\n"
    )
    assert main(["show", "--config", "n64", "--split", "test", "--index", "999"]) == 0
    assert capsys.readouterr().out.startswith("n64/test index 999 seed 3000064000999 n_writes 64")
    assert main(["show", "--config", "n512", "--split", "train"]) == 2
    assert "config n512 has no train split" in capsys.readouterr().err


def test_stats_of_a_train_split_the_card_does_not_have(capsys):
    assert main(["stats", "--configs", "n32,n512", "--splits", "train"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data stats: error: --splits=train: config n512 has no train split; "
        'train splits exist only for n32, n64, n128, n256 (docs/TASK.md, "Configs and splits")\n'
    )
    assert main(["stats", "--configs", "n32", "--splits", "train", "--num-examples", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith("| n32 | train | 3 | ")


def test_corrupt_data_page_behind_a_valid_footer_names_the_cause(tmp_path, capfd):
    out = tmp_path / "data"
    assert _generate(out, "--configs", "n32", "--splits", "validation") == 0
    path = split_path(out, "n32", "validation")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[200 : len(data) // 2] = b"\xab" * (len(data) // 2 - 200)  # footer and magic bytes intact
    with open(path, "wb") as f:
        f.write(bytes(data))
    record_checksums(out)  # the record matches: decoding the pages, not the checksum, must find it
    capfd.readouterr()
    assert main(["verify", str(out)]) == 1
    first = capfd.readouterr().err.splitlines()[0]
    assert first.startswith(f"n32/validation: FAILED: {path}: a column cannot be read (")
    cause = first.split("a column cannot be read (", 1)[1]
    assert len(cause) > 10, first  # pyarrow's reason, in the same line


def test_generate_refuses_other_params_and_readers_use_the_record(tmp_path, capsys):
    out = tmp_path / "data"
    assert _generate(out, "--configs", "n64", "--splits", "validation", "--params", '{"w": 8}') == 0
    before = sorted(os.listdir(out))
    capsys.readouterr()
    assert _generate(out, "--configs", "n32") == 2  # the card's w=16 into a w=8 folder
    captured = capsys.readouterr()
    assert captured.err == (
        f"swar-bench data generate: error: {out} holds data generated with w=8 (recorded in "
        f"{out / 'params.json'}), not the release's w=16 (no --params given): one folder holds one parameter set; "
        """expected --params '{"w": 8}' for this folder, or another --out\n"""
    )
    assert captured.out == "" and sorted(os.listdir(out)) == before  # nothing written
    # verify, stats, show and check read the folder with its recorded w=8 ...
    assert main(["verify", str(out), "--regenerate"]) == 0
    assert capsys.readouterr().out == (
        "n64/validation: 20 examples pass the oracle and regenerate from their seeds\n"
    )
    assert main(["stats", "--source", str(out), "--no-compare"]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith("| n64 | validation | 20 | ")
    assert main(["show", "--source", str(out), "--config", "n64"]) == 0
    assert capsys.readouterr().out.startswith("n64/validation index 0 seed 2000064000000 ")
    assert main(["check", str(out)]) == 0
    capsys.readouterr()
    assert main(["verify", str(out), "--params", '{"w": 8}']) == 0  # the same as the record
    capsys.readouterr()
    # ... and other --params are a one-line error.
    for argv in (
        ["verify", str(out), "--params", '{"w": 16}'],
        ["stats", "--source", str(out), "--params", '{"w": 16, "n_keys": 12}'],
        ["show", "--source", str(out), "--config", "n64", "--params", "{}"],
        ["check", str(out), "--params", '{"w": 4}'],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(
            f"swar-bench data {argv[0]}: error: --params w="
        )
        assert f"recorded in {out / 'params.json'}: the folder's data was generated" in err


def test_large_windows_generate_verify_and_show(tmp_path, capsys):
    out = tmp_path / "w500"
    w500 = ["--params", '{"w": 500}']
    assert _generate(out, "--configs", "n32", "--splits", "validation", *w500) == 0
    assert main(["verify", str(out), "--regenerate"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "n32/validation: 20 examples pass the oracle and regenerate from their seeds"
    )
    assert main(["stats", "--configs", "n32", "--num-examples", "3", *w500]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith("| n32 | validation | 3 | ")
    assert main(["show", "--config", "n64", "--index", "1", *w500]) == 0
    assert capsys.readouterr().out.startswith("n64/validation index 1 seed 2000064000001 ")


def test_sigterm_removes_the_temporary_file_and_a_rerun_removes_stale_ones(
    tmp_path, capsys, monkeypatch
):
    from swar_bench.tasks import hub_io

    out = tmp_path / "data"
    real, calls = hub_io.generate_flat, {"n": 0}

    def terminated_midway(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # what `timeout` / SLURM send, between two row groups
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(store_write, "examples_per_chunk", lambda n: 4)
    monkeypatch.setattr(store_write, "generate_flat", terminated_midway)
    handler = signal.getsignal(signal.SIGTERM)
    assert _generate(out, "--configs", "n32", "--splits", "test") == 143
    captured = capsys.readouterr()
    assert captured.err == "swar-bench data generate: terminated (SIGTERM)\n"
    assert calls["n"] == 2 and not (out / "n32").exists()  # temporary file removed, and the folder made for it
    assert signal.getsignal(signal.SIGTERM) == handler  # restored
    monkeypatch.setattr(store_write, "generate_flat", real)
    stale = out / "n32" / ".tmp-w8k1q2x0.parquet"  # e.g. left by a SIGKILL
    stale.parent.mkdir()
    stale.write_bytes(b"PAR1")
    assert _generate(out, "--configs", "n32", "--splits", "test") == 0
    assert capsys.readouterr().err == f"removed {stale}, left by an interrupted run\n"
    assert os.listdir(out / "n32") == ["test-00000-of-00001.parquet"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_unwritable_outputs_name_the_users_path_before_any_work(tmp_path, capsys):
    for argv, option in (
        (["vocab", "--out", "/proc/nope.json"], "--out=/proc/nope.json"),
        (
            ["stats", "--configs", "n32", "--num-examples", "2", "--report", "/proc/r.md"],
            "--report=/proc/r.md",
        ),
        (
            ["generate", "--out", "/proc/nope", "--configs", "n32", "--num-examples", "2"],
            "--out=/proc/nope",
        ),
    ):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1  # no table printed
        assert captured.err.startswith(
            f"swar-bench data {argv[0]}: error: {option}: cannot create a file in /proc ("
        )
        assert ".tmp-" not in captured.err


def test_a_split_without_examples_fails_verify_stats_and_check(tmp_path, capsys):
    out = tmp_path / "data"
    assert _generate(out, "--configs", "n32", "--splits", "validation,test") == 0
    path = split_path(out, "n32", "validation")
    pq.write_table(pq.read_table(path).schema.empty_table(), path)
    record_checksums(out)  # the record matches: the row count, not the checksum, must find it
    capsys.readouterr()
    reason = f"{path}: the split file has no examples (0 rows); expected at least one"
    assert main(["verify", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"n32/validation: FAILED: {reason}") and len(err) == 2
    assert main(["check", str(out)]) == 1  # a fault of the release, as for `verify`
    assert capsys.readouterr().err == f"FAILED: {reason} (write it again with `swar-bench data generate`)\n"
    assert main(["stats", "--source", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"swar-bench data stats: error: {reason}")


def test_a_reader_that_goes_away_is_not_an_error(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "data"
    assert _generate(out, "--configs", "n16384", "--splits", "validation") == 0
    # about 230 KB of output: more than a pipe holds, so the writer must meet the closed pipe
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "swar_bench.cli",
            "data",
            "show",
            "--source",
            str(out),
            "--config",
            "n16384",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141  # 128 + SIGPIPE, as for every command whose reader leaves
    assert first.startswith(b"n16384/validation index 0") and err == ""


def test_a_file_or_a_bare_name_as_source_is_one_line_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")

    def hub(*args, **kwargs):  # offline, the Hub client would retry for tens of seconds
        raise AssertionError(f"asked the Hub for {args[0]!r}")

    monkeypatch.setattr(datasets, "load_dataset", hub)
    expected = (
        "expected a folder in the Hub layout or a Hub id owner/name (e.g. irodkin/passkey_swar)"
    )
    missing = str(tmp_path / "nonexist")
    for argv, message in (
        (["check", "afile"], f"source='afile': is a file, {expected}"),
        (["check", "./afile"], f"source='./afile': is a file, {expected}"),
        (["verify", "afile"], f"source='afile': is a file, {expected}"),
        (
            ["verify", "nonexist"],
            f"source='nonexist': no such folder, and not a Hub id; {expected}",
        ),
        (
            ["verify", missing],
            (
                f"source={missing!r}: no such folder (a path, not a Hub id; the nearest existing "
                f"folder is {str(tmp_path)!r}); {expected}"
            ),
        ),
        (
            ["stats", "--source", "nonexist", "--configs", "n32"],
            f"--source='nonexist': no such folder, and not a Hub id; {expected}",
        ),
        (["stats", "--source", "afile"], f"--source='afile': is a file, {expected}"),
        (
            ["show", "--source", "afile", "--config", "n32"],
            f"--source='afile': is a file, {expected}",
        ),
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"swar-bench data {argv[0]}: error: {message}\n", argv


def test_a_rerun_removes_stale_temporary_files_of_every_config(tmp_path, capsys):
    out = tmp_path / "gk"
    assert _generate(out, "--configs", "n4096", "--splits", "validation") == 0
    # what `timeout -s KILL` leaves when it stops a run writing n16384
    stale = [out / "n16384" / ".tmp-3xk9w1ab.parquet", out / ".tmp-u7q2README.md"]
    stale[0].parent.mkdir()
    for path in stale:
        path.write_bytes(b"PAR1")
    capsys.readouterr()
    assert _generate(out, "--configs", "n32", "--splits", "validation") == 0  # other configs
    assert capsys.readouterr().err.splitlines() == [
        f"removed {path}, left by an interrupted run" for path in sorted(map(str, stale))
    ]
    assert os.listdir(out / "n16384") == []
    assert sorted(os.listdir(out / "n4096")) == ["validation-00000-of-00001.parquet"]


def test_empty_or_too_long_output_names_are_named_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def no_work(*args, **kwargs):
        raise AssertionError("generated before checking --out")

    monkeypatch.setattr(store_write, "generate_flat", no_work)
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")  # 255 on ext4, tmpfs, overlayfs
    long_out = str(tmp_path / ("x" * (name_max + 45)))
    shown = long_out[:100] + f"... ({len(long_out)} characters)"
    for argv, message in (
        (["generate", "--out", "", "--configs", "n32"], "--out='': expected a folder path"),
        (["vocab", "--out", ""], "--out='': expected a file path"),
        (
            ["stats", "--configs", "n32", "--num-examples", "2", "--report", ""],
            "--report='': expected a file path",
        ),
        (
            ["generate", "--out", long_out, "--configs", "n32"],
            (
                f"--out={shown}: the name is too long (a path component of {name_max + 45} "
                f"bytes; the file system allows {name_max} per name)"
            ),
        ),
        (
            ["generate", "--out", "x" * (name_max + 1) + "/sub", "--configs", "n32"],
            "--out=" + "x" * 100 + f"... ({name_max + 5} characters): the name is too long (a "
            f"path component of {name_max + 1} bytes; the file system allows {name_max} per name)",
        ),
        (
            ["vocab", "--out", "y" * name_max + ".json"],
            "--out=" + "y" * 100 + f"... ({name_max + 5} characters): the name is too long (a "
            f"path component of {name_max + 5} bytes; the file system allows {name_max} per name)",
        ),
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"swar-bench data {argv[0]}: error: {message}\n", argv
    assert set(os.listdir(tmp_path)) - {"hf_cache"} == set()  # nothing written


def test_check_of_config_folders_without_split_files_fails(tmp_path, capsys):
    (tmp_path / "n64").mkdir()
    (tmp_path / "n64" / ".tmp-abc.parquet").write_bytes(b"partial")  # what a killed generate leaves
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"swar-bench data check: error: none of the requested configs under '{tmp_path}' holds a split file")


# --- "interrupted" only for a run that really was interrupted ---------------------------------


def _generate_with_a_signal(out, monkeypatch, signum, at, swallow=False, via_dispatcher=False):
    """Run `data generate` (n32 validation + test, 8 examples each, 4 per chunk: chunks 0..3) and
    send ``signum`` to this process at event ``at``: ``("chunk", k)`` as chunk k is generated,
    ``("check",)`` as the disjointness check starts, ``("final",)`` while the last line is
    printed. ``swallow``: the signal's exception is swallowed where it lands (a finalizer, a
    library's broad except). Returns the exit status."""
    import builtins

    from swar_bench import cli as dispatcher
    from swar_bench.tasks import cli as data_cli
    from swar_bench.tasks import hub_io
    from swar_bench.utils import interrupts

    def send():
        try:
            os.kill(os.getpid(), signum)  # the handler runs before the next line
        except BaseException:
            if not swallow:
                raise

    real_flat, real_check, calls = hub_io.generate_flat, data_cli.check_disjoint, []

    def flat(*args, **kwargs):
        if at == ("chunk", len(calls)):
            send()
        calls.append(1)
        return real_flat(*args, **kwargs)

    def check(*args, **kwargs):
        if at == ("check",):
            send()
        return real_check(*args, **kwargs)

    def printing(*args, **kwargs):
        builtins.print(*args, **kwargs)
        if at == ("final",) and args and str(args[0]).startswith("splits are disjoint"):
            send()

    monkeypatch.setattr(store_write, "examples_per_chunk", lambda n: 4)
    monkeypatch.setattr(store_write, "generate_flat", flat)
    monkeypatch.setattr(data_cli, "check_disjoint", check)
    monkeypatch.setattr(data_cli, "print", printing, raising=False)
    argv = ["generate", "--out", str(out), "--no-progress", "--num-examples", "8", "--configs", "n32",
            "--splits", "validation,test"]
    status = dispatcher.main(["data", *argv]) if via_dispatcher else main(argv)
    assert interrupts.stopped() is None  # a stop ends with its command: never into the next one
    return status


def test_a_signal_while_generate_prints_its_last_line_is_not_an_interruption(tmp_path, capsys, monkeypatch):
    # The reported example: Ctrl-C reached `data generate` after it had written and checked
    # every file, while it printed "splits are disjoint ..."; it said "interrupted" and exited 130.
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert _generate_with_a_signal(tmp_path / "d", monkeypatch, signal.SIGINT, ("final",), via_dispatcher=True) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines()[-1] == "splits are disjoint (hash of input_ids) in n32"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # restored


EVENTS = [("chunk", k) for k in range(4)] + [("check",), ("final",)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(signame=st.sampled_from(["SIGINT", "SIGTERM"]), at=st.sampled_from(EVENTS), swallow=st.booleans())
def test_generate_says_interrupted_exactly_when_the_signal_came_before_it_completed(
    tmp_path, capsys, monkeypatch, signame, at, swallow
):
    import tempfile

    from swar_bench.tasks.hub_io import release_report

    signum = getattr(signal, signame)
    with tempfile.TemporaryDirectory(dir=tmp_path) as base, monkeypatch.context() as patch:
        out = os.path.join(base, "d")
        code = _generate_with_a_signal(out, patch, signum, at, swallow=swallow)
        err = capsys.readouterr().err
        before_completion = at != ("final",)  # written and checked only once the check returned
        if before_completion:  # a swallowed stop still ends the run, at the latest once its work is done
            assert code == 128 + signum
            what = "interrupted" if signame == "SIGINT" else "terminated (SIGTERM)"
            assert err == f"swar-bench data generate: {what}\n"
            leftovers = [n for _, _, files in os.walk(out) for n in files if n.startswith(".tmp-")]
            assert leftovers == []
            # nor a config folder it made and left empty (the reported leftover)
            assert [d for d, dirs, files in os.walk(out) if not dirs and not files] == []
        else:
            assert code == 0 and err == ""
            assert release_report(out) is None  # the folder is a complete release


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.one_of(st.integers(1, 40000), st.sampled_from([32, 64, 128, 256, 512, 4096, 16384])))
def test_a_config_or_train_split_off_the_task_is_named_with_its_docs_section(capsys, n):
    # The reported kind: "n7 is not a config of the card", "the card trains on n32, ..."; every
    # such line now cites where the configs and splits are defined.
    from swar_bench.tasks.passkey_swar import ALLOWED_N, TRAIN_N

    code = main(["stats", "--configs", f"n{n}", "--splits", "train", "--num-examples", "1", "--no-compare"])
    captured = capsys.readouterr()
    section = 'docs/TASK.md, "Configs and splits"'
    if n not in ALLOWED_N:
        assert code == 2
        assert captured.err == (
            f"swar-bench data stats: error: --configs: 'n{n}' is not a passkey_swar config (N in 32..16384, powers of 2; "
            f"{section}); expected some of n32, n64, n128, n256, n512, n1024, n2048, n4096, n8192, n16384\n"
        )
    elif n not in TRAIN_N:
        assert code == 2
        assert captured.err == (
            f"swar-bench data stats: error: --splits=train: config n{n} has no train split; train splits exist only "
            f"for n32, n64, n128, n256 ({section})\n"
        )
    else:
        assert code == 0 and captured.err == ""
        assert captured.out.splitlines()[2].startswith(f"| n{n} | train | 1 | ")


CARD = "n32, n64, n128, n256, n512, n1024, n2048, n4096, n8192, n16384"


def test_a_bare_number_as_config_names_the_option_and_suggests_the_name(capsys, tmp_path):
    assert main(["generate", "--out", str(tmp_path / "o"), "--configs", "32"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data generate: error: --configs: '32' is not a passkey_swar config (N in 32..16384, powers of 2; "
        f'docs/TASK.md, "Configs and splits"); expected some of {CARD}; did you mean n32?\n'
    )
    assert not (tmp_path / "o").exists()
    assert main(["show", "--config", "N64"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data show: error: --config: 'N64' is not a passkey_swar config (N in 32..16384, powers of 2; "
        f'docs/TASK.md, "Configs and splits"); expected one of {CARD}; did you mean n64?\n'
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(alphabet="nN0123456789x-_. ", min_size=1, max_size=8).map(str.strip).filter(
        lambda v: v and v not in CARD.split(", ") and v != "--"  # '--' itself: tests/test_argparsing.py
    ),
    st.sampled_from([("stats", "--configs"), ("generate", "--configs"), ("show", "--config")]),
)
def test_any_config_off_the_card_is_one_line_naming_the_option(capsys, tmp_path, value, command_option):
    command, option = command_option
    argv = [command, f"{option}={value}"] + (["--out", str(tmp_path / "o")] if command == "generate" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"swar-bench data {command}: error: {option}: {value!r} is not a passkey_swar config (")
    assert f"expected {'one' if option == '--config' else 'some'} of {CARD}" in err  # one config, or a list


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["w", "n_keys", "n_values", "active_min", "active_max", "drift_rate", "query_rate", "valid_frac"]),
    st.one_of(st.just("x"), st.integers(-5, 0), st.just(-0.5)),
    st.sampled_from(["stats", "vocab", "show"]),
)
def test_any_bad_params_field_names_the_option(capsys, tmp_path_factory, field, value, command):
    import json

    out = tmp_path_factory.mktemp("vocab") / "v.json"  # an accepted value (drift_rate 0) writes it
    extra = {"stats": ["--configs", "n32", "--num-examples", "1", "--no-compare"], "vocab": ["--out", str(out)],
             "show": ["--config", "n32"]}[command]
    code = main([command, "--params", json.dumps({field: value}), *extra])
    err = capsys.readouterr().err
    if code == 0:  # a value that field accepts (e.g. drift_rate 0)
        return
    assert err.count("\n") == 1
    assert err.startswith(f"swar-bench data {command}: error: --params: {field}=")
    assert "PasskeySwarParams" not in err


@pytest.fixture(scope="module")
def _small_release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "data"
    assert _generate(out, "--configs", "n32", "--splits", "validation,test", "--num-examples", "8") == 0
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    split=st.sampled_from(["validation", "test"]),
    how=st.sampled_from(["garbage", "truncated", "empty", "pages", "no rows", "other columns"]),
    junk=st.binary(min_size=1, max_size=64),
    cut=st.floats(0.05, 0.95),
)
def test_any_unreadable_split_file_is_a_fault_of_the_release_for_verify_and_check(
    _small_release, tmp_path_factory, capfd, split, how, junk, cut
):
    # The kind behind "`data verify` exits 1 but `data check` exits 2 on a corrupt parquet": a
    # local release with a split file that cannot be read is a fault of the data, which both
    # checks report with exit 1 naming the file (exit 2 is for wrong arguments).
    import shutil

    out = tmp_path_factory.mktemp("corrupt") / "data"
    shutil.copytree(_small_release, out)
    path = Path(split_path(out, "n32", split))
    data = bytearray(path.read_bytes())
    if how == "garbage":
        data = bytearray(junk)
    elif how == "truncated":
        data = data[: int(len(data) * cut)]
    elif how == "empty":
        data = bytearray()
    elif how == "pages":  # data pages overwritten, footer and magic bytes intact
        data[200 : len(data) // 2] = (junk * len(data))[: len(data) // 2 - 200]
    if how == "no rows":
        pq.write_table(pq.read_table(path).schema.empty_table(), path)
    elif how == "other columns":
        pq.write_table(pq.read_table(path).rename_columns(["x" + c for c in pq.read_table(path).column_names]), path)
    else:
        path.write_bytes(bytes(data))
    capfd.readouterr()
    for command in ("verify", "check"):
        assert main([command, str(out)]) == 1, (command, how)
        err = capfd.readouterr().err
        assert str(path) in err and "FAILED" in err, (command, how, err)


def test_the_reported_empty_config_of_data_show_is_quoted(capsys):
    assert main(["show", "--config", ""]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data show: error: --config: '' is not a passkey_swar config (N in 32..16384, powers of 2; "
        f'docs/TASK.md, "Configs and splits"); expected one of {CARD}\n'
    )


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.sampled_from(["n32", "n64", "n128", "test", "validation"]), min_size=1, max_size=4, unique=True),
       blanks=st.lists(st.sampled_from(["", " "]), min_size=0, max_size=3), data=st.data())
def test_a_list_option_with_an_empty_item_is_refused_naming_it(names, blanks, data):
    """The kind: any comma-separated list with empty items anywhere (between, first, last): one
    line naming each empty item's position; the same list without them is taken as it is."""
    from swar_bench.tasks.cli_options import UsageError, csv_list

    parts = list(names)
    for blank in blanks:
        parts.insert(data.draw(st.integers(0, len(parts))), blank)
    value = ",".join(parts)
    if not blanks:
        assert csv_list(value, "--configs") == names
        return
    with pytest.raises(UsageError) as err:
        csv_list(value, "--configs")
    empty = [str(i + 1) for i, p in enumerate(parts) if not p.strip()]
    assert str(err.value) == (f"--configs={value!r}: item {', '.join(empty)} is empty; expected names separated by "
                              f"single commas, e.g. {','.join(names)}")
