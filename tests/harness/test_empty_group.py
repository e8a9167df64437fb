"""An option group left empty in a --config file (`trainer:` with nothing under it: YAML null) is
refused with one line naming the file and the group (fault: `fit --config configs/quickstart.yaml
--config empty.yaml` said only jsonargparse's `Unexpected config: trainer:`, naming no file)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness import checks
from swar_bench.lightning_cli import main
from swar_bench.utils.option_table import GROUPS
from tests.harness.cli_lines import QUICKSTART, one_error_line


@pytest.mark.parametrize("group", ["trainer", "model"])
def test_the_reported_empty_section_is_named_with_its_file(tmp_path, capsys, monkeypatch, group):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.yaml").write_text(f"{group}:\n")
    assert main(["fit", "--config", QUICKSTART, "--config", "empty.yaml"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --config=empty.yaml: {group}: is empty (YAML null); expected {group} options "
        f"indented under it, or no {group}: line")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.yaml"]


@settings(max_examples=40, deadline=None)
@given(group=st.sampled_from(sorted(GROUPS)), others=st.dictionaries(
    st.sampled_from(sorted(GROUPS)), st.just({"x": 1}), max_size=3),
       top=st.dictionaries(st.sampled_from(["seed_everything", "ckpt_path"]), st.none(), max_size=2))
def test_any_empty_group_of_a_config_file_is_named(group, others, top):
    """The kind: any option group left null beside any others set and any top-level option set to
    null (which is a value, not an empty group): one line naming the group; without the null
    group the file passes this check."""
    others.pop(group, None)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        path.write_text(yaml.safe_dump({**top, **others}) if top or others else "seed_everything: 1\n")
        checks.check_config_files(["fit", "--config", str(path)])
        path.write_text(yaml.safe_dump({**top, **others, group: None}))
        with pytest.raises(ValueError) as err:
            checks.check_config_files(["fit", "--config", str(path)])
    assert str(err.value) == (f"--config={path}: {group}: is empty (YAML null); expected {group} options "
                              f"indented under it, or no {group}: line")
