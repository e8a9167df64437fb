"""One reading of a data source: a local path fails at once as "no such folder"; a Hub id is asked
once per run (never with retries), not at all offline, and its failure names both readings."""

from __future__ import annotations

import os

import datasets
import pytest
from huggingface_hub import HfApi, constants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks import hub_io
from swar_bench.tasks.cli import main
from swar_bench.tasks.hub_io import DataSourceError, load_split, resolve_source
from swar_bench.tasks.store import source as store_source

EXPECTED = "expected a folder in the Hub layout or a Hub id owner/name (e.g. irodkin/passkey_swar)"


class ConnectError(OSError):
    """Stands in for the HTTP client's error when the Hub's name does not resolve."""


@pytest.fixture
def hub(monkeypatch):
    """Counts Hub requests; the Hub is unreachable (as huggingface_hub reports a DNS failure)."""
    calls: list[str] = []

    def dataset_info(self, repo_id, **kwargs):
        calls.append(repo_id)
        raise ConnectError("[Errno -2] Name or service not known")

    def load_dataset(*args, **kwargs):
        calls.append(f"load_dataset {args[0]}")
        raise ConnectionError(f"Couldn't reach {args[0]!r} on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(store_source, "_HUB_TRIED", {})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return calls


def test_the_issues_typo_is_no_such_folder_at_once(tmp_path, monkeypatch, capsys, hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    assert main(["show", "--source", "data/no_such_folder", "--config", "n32", "--index", "0"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data show: error: --source='data/no_such_folder': no such folder ('data' is a "
        f"local folder, so it is a path; the nearest existing folder is '{tmp_path / 'data'}'); {EXPECTED}\n"
    )
    assert hub == []


def test_fit_with_a_missing_local_source_is_one_line_at_once(tmp_path, monkeypatch, capsys, hub):
    from swar_bench.lightning_cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    code = cli_main(["fit", "--model.mechanism=GRU", "--data.source=data/no_such_folder",
                     "--trainer.logger=false"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert code == 2 and hub == []
    assert err == [
        (
            "swar-bench: error: --data.source='data/no_such_folder': no such folder ('data' is a local "
            f"folder, so it is a path; the nearest existing folder is '{tmp_path / 'data'}'); {EXPECTED}"
        )
    ]
    assert sorted(os.listdir(tmp_path)) == ["data"]  # no run folder left behind


def test_a_hub_id_is_asked_once_per_run_and_the_error_names_both_readings(hub):
    messages = []
    for split in ("validation", "test", "validation"):
        with pytest.raises(DataSourceError) as err:
            load_split("someone/no_such_set", "n32", split)
        messages.append(str(err.value))
    assert hub == ["someone/no_such_set"]  # one request, never load_dataset's retrying path
    assert messages == [messages[0]] * 3
    assert messages[0] == (
        "source='someone/no_such_set': no local folder of that name, and the Hub dataset "
        "someone/no_such_set could not be loaded (ConnectError: [Errno -2] Name or service not known); "
        "expected a folder in the Hub layout (e.g. ./someone/no_such_set) or a dataset id reachable "
        "on the Hub (a cached copy loads with HF_HUB_OFFLINE=1)"
    )


def test_offline_asks_no_hub_and_reads_the_cache_once(hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataSourceError) as err:
        load_split("someone/no_such_set", "n32", "validation")
    assert hub == ["load_dataset someone/no_such_set"]
    assert "no local folder of that name" in str(err.value)
    assert str(err.value).endswith("or a dataset id in the Hub cache (HF_HUB_OFFLINE=1)")


def test_home_is_expanded(tmp_path, monkeypatch, hub):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mydata").mkdir()
    assert resolve_source("~/mydata") == str(tmp_path / "mydata")
    with pytest.raises(DataSourceError, match=r"'~/gone': no such folder \(a path, not a Hub id"):
        resolve_source("~/gone")
    assert hub == []


_part = st.text(alphabet="abcXY_-1", min_size=1, max_size=6).filter(lambda p: "--" not in p)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.sampled_from(["", "./", "../", "/", "~/"]),
    parts=st.lists(_part, min_size=1, max_size=3),
    first_exists=st.booleans(),
)
def test_every_source_has_one_reading_decided_offline(tmp_path, monkeypatch, hub, prefix, parts, first_exists):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for entry in os.listdir(work):
        os.rmdir(work / entry)
    if first_exists:
        (work / parts[0]).mkdir()
    source = prefix + "/".join(parts)
    local = prefix != "" or (first_exists and len(parts) > 1)
    hub_shaped = prefix == "" and len(parts) == 2 and hub_io.is_hub_id(source)
    if prefix in ("", "./") and len(parts) == 1 and first_exists:
        assert resolve_source(source) == source  # an existing folder
    elif local:
        with pytest.raises(DataSourceError, match=r": no such folder \("):
            resolve_source(source)
    elif hub_shaped:
        assert resolve_source(source) is None
    else:
        with pytest.raises(DataSourceError, match="no such folder, and not a Hub id"):
            resolve_source(source)
    assert hub == []  # deciding never asks the Hub


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["missing", "empty", "no train split", "hub id"]),
       logger=st.booleans())
def test_fit_names_no_run_folder_before_a_bad_source_fails(tmp_path, monkeypatch, capsys, hub, kind, logger):
    # Reported: `fit --data.source=...` printed "run folder runs/quickstart/GatedDeltaNet/version_0"
    # and then failed on the source; the folder was never created. The line comes once the
    # inputs are validated, whichever way the source is bad.
    from swar_bench.lightning_cli import main as cli_main

    case = tmp_path / f"{kind}-{logger}".replace(" ", "_")
    case.mkdir(exist_ok=True)
    monkeypatch.chdir(case)
    source = {"missing": "./nothing_here", "empty": "./empty", "no train split": "./data",
              "hub id": "someone/no_such_set"}[kind]
    if kind == "empty":
        (case / "empty").mkdir(exist_ok=True)
    if kind == "no train split" and not (case / "data").exists():
        hub_io.write_dataset(case / "data", ["n32"], ["validation"], num_examples=2, progress=False)
    args = ["fit", "--model.mechanism=GRU", f"--data.source={source}", "--trainer.max_steps=1"]
    code = cli_main(args + ([] if logger else ["--trainer.logger=false"]))
    out, err = capsys.readouterr()
    assert code == 2 and "run folder" not in out
    assert next(ln for ln in err.splitlines() if ln.startswith("swar-bench")).startswith("swar-bench: error: ")
    assert not (case / "lightning_logs").exists() and not (case / "runs").exists()
