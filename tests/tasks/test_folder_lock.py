"""One writer per output folder: a second `data generate --out` into a folder another one is
writing is refused in one line naming the holder, and leaves the first one's files alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.tasks.cli import main as data_main
from swar_bench.utils.locks import LOCK_NAME, FolderLockedError, folder_lock


def test_the_reported_second_generate_into_one_out_is_refused_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "data"
    first = subprocess.Popen(
        [sys.executable, "-m", "swar_bench.tasks.cli", "generate", "--out", str(out), "--configs", "n256",
         "--splits", "train", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        lock = out / LOCK_NAME
        deadline = time.monotonic() + 120
        while not (lock.is_file() and lock.read_text().startswith(f"pid {first.pid} ")):  # the first holds it
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first generate never took the lock"
            time.sleep(0.05)  # polling an event (the lock taken), not a fixed wait
        temp_before = sorted(p.name for p in (out / "n256").glob(".tmp-*")) if (out / "n256").is_dir() else []
        capsys.readouterr()
        assert data_main(["generate", "--out", str(out), "--configs", "n32", "--splits", "validation",
                          "--num-examples", "5", "--no-progress"]) == 1
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1
        assert err[0].startswith(f"swar-bench data generate: error: {out} is in use by pid {first.pid} on ")
        assert "swar-bench data generate since " in err[0] and err[0].endswith("or write into another folder")
        assert first.poll() is None  # the first goes on, its temporary file untouched
        if temp_before:
            assert set(temp_before) <= {p.name for p in (out / "n256").glob(".tmp-*")}
        assert not (out / "n32").exists()
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGTERM)
        first.communicate(timeout=120)
    # the lock goes with its holder: the next writer gets it
    assert data_main(["generate", "--out", str(out), "--configs", "n32", "--splits", "validation",
                      "--num-examples", "5", "--no-progress"]) == 0


@settings(max_examples=30, deadline=None)
@given(name=st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=20)
       .filter(lambda s: s not in (".", "..") and len(s.encode()) < 200),
       command=st.sampled_from(["swar-bench data generate", "swar-bench fit"]))
def test_a_held_lock_refuses_a_second_writer_until_released(name, command):
    with tempfile.TemporaryDirectory() as base:
        folder = Path(base) / name
        with folder_lock(folder, command) as path:
            assert Path(path).read_text().startswith(f"pid {os.getpid()} on ")
            with pytest.raises(FolderLockedError) as refused, folder_lock(folder, "another"):
                pass
            message = str(refused.value)
            shown = str(folder) if str(folder).isprintable() else repr(str(folder))
            assert "\n" not in message and message.startswith(f"{shown} is in use by pid {os.getpid()} on ")
            assert f", {command} since " in message
        assert Path(path).read_text() == ""  # released: nobody named
        with folder_lock(folder, "another"):
            pass
