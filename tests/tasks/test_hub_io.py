"""Hub-layout parquet I/O: layout, schema, datasets loading, errors, disjointness, atomicity."""

from __future__ import annotations

import json
import os
import re
import stat

import datasets
import huggingface_hub
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from swar_bench.tasks import hub_io
from swar_bench.tasks.hub_io import (
    DataSourceError,
    check_disjoint,
    load_split,
    split_path,
    verify_dataset,
    write_dataset,
)
from swar_bench.tasks.oracle import OracleError
from swar_bench.tasks.passkey_swar import (
    PasskeySwarParams,
    example_seed,
    generate_examples,
    make_example,
)
from swar_bench.tasks.store import write as store_write
from swar_bench.utils.files import atomic_write_text


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("passkey_swar")
    write_dataset(out, ["n32", "n64"], ["validation", "test"], num_examples=30, progress=False)
    return out


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "hf_cache")


def test_layout_and_schema(data_dir):
    names = sorted(
        os.path.relpath(os.path.join(d, f), data_dir) for d, _, fs in os.walk(data_dir) for f in fs
    )
    assert names == [
        "README.md",
        "checksums.json",
        "n32/test-00000-of-00001.parquet",
        "n32/validation-00000-of-00001.parquet",
        "n64/test-00000-of-00001.parquet",
        "n64/validation-00000-of-00001.parquet",
        "params.json",
        "vocab.json",
    ]
    assert json.loads((data_dir / "params.json").read_text()) == PasskeySwarParams().to_dict()
    table = pq.read_table(split_path(data_dir, "n64", "validation"))
    assert table.schema.names == ["input_ids", "labels", "answer_type", "n_writes", "seed"]
    assert table.schema.field("input_ids").type == pa.list_(pa.int16())
    assert table.schema.field("labels").type == pa.list_(pa.int16())
    assert table.schema.field("answer_type").type == pa.list_(pa.string())
    assert (
        table.schema.field("n_writes").type == pa.int64()
        and table.schema.field("seed").type == pa.int64()
    )
    rows = table.to_pylist()
    assert [r["seed"] for r in rows] == [example_seed("validation", 64, i) for i in range(30)]
    ref = generate_examples([r["seed"] for r in rows[:5]], 64)
    for row, ex in zip(rows, ref):
        assert (
            row["input_ids"] == ex["input_ids"].tolist() and row["labels"] == ex["labels"].tolist()
        )
        assert row["answer_type"] == ex["answer_type"] and row["n_writes"] == 64
    readme = (data_dir / "README.md").read_text()
    assert readme.startswith(
        "---\nconfigs:\n- config_name: n32\n  data_files:\n  - split: validation\n"
    )
    assert "    path: n64/test-00000-of-00001.parquet\n" in readme


def test_datasets_loads_the_folder_by_config_and_split(data_dir, cache):
    ds = datasets.load_dataset(str(data_dir), "n32", split="validation", cache_dir=cache)
    assert len(ds) == 30 and ds[0]["seed"] == example_seed("validation", 32, 0)
    assert (
        ds[3]["input_ids"]
        == make_example(example_seed("validation", 32, 3), 32)["input_ids"].tolist()
    )


def test_load_split_local_with_verification(data_dir, cache):
    ds = load_split(str(data_dir), "n64", "test", verify=True, cache_dir=cache)
    assert len(ds) == 30 and ds.column_names == [
        "input_ids",
        "labels",
        "answer_type",
        "n_writes",
        "seed",
    ]
    assert verify_dataset(ds, regenerate=True) == 30


def test_load_split_errors_are_one_sentence(data_dir, cache, monkeypatch):
    with pytest.raises(DataSourceError, match=r"no file .*n128.*validation-\*\.parquet") as err:
        load_split(str(data_dir), "n128", "validation", cache_dir=cache)
    assert "\n" not in str(err.value)
    with pytest.raises(DataSourceError, match="config='128'"):
        load_split(str(data_dir), "128", "validation")
    with pytest.raises(DataSourceError, match="split='dev'"):
        load_split(str(data_dir), "n32", "dev")
    with pytest.raises(DataSourceError, match="no such folder"):
        load_split("./missing/folder", "n32", "validation")

    def offline(*args, **kwargs):
        raise ConnectionError(
            "Couldn't reach 'irodkin/passkey_swar' on the Hub (LocalEntryNotFoundError)\nmore"
        )

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no Hub request
    with pytest.raises(
        DataSourceError,
        match=r"dataset irodkin/passkey_swar could not be loaded \(config 'n32' split 'validation': ConnectionError",
    ) as err:
        load_split("irodkin/passkey_swar", "n32", "validation")
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError) and isinstance(err.value, RuntimeError)


def test_verification_names_the_bad_example(tmp_path, cache):
    write_dataset(tmp_path, ["n32"], ["validation"], num_examples=6, progress=False)
    path = split_path(tmp_path, "n32", "validation")
    rows = pq.read_table(path).to_pylist()
    rows[4]["labels"][0] = rows[4]["input_ids"][0]  # a label off an answer position
    pq.write_table(pa.Table.from_pylist(rows, schema=hub_io.arrow_schema()), path)
    hub_io.record_checksums(tmp_path)  # the record matches: the oracle must find it
    with pytest.raises(
        OracleError, match=r"seed=2000032000004 index=4: position 0: label off an answer position"
    ):
        load_split(str(tmp_path), "n32", "validation", verify=True, cache_dir=cache)


def test_disjointness_check_finds_shared_examples(data_dir, tmp_path, cache):
    assert check_disjoint(str(data_dir), ["n32", "n64"], cache_dir=cache) == {}
    write_dataset(tmp_path, ["n32"], ["validation", "test"], num_examples=8, progress=False)
    val = pq.read_table(split_path(tmp_path, "n32", "validation"))
    test = pq.read_table(split_path(tmp_path, "n32", "test")).to_pylist()
    test[2] = val.to_pylist()[5]
    test[6] = val.to_pylist()[1]
    pq.write_table(
        pa.Table.from_pylist(test, schema=hub_io.arrow_schema()),
        split_path(tmp_path, "n32", "test"),
    )
    hub_io.record_checksums(tmp_path)  # the record matches: the example hashes must find them
    assert check_disjoint(str(tmp_path), ["n32"], cache_dir=cache) == {
        "n32": {("test", "validation"): 2}
    }


def test_writes_are_atomic(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = hub_io.generate_flat

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(store_write, "examples_per_chunk", lambda n: 4)  # several row groups
    monkeypatch.setattr(store_write, "generate_flat", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        write_dataset(tmp_path, ["n32"], ["validation"], num_examples=10, progress=False)
    # no partial file, no temporary, not the config folder made for them
    assert not (tmp_path / "n32").exists()
    (tmp_path / "n32").mkdir()  # a folder that was there before is kept
    with pytest.raises(RuntimeError, match="disk full"):
        calls["n"] = 0
        write_dataset(tmp_path, ["n32"], ["validation"], num_examples=10, progress=False)
    assert os.listdir(tmp_path / "n32") == []


def test_row_groups_concatenate_identically(tmp_path, monkeypatch):
    monkeypatch.setattr(store_write, "examples_per_chunk", lambda n: 3)
    write_dataset(tmp_path, ["n64"], ["test"], num_examples=10, progress=False)
    f = pq.ParquetFile(split_path(tmp_path, "n64", "test"))
    assert f.metadata.num_row_groups == 4
    ids = f.read().column("input_ids").to_pylist()
    seeds = [example_seed("test", 64, i) for i in range(10)]
    assert ids == [ex["input_ids"].tolist() for ex in generate_examples(seeds, 64)]


def test_write_dataset_rejects_bad_requests(tmp_path):
    with pytest.raises(DataSourceError, match="config n512 has no train split"):
        write_dataset(tmp_path, ["n512"], ["train"], progress=False)
    with pytest.raises(DataSourceError, match="config n512 has no train split"):
        write_dataset(tmp_path, ["n512"], ["train"], num_examples=2, progress=False)
    with pytest.raises(DataSourceError, match="split='dev'"):
        write_dataset(tmp_path, ["n32"], ["dev"], num_examples=2, progress=False)
    with pytest.raises(ValueError, match="num_examples=0"):
        write_dataset(tmp_path, ["n32"], ["test"], num_examples=0, progress=False)
    assert np.array_equal(hub_io.card_splits(64), ("train", "validation", "test"))


@pytest.mark.parametrize(
    "configs, splits, num_examples, message",
    [
        (
            ["n7"],
            ["validation"],
            2,
            'config \'n7\' is not a passkey_swar config (docs/TASK.md, "Configs and splits"): expected one of n32,',
        ),
        (["n33"], None, 2, "config 'n33' is not a passkey_swar config"),
        (["n4096"], ["train"], 2, ('config n4096 has no train split (train splits exist only for n32, n64, n128, n256 '
                                 '(docs/TASK.md, "Configs and splits"))')),  # even with num_examples
        (["n32", "n32"], ["test"], 2, "configs: n32 given more than once"),
        (["n32"], ["test", "test"], 2, "splits: test given more than once"),
        ([], ["test"], 2, "configs=[]: expected at least one of n32"),
        (["n32"], [], 2, "splits=[]: expected at least one of train"),
    ],
)
def test_write_dataset_rejects_requests_off_the_card(
    tmp_path, configs, splits, num_examples, message
):
    out = tmp_path / "out"
    with pytest.raises(DataSourceError, match=re.escape(message)) as err:
        write_dataset(out, configs, splits, num_examples=num_examples, progress=False)
    assert "\n" not in str(err.value)
    assert not out.exists()  # rejected before anything is written


def test_write_dataset_rejects_an_out_dir_under_a_file_before_generating(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setattr(store_write, "generate_flat", lambda *a, **k: pytest.fail("generated"))
    with pytest.raises(NotADirectoryError):
        write_dataset(tmp_path / "afile" / "out", ["n32"], ["test"], 2, progress=False)
    with pytest.raises(DataSourceError, match="exists and is not a folder"):
        write_dataset(tmp_path / "afile", ["n32"], ["test"], 2, progress=False)


def _write_garbage(path):
    with open(path, "wb") as f:
        f.write(b"not parquet at all\n")


def _datasets_log(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("datasets")]


def test_unreadable_parquet_is_named_in_one_line_and_nothing_else(tmp_path, cache, capfd, caplog):
    write_dataset(tmp_path, ["n32"], ["validation", "test"], num_examples=4, progress=False)
    path = split_path(tmp_path, "n32", "test")
    _write_garbage(path)
    hub_io.record_checksums(tmp_path)  # the record matches: reading the file must find it
    capfd.readouterr()
    with pytest.raises(
        DataSourceError, match=re.escape(f"{path}: not a readable parquet file")
    ) as err:
        load_split(str(tmp_path), "n32", "test", cache_dir=cache)
    assert "\n" not in str(err.value)
    with pytest.raises(DataSourceError, match=re.escape(f"{path}: not a readable parquet file")):
        check_disjoint(str(tmp_path), ["n32"], cache_dir=cache)
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")  # no "Failed to read schema ..." from datasets
    assert _datasets_log(caplog) == []
    assert len(load_split(str(tmp_path), "n32", "validation", cache_dir=cache)) == 4


def test_hub_load_failure_logs_nothing_of_its_own(cache, capfd, caplog, monkeypatch):
    from datasets.utils import logging as ds_logging

    def noisy(*args, **kwargs):
        ds_logging.get_logger("datasets.builder").error("Failed to read schema from somewhere")
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", noisy)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no Hub request
    level = ds_logging.get_verbosity()
    bars_off = datasets.utils.are_progress_bars_disabled()
    with pytest.raises(DataSourceError, match="dataset owner/name could not be loaded"):
        load_split("owner/name", "n32", "validation", cache_dir=cache)
    assert "Failed to read schema" not in capfd.readouterr().err
    assert _datasets_log(caplog) == []
    assert ds_logging.get_verbosity() == level  # restored
    assert datasets.utils.are_progress_bars_disabled() == bars_off


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_dataset(tmp_path, ["n32"], ["test"], num_examples=2, progress=False)
        atomic_write_text(tmp_path / "stats.md", "# x\n")
    finally:
        os.umask(old)
    for name in (
        "n32/test-00000-of-00001.parquet",
        "README.md",
        "vocab.json",
        "params.json",
        "stats.md",
    ):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == mode, name


def test_one_folder_holds_one_parameter_set(tmp_path, cache):
    w8 = PasskeySwarParams(w=8)
    write_dataset(tmp_path, ["n64"], ["validation"], num_examples=5, params=w8, progress=False)
    assert hub_io.read_params(tmp_path) == w8
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(DataSourceError) as err:
        write_dataset(tmp_path, ["n32"], ["validation"], num_examples=5, progress=False)
    assert str(err.value) == (
        f"{tmp_path} holds data generated with w=8 (recorded in {tmp_path / 'params.json'}), "
        "not the release's w=16 (no --params given): one folder holds one parameter set; "
        """expected --params '{"w": 8}' for this folder, or another --out"""
    )
    assert sorted(os.listdir(tmp_path)) == before  # nothing written
    # Reading uses the record: the card's parameters would reject this data.
    ds = load_split(str(tmp_path), "n64", "validation", verify=True, cache_dir=cache)
    with pytest.raises(OracleError):
        verify_dataset(ds, PasskeySwarParams())
    assert hub_io.folder_params(tmp_path) == w8 == hub_io.folder_params(tmp_path, w8)
    with pytest.raises(DataSourceError, match=r"^--params w=16 differ from w=8 recorded in "):
        hub_io.folder_params(tmp_path, PasskeySwarParams())
    # More data of the recorded parameters is fine.
    write_dataset(tmp_path, ["n32"], ["test"], num_examples=2, params=w8, progress=False)
    assert "Parameters: `" + json.dumps(w8.to_dict()) + "`" in (tmp_path / "README.md").read_text()


def test_params_record_of_older_folders_and_folders_without_one(tmp_path):
    write_dataset(
        tmp_path, ["n32"], ["test"], num_examples=2, params=PasskeySwarParams(w=4), progress=False
    )
    os.unlink(tmp_path / "params.json")  # a folder from before params.json: README's line
    assert hub_io.read_params(tmp_path) == PasskeySwarParams(w=4)
    with pytest.raises(DataSourceError, match=r"w=4 \(recorded in .*README\.md\), not the release's w=16 \(no --params given\)"):
        write_dataset(tmp_path, ["n64"], ["test"], num_examples=2, progress=False)
    os.unlink(tmp_path / "README.md")  # no record (e.g. a Hub download): the card's
    assert hub_io.read_params(tmp_path) is None
    assert hub_io.folder_params(tmp_path) == PasskeySwarParams()
    assert hub_io.folder_params(tmp_path, PasskeySwarParams(w=4)) == PasskeySwarParams(w=4)
    with pytest.raises(DataSourceError, match=r'w=16 \(no params.json: the release\'s, docs/TASK.md "Generation"\), not --params w=4'):
        write_dataset(tmp_path, ["n64"], ["test"], 2, params=PasskeySwarParams(w=4), progress=False)
    (tmp_path / "params.json").write_text('{"window": 3}')
    with pytest.raises(DataSourceError, match=r"params\.json: expected a JSON object of"):
        hub_io.read_params(tmp_path)


def test_readme_lists_only_the_cards_configs(tmp_path):
    (tmp_path / "n7").mkdir()
    write_dataset(tmp_path, ["n32"], ["test"], num_examples=2, progress=False)
    for name in ("n7", "n032", "n33"):
        os.makedirs(tmp_path / name, exist_ok=True)
        (tmp_path / name / "test-00000-of-00001.parquet").write_bytes(
            (tmp_path / "n32" / "test-00000-of-00001.parquet").read_bytes()
        )
    write_dataset(tmp_path, ["n64"], ["validation"], num_examples=2, progress=False)
    readme = (tmp_path / "README.md").read_text()
    assert re.findall(r"config_name: (\S+)", readme) == ["n32", "n64"]
    assert hub_io.card_files(tmp_path) == {32: ["test"], 64: ["validation"]}


def test_a_rerun_removes_temporary_files_an_interrupted_run_left(tmp_path):
    (tmp_path / "n32").mkdir()
    # ours, in DIR and in every config folder of the card, whichever configs the rerun writes
    stale = [
        "n32/.tmp-k2j4h5.parquet",
        "n64/.tmp-x.parquet",
        "n16384/.tmp-9abc.parquet",
        ".tmp-abc12345README.md",
        ".tmp-q1vocab.json",
        ".tmp-zzparams.json",
        ".tmp-probe-a1b2",
    ]
    # not ours: other names, or folders that are not configs of the card
    kept = [
        "n32/.tmp-notes.txt",
        "n32/my.tmp-1.parquet",
        "n7/.tmp-x.parquet",
        "notes/.tmp-x.parquet",
        ".tmp-x.parquet",
    ]
    for name in stale + kept:
        os.makedirs(os.path.dirname(tmp_path / name), exist_ok=True)
        (tmp_path / name).write_text("x")
    write_dataset(tmp_path, ["n32"], ["test"], num_examples=2, progress=False)
    assert [n for n in stale + kept if (tmp_path / n).exists()] == kept
    assert hub_io.remove_stale_temp_files(tmp_path) == []  # nothing left to remove


@pytest.mark.parametrize(
    "source, message",
    [
        (
            "afile",
            "source='afile': is a file, expected a folder in the Hub layout or a Hub id owner/name",
        ),
        ("./afile", "source='./afile': is a file, expected a folder"),
        (
            "nonexist",
            "source='nonexist': no such folder, and not a Hub id; expected a folder in the Hub layout or a Hub id owner/name (e.g. irodkin/passkey_swar)",
        ),
        ("passkey_swar", "source='passkey_swar': no such folder, and not a Hub id"),
        ("./missing/folder", "source='./missing/folder': no such folder (a path, not a Hub id;"),
        ("/no/such/folder", "source='/no/such/folder': no such folder (a path, not a Hub id;"),
        ("a/b/c", "source='a/b/c': no such folder, and not a Hub id"),
        ("owner--x/name", "source='owner--x/name': no such folder"),
        ("", "source='': no such folder"),
    ],
)
def test_a_file_or_a_bare_name_is_refused_without_asking_the_hub(
    source, message, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")

    def hub(*args, **kwargs):
        raise AssertionError(f"asked the Hub for {args[0]!r}")

    monkeypatch.setattr(datasets, "load_dataset", hub)
    with pytest.raises(DataSourceError) as err:
        load_split(source, "n32", "validation")
    assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataSourceError, match=re.escape(message)):
        check_disjoint(source, ["n32"])


def test_hub_ids_are_owner_slash_name():
    for ok in ("irodkin/passkey_swar", "a/b", "Org-1/data.set_2"):
        assert hub_io.is_hub_id(ok), ok
    for bad in (
        "passkey_swar",
        "afile",
        "./a/b",
        "/a/b",
        "a/b/c",
        "a//b",
        "a/.b",
        "a/b-",
        "a--b/c",
        "a/b..c",
        "",
        "a/" + "b" * 95,
    ):
        assert not hub_io.is_hub_id(bad), bad


def test_a_split_without_examples_is_an_error(tmp_path, cache):
    write_dataset(tmp_path, ["n32"], ["validation", "test"], num_examples=3, progress=False)
    path = split_path(tmp_path, "n32", "validation")
    pq.write_table(hub_io.arrow_schema().empty_table(), path)
    hub_io.record_checksums(tmp_path)  # the record matches: the row count must find it
    message = f"{path}: the split file has no examples (0 rows); expected at least one"
    with pytest.raises(DataSourceError, match=re.escape(message)):
        load_split(str(tmp_path), "n32", "validation", cache_dir=cache)
    with pytest.raises(DataSourceError, match=re.escape(message)):
        check_disjoint(str(tmp_path), ["n32"])


def test_write_errors_name_the_users_path_not_the_temporary_file(tmp_path, monkeypatch):
    import errno

    def disk_full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", src)

    monkeypatch.setattr(os, "replace", disk_full)
    for path, write in (
        (tmp_path / "stats.md", lambda p: atomic_write_text(p, "# x\n")),
        (
            tmp_path / "n32" / "test-00000-of-00001.parquet",
            lambda p: hub_io.write_split(p, "test", 32, 2),
        ),
    ):
        with pytest.raises(OSError) as err:
            write(path)
        assert str(err.value) == f"[Errno {errno.ENOSPC}] No space left on device: '{path}'"
        assert not path.parent.exists() or [f for f in os.listdir(path.parent) if f.startswith(".tmp-")] == []
