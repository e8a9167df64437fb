"""A local release carries the SHA-256 of every split file (checksums.json); every command compares
the bytes on disk with it before reading, decodes every column from the file itself (no datasets
cache), and a corrupt file is exit 1 naming it, never a native abort; `fit` refuses such a folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from swar_bench.tasks import hub_io
from swar_bench.tasks.cli import main as data_main
from swar_bench.tasks.hub_io import (
    CHECKSUMS_FILE,
    CorruptDataError,
    load_split,
    read_local_table,
    write_dataset,
)
from swar_bench.tasks.store import write as store_write

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release")
    write_dataset(out, configs=["n32"], splits=["validation", "test"], num_examples=20, progress=False)
    return out


@pytest.fixture
def copy(release, tmp_path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(release, target)
    return target


def _flip(path: Path, offset: int, bit: int = 0) -> None:
    """Flip one bit of ``path`` and give it back its modification time (``touch -r``)."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _column_middle(path: Path, column: str) -> int:
    """A byte offset inside the data pages of ``column`` of row group 0."""
    meta = pq.read_metadata(path).row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema.startswith(column))
    return chunk.data_page_offset + chunk.total_compressed_size // 2


def _rerecord(folder: Path) -> None:
    """checksums.json rewritten from the files as they are now (a record that cannot help)."""
    table = {f"n32/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in (folder / "n32").glob("*.parquet")}
    (folder / CHECKSUMS_FILE).write_text(json.dumps({"sha256": table}))


def test_generate_records_the_sha256_of_every_split_file(release):
    recorded = json.loads((release / CHECKSUMS_FILE).read_text())["sha256"]
    files = sorted(p.relative_to(release).as_posix() for p in release.glob("n*/*.parquet"))
    assert sorted(recorded) == files == ["n32/test-00000-of-00001.parquet", "n32/validation-00000-of-00001.parquet"]
    for name, digest in recorded.items():
        assert hashlib.sha256((release / name).read_bytes()).hexdigest() == digest
    assert hub_io.release_problems(release) == []


def test_the_reported_flip_with_its_time_restored_fails_every_check(copy, capsys):
    split = copy / "n32" / "validation-00000-of-00001.parquet"
    assert data_main(["verify", str(copy), "--regenerate"]) == 0  # a first read (the cached copy)
    _flip(split, _column_middle(split, "input_ids"))
    capsys.readouterr()
    for argv in (["verify", str(copy), "--regenerate"], ["verify", str(copy)], ["check", str(copy)],
                 ["show", "--source", str(copy), "--config", "n32"]):
        assert data_main(argv) == 1, argv
        err = capsys.readouterr().err
        assert f"{split}: its SHA-256 differs from {copy / CHECKSUMS_FILE}" in err, (argv, err)
        assert "Traceback" not in err


def test_an_unreadable_column_is_exit_1_in_every_command_and_never_an_abort(copy, capsys):
    split = copy / "n32" / "test-00000-of-00001.parquet"
    offset = _column_middle(split, "labels")
    for i in range(8):  # a run of garbage in the labels pages; the footer stays valid
        _flip(split, offset + i, i % 8)
    _rerecord(copy)  # the checksum cannot catch it: the columns must
    with pytest.raises(CorruptDataError, match=f"^{split}: a column cannot be read"):
        read_local_table([split])
    for argv in (["verify", str(copy)], ["check", str(copy)], ["show", "--source", str(copy), "--config", "n32", "--split", "test"]):
        assert data_main(argv) == 1, argv
        assert f"{split}: a column cannot be read" in capsys.readouterr().err
    # the reported native abort (exit 134 in 2 of 3 runs): a process of its own, three times
    for _ in range(3):
        done = subprocess.run([sys.executable, "-m", "swar_bench.tasks.cli", "verify", str(copy), "--regenerate"],
                              check=False, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stderr
        assert "terminate called" not in done.stderr and "Traceback" not in done.stderr


def test_a_local_folder_is_read_from_disk_without_the_datasets_cache(copy, monkeypatch):
    import datasets

    def refuse(*args, **kwargs):
        raise AssertionError("datasets.load_dataset would write a cache copy")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    assert len(load_split(str(copy), "n32", "validation")) == 20


def _fit(source: Path, tmp_path: Path) -> list[str]:
    return ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU",
            "--model.mechanism.init_args.d_model=8", f"--data.source={source}", "--data.train_configs=[32]",
            "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2", "--trainer.max_steps=1",
            "--trainer.limit_val_batches=0", f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            "--trainer.enable_progress_bar=false"]


def test_fit_refuses_a_folder_that_verify_rejects(copy, tmp_path, capsys):
    write_dataset(copy, configs=["n32"], splits=["train"], num_examples=20, progress=False)
    train = copy / "n32" / "train-00000-of-00001.parquet"
    # a flipped answer: the checksum differs
    _flip(train, _column_middle(train, "labels"))
    argv = _fit(copy, tmp_path)
    capsys.readouterr()
    assert main(argv) == 1
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert line.startswith(f"swar-bench: FAILED: {train}: its SHA-256 differs from ")
    # no params.json: the cheap checks refuse before any training
    (copy / "params.json").unlink()
    assert main(argv) == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert line.startswith(f"swar-bench: error: --data.source={copy}: {copy} is not a complete release; missing: params.json")
    assert not (tmp_path / "runs").exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7), recorded=st.booleans())
def test_any_single_bit_flip_is_caught_or_reads_without_crashing(release, tmp_path_factory, where, bit, recorded):
    folder = tmp_path_factory.mktemp("flip")
    shutil.copytree(release, folder, dirs_exist_ok=True)
    split = folder / "n32" / "validation-00000-of-00001.parquet"
    _flip(split, int(where * split.stat().st_size), bit)
    if recorded:  # with the record: always caught, before the file is parsed
        with pytest.raises(CorruptDataError, match="SHA-256 differs"):
            load_split(str(folder), "n32", "validation")
        assert any("SHA-256 differs" in p for p in hub_io.release_problems(folder))
    else:  # without one (a Hub download): a clear error or a table, never a crash
        (folder / CHECKSUMS_FILE).unlink()
        try:
            table = read_local_table([split])
        except CorruptDataError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(split))
        else:
            assert table.num_rows >= 0
    shutil.rmtree(folder)


def test_generate_again_rewrites_a_file_whose_bytes_differ(copy, capsys):
    split = copy / "n32" / "test-00000-of-00001.parquet"
    good = split.read_bytes()
    _flip(split, _column_middle(split, "input_ids"))
    kept: list[str] = []
    write_dataset(copy, configs=["n32"], splits=["validation", "test"], num_examples=20, progress=False, kept=kept)
    assert split.read_bytes() == good  # the same seeds, the same bytes
    assert kept == [str(copy / "n32" / "validation-00000-of-00001.parquet")]
    assert data_main(["verify", str(copy)]) == 0


def test_a_full_disk_during_generate_is_exit_1_naming_the_file(tmp_path, capsys, monkeypatch):
    import errno

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_write, "flat_to_table", full_disk)
    out = tmp_path / "data"
    assert data_main(["generate", "--out", str(out), "--configs", "n32", "--splits", "test", "--num-examples", "5",
                      "--no-progress"]) == 1
    split = out / "n32" / "test-00000-of-00001.parquet"
    assert capsys.readouterr().err.splitlines() == [
        f"swar-bench data generate: FAILED: No space left on device writing {split}"]
    assert not list(out.rglob(".tmp-*"))  # no temporary file left
