"""A key of a referee config left empty (`mechanism:` with nothing under it) is one line naming
the file and the key (fault: `swar-bench referee: error: Unexpected config: mechanism:`, naming
no file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.referee.cli import main

QUICK = Path(__file__).resolve().parents[2] / "configs" / "referee" / "quick.yaml"
KEYS = sorted(yaml.safe_load(QUICK.read_text()))


def _line(key: str, name: str) -> str:
    return (f"swar-bench referee: error: --config='{name}': {key}: is empty (YAML null); expected a value (or "
            f"options) under {key}:, or no {key}: line")


@pytest.mark.parametrize("key", ["mechanism", "seed", "ranges"])
def test_the_reported_empty_keys_are_named_with_their_file(tmp_path, capsys, monkeypatch, key):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.yaml").write_text(f"{key}:\n")
    assert main(["--config", str(QUICK), "--config", "e.yaml"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [_line(key, "e.yaml")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), others=st.dictionaries(st.sampled_from(["seed", "vocab", "hops"]),
                                                        st.integers(1, 9), max_size=2))
def test_any_key_left_empty_is_named(tmp_path_factory, capsys, monkeypatch, key, others):
    """The kind: any key of the referee's config left null, beside any others set: one line naming
    the file and that key, nothing written."""
    folder = tmp_path_factory.mktemp("e")
    monkeypatch.chdir(folder)
    others.pop(key, None)
    (folder / "e.yaml").write_text(yaml.safe_dump({**others, key: None}))
    assert main(["--config", str(QUICK), "--config", "e.yaml"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [_line(key, "e.yaml")]
    assert sorted(p.name for p in folder.iterdir()) == ["e.yaml"]
