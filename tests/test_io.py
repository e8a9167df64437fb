"""swar_bench.utils.files: atomic writes (content, mode, no temporary file left, errors name the target)
and the write rehearsal used by every output check."""

from __future__ import annotations

import os
import signal
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils import interrupts
from swar_bench.utils.files import (
    PROBE_PREFIX,
    TEMP_PREFIX,
    atomic_path,
    atomic_write,
    atomic_write_text,
    name_limits,
    nearest_existing,
    probe_write,
)

NAMES = st.text(st.sampled_from("abcXYZ019._-"), min_size=1, max_size=40).filter(
    lambda s: s not in (".", "..")
)


@settings(max_examples=30, deadline=None)
@given(name=NAMES, text=st.text(max_size=200), umask=st.sampled_from([0o022, 0o077, 0o002]))
def test_atomic_write_text_round_trips_with_the_umask_mode_and_leaves_no_temp_file(
    tmp_path_factory, name, text, umask
):
    folder = tmp_path_factory.mktemp("w") / "sub"
    before = os.umask(umask)
    try:
        path = atomic_write_text(folder / name, text)
    finally:
        os.umask(before)
    assert path == folder / name
    assert path.read_bytes() == text.encode("utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert os.listdir(folder) == [name]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp_file(tmp_path):
    path = atomic_write_text(tmp_path / "table.md", "old\n")

    def half_then_fail(handle):
        handle.write(b"new, half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half_then_fail, binary=True)
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["table.md"]


def test_an_os_error_names_the_target_not_the_temp_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = blocker / "out.json"  # its folder is a file: cannot be created
    with pytest.raises(OSError) as info:
        atomic_write_text(target, "{}")
    assert info.value.filename == str(target)
    assert TEMP_PREFIX not in str(info.value)
    with pytest.raises(OSError) as info, atomic_path(target):
        pass
    assert info.value.filename == str(target)


def test_probe_write_leaves_nothing_and_fails_where_a_write_would(tmp_path):
    probe_write(tmp_path, "result.json")
    probe_write(tmp_path, prefix=PROBE_PREFIX)
    assert os.listdir(tmp_path) == []
    with pytest.raises(OSError):
        probe_write(tmp_path / "missing")


def test_nearest_existing_and_name_limits(tmp_path):
    assert nearest_existing(tmp_path / "a" / "b" / "c") == tmp_path
    assert nearest_existing(tmp_path) == tmp_path
    name_max, path_max = name_limits(tmp_path)
    assert name_max >= 14 and path_max >= 256


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([signal.SIGINT, signal.SIGTERM]), st.booleans())
def test_a_stop_just_after_the_temp_file_was_made_leaves_no_temp_file(signum, existed):
    # a Ctrl-C or SIGTERM falling between mkstemp's return and the record of the temporary file
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "out.json")
        if existed:
            atomic_write_text(target, "old")
        real = tempfile.mkstemp

        def stopping(*args, **kwargs):
            made = real(*args, **kwargs)
            signal.raise_signal(signum)  # in this thread: its handler runs before this returns
            return made

        previous = interrupts.install(sigterm=True)
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(tempfile, "mkstemp", stopping)
                with pytest.raises(KeyboardInterrupt if signum == signal.SIGINT else interrupts.Terminated):
                    atomic_write_text(target, "new")
        finally:
            interrupts.restore(previous)
            interrupts.clear()
        assert os.listdir(folder) == (["out.json"] if existed else [])
        if existed:
            assert Path(target).read_text() == "old"
