"""A key given twice in one mapping of a file of options is refused with one line naming the file,
the key and both lines (fault: `fit --config` of `trainer: {max_steps: 5, max_steps: 7}` written
as a block trained 7 steps without a word, PyYAML keeping the last value; the referee's
`--config` did the same). Study files were already checked (``swar_bench.utils.yaml_keys``)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness import checks
from swar_bench.utils.yaml_keys import load_unique
from tests.harness.cli_lines import QUICKSTART, one_error_line

TAIL = "expected each key once (YAML would keep the last without a word)"
REPORTED = "trainer:\n  max_steps: 5\n  max_steps: 7\n"


@pytest.mark.parametrize("command", ["fit", "test", "demo"])
def test_the_reported_duplicate_key_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dup.yaml").write_text(REPORTED)
    if command == "demo":
        from swar_bench.demo import main as demo_main

        code, prog = demo_main(["--config", "dup.yaml"]), "swar-bench demo"
    else:
        from swar_bench.lightning_cli import main

        code, prog = main([command, "--config", QUICKSTART, "--config", "dup.yaml"]), "swar-bench"
    assert code == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"{prog}: error: --config=dup.yaml: key 'max_steps' appears twice (lines 2 and 3); {TAIL}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.yaml"]  # no run folder


def test_the_referees_config_refuses_a_duplicate_key(tmp_path, capsys, monkeypatch):
    from swar_bench.referee.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ref.yaml").write_text("seed: 1\nranges: [n32]\nseed: 2\n")
    assert main(["--config", "ref.yaml"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"swar-bench referee: error: --config='ref.yaml': key 'seed' appears twice (lines 1 and 3); {TAIL}")


def test_a_merge_key_is_not_a_duplicate():
    text = "base: &b\n  max_steps: 5\ntrainer:\n  <<: *b\n  max_steps: 7\n"
    assert load_unique(text) == yaml.safe_load(text) == {"base": {"max_steps": 5}, "trainer": {"max_steps": 7}}


KEYS = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
SCALARS = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text(alphabet="xyz", max_size=3))
MAPPINGS = st.recursive(st.dictionaries(KEYS, SCALARS, min_size=1, max_size=3),
                        lambda inner: st.dictionaries(KEYS, st.one_of(SCALARS, inner), min_size=1, max_size=3),
                        max_leaves=10)


def _pairs(mapping: dict) -> list[list]:
    """``mapping`` as [key, value] pairs (nested mappings too), so that a key can be given twice."""
    return [[k, _pairs(v) if isinstance(v, dict) else v] for k, v in mapping.items()]


def _emit(pairs: list[list], lines: list[str], marks: dict, path: tuple = (), indent: str = "") -> None:
    """Block-style YAML of ``pairs``; ``marks[(path, key)]``: the 1-based lines each key is on."""
    for key, value in pairs:
        marks.setdefault((path, key), []).append(len(lines) + 1)
        if isinstance(value, list):
            lines.append(f"{indent}{key}:")
            _emit(value, lines, marks, (*path, key), indent + "  ")
        else:
            lines.append(f"{indent}{key}: {json.dumps(value)}")


def _mappings(pairs: list[list], path: tuple = ()) -> list[tuple[tuple, list]]:
    found = [(path, pairs)]
    for key, value in pairs:
        if isinstance(value, list):
            found += _mappings(value, (*path, key))
    return found


@settings(max_examples=60, deadline=None)
@given(mapping=MAPPINGS, data=st.data(), flag=st.sampled_from(["--config", "--trainer", "--data", "--model"]),
       value=SCALARS)
def test_any_key_given_twice_at_any_depth_is_named_with_both_lines(mapping, data, flag, value):
    """The kind: any mapping of options, a key of any of its (nested) mappings given again anywhere
    in that mapping, in any file option: one line naming the option, the file, the key and the
    lines of its two settings; the file without the repeat passes."""
    pairs = _pairs(mapping)
    path, inner = data.draw(st.sampled_from(_mappings(pairs)), label="the mapping that gets a key twice")
    key = data.draw(st.sampled_from([k for k, _ in inner]), label="key")
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "c.yaml"
        lines: list[str] = []
        _emit(pairs, lines, {})
        file.write_text("\n".join(lines) + "\n")
        checks.check_config_files(["fit", flag, str(file)])  # each key once: fine
        inner.insert(data.draw(st.integers(0, len(inner)), label="position"), [key, value])
        lines, marks = [], {}
        _emit(pairs, lines, marks)
        file.write_text("\n".join(lines) + "\n")
        with pytest.raises(ValueError) as err:
            checks.check_config_files(["fit", flag, str(file)])
    first, second = marks[(path, key)]
    assert str(err.value) == f"{flag}={file}: key {key!r} appears twice (lines {first} and {second}); {TAIL}"
