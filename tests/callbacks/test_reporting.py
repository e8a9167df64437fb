"""Atomic report files: content, no temporary file left, the umask's permissions."""

from __future__ import annotations

import os
import stat

import pytest

from swar_bench.utils.files import atomic_write_text


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_file_follows_the_umask(tmp_path, umask, expected):
    previous = os.umask(umask)
    try:
        path = atomic_write_text(tmp_path / "sub" / "table.md", "| a |\n")
    finally:
        os.umask(previous)
    assert path.read_text() == "| a |\n"
    assert stat.S_IMODE(path.stat().st_mode) == expected
    assert [p.name for p in path.parent.iterdir()] == ["table.md"]


def test_atomic_rewrite_replaces_the_content(tmp_path):
    path = atomic_write_text(tmp_path / "t.csv", "old\n")
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]
