"""Progress bars only on a terminal (issue "faults by whole kind", item 7): `swar-bench data
generate` drew its tqdm bar into pipes and log files. Now no bar is drawn when stderr is not a
terminal: its own bar (tqdm's ``disable=None``) and the datasets / huggingface_hub bars (their own
switches, swar_bench.utils.quiet.progress_bars_only_on_a_terminal), restored afterwards."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import datasets.utils as ds_utils
import huggingface_hub.utils as hub_utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.quiet import PROGRESS_BAR_LIBRARIES, progress_bars_only_on_a_terminal

ROOT = Path(__file__).resolve().parents[2]


class _Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_generate_into_a_pipe_draws_no_progress_bar(tmp_path):
    # the reported input: `data generate` with stderr a pipe (a log)
    done = subprocess.run(
        [sys.executable, "-m", "swar_bench.cli", "data", "generate", "--out", str(tmp_path / "d"), "--configs", "n32",
         "--splits", "test", "--num-examples", "5"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "ex/s" not in done.stderr and "%|" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[0] == f"wrote 1 parquet file, README.md and vocab.json under {tmp_path / 'd'}"


@pytest.fixture
def clean_switches(monkeypatch):
    for _, variable in PROGRESS_BAR_LIBRARIES:
        monkeypatch.delenv(variable, raising=False)
    ds_utils.enable_progress_bars()
    hub_utils.enable_progress_bars()
    yield
    ds_utils.enable_progress_bars()
    hub_utils.enable_progress_bars()


@settings(max_examples=30, deadline=None)
@given(terminal=st.booleans(), ds_off=st.booleans(), hub_off=st.booleans(),
       preset=st.sampled_from([None, "0", "1"]))
def test_bars_are_off_exactly_off_a_terminal_and_restored(terminal, ds_off, hub_off, preset):
    """The kind: whatever the stream, the libraries' earlier switches and a variable the user
    set, inside the bars of datasets and huggingface_hub are off when the stream is no terminal
    (and as they were on one), the variables set only where the user set none; all is as before after."""
    saved = {v: os.environ.pop(v, None) for _, v in PROGRESS_BAR_LIBRARIES}
    try:
        for utils, off in ((ds_utils, ds_off), (hub_utils, hub_off)):
            (utils.disable_progress_bars if off else utils.enable_progress_bars)()
        if preset is not None:
            os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = preset
        with progress_bars_only_on_a_terminal(_Stream(terminal)) as bars:
            assert bars is terminal
            assert ds_utils.are_progress_bars_disabled() == (ds_off or not terminal)
            assert hub_utils.are_progress_bars_disabled() == (hub_off or not terminal)
            assert os.environ.get("HF_DATASETS_DISABLE_PROGRESS_BARS") == (preset if preset or terminal else "1")
            assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == (None if terminal else "1")
        assert ds_utils.are_progress_bars_disabled() == ds_off
        assert hub_utils.are_progress_bars_disabled() == hub_off
        assert os.environ.get("HF_DATASETS_DISABLE_PROGRESS_BARS") == preset
        assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    finally:
        for _, variable in PROGRESS_BAR_LIBRARIES:
            os.environ.pop(variable, None)
            if saved[variable] is not None:
                os.environ[variable] = saved[variable]
        ds_utils.enable_progress_bars()
        hub_utils.enable_progress_bars()


def test_a_stream_without_isatty_counts_as_no_terminal(clean_switches):
    with progress_bars_only_on_a_terminal(object()) as bars:
        assert bars is False and ds_utils.are_progress_bars_disabled()
    assert not ds_utils.are_progress_bars_disabled()
