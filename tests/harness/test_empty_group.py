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


@pytest.mark.parametrize(("text", "line"), [
    ("trainer: 5\n", "trainer: 5 is a YAML int"),
    ("trainer: [1, 2]\n", "trainer: [1, 2] is a YAML list"),
    ("model: [1]\n", "model: [1] is a YAML list"),
    ("trainer: abc\n", "trainer: abc names no file"),
])
def test_the_reported_sections_of_another_type_are_named(tmp_path, capsys, monkeypatch, text, line):
    """Fault: `trainer: 5` (or a list) in a second --config was taken, silently dropping the first
    file's trainer settings (the run went elsewhere, without its max_time); `model: [1]` blamed a
    missing mechanism; `trainer: abc` said jsonargparse's `Unable to load config 'abc'`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(text)
    assert main(["fit", "--config", QUICKSTART, "--config", "t.yaml"]) == 2
    group = text.split(":")[0]
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --config=t.yaml: {line}; expected a mapping of {group} options indented under "
        f"{group}: (or the path of a YAML file of them)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]


NOT_MAPPINGS = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                         st.lists(st.integers(), max_size=3), st.text("xyz", min_size=1, max_size=5))


@settings(max_examples=40, deadline=None)
@given(group=st.sampled_from(sorted(GROUPS)), value=NOT_MAPPINGS, as_file=st.booleans())
def test_any_group_given_no_mapping_is_named_unless_it_names_a_file(group, value, as_file):
    """The kind: any option group given a value that is no mapping (a number, a boolean, a list, a
    word): one line naming it and what it holds; a word naming a file (beside the config file) is a
    file of the group's options and passes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        if as_file and isinstance(value, str):
            (Path(folder) / value).write_text("{}\n")
        path.write_text(yaml.safe_dump({group: value}))
        if as_file and isinstance(value, str):
            checks.check_config_files(["fit", "--config", str(path)])
            return
        with pytest.raises(ValueError) as err:
            checks.check_config_files(["fit", "--config", str(path)])
    assert str(err.value).startswith(f"--config={path}: {group}: "), err.value
    assert str(err.value).endswith(f"; expected a mapping of {group} options indented under {group}: "
                                   "(or the path of a YAML file of them)"), err.value
