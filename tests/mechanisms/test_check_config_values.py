"""`check-mechanism --config` refuses a mechanism entry of another type in one line, as `fit`
does (fault: `model: {mechanism: 5}` ended in `TypeError: argument of type 'int' is not
iterable`, `[GRU]` in an AttributeError, `init_args: 5` or `[1]` in a TypeError, all tracebacks;
duplicate keys were read, the last kept; a file of random bytes)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_repeated_options import _error_lines

REPORTED = [
    ("model: {mechanism: 5}\n", "model.mechanism=5: expected a zoo name"),
    ("model: {mechanism: [GRU]}\n", "model.mechanism=['GRU']: expected a zoo name"),
    ("model: {mechanism: {class_path: GRU, init_args: 5}}\n", "model.mechanism.init_args=5: expected a mapping"),
    ("class_path: swar_bench.mechanisms.GRU\ninit_args: [1]\n", "init_args=[1]: expected a mapping"),
    ("class_path: GRU\ninit_args:\n  d_model: 64\n  d_model: 32\n", "key 'd_model' appears twice (lines 3 and 4)"),
]


@pytest.mark.parametrize(("text", "words"), REPORTED, ids=[w.split(":")[0] for _, w in REPORTED])
def test_the_reported_entries_are_one_line(tmp_path, monkeypatch, capsys, text, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text(text)
    code, err = _error_lines(capsys, ["check-mechanism", "--config", "c.yaml"])
    assert code == 2 and len(err) == 1 and err[0].startswith("swar-bench check-mechanism: error: --config="), err
    assert words in err[0], err


OTHER = st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=OTHER, where=st.sampled_from(["mechanism", "class_path", "init_args"]), run_config=st.booleans())
def test_any_entry_of_another_type_is_one_line(tmp_path_factory, monkeypatch, capsys, value, where, run_config):
    """The kind: the mechanism, its class_path or its init_args given a number, a boolean or a list,
    in a run config or a class_path/init_args file: exit 2, one line naming the file, no traceback."""
    folder = tmp_path_factory.mktemp("c")
    monkeypatch.chdir(folder)
    entry = value if where == "mechanism" else {"class_path": "GRU", where: value}
    if where == "class_path":
        entry = {"class_path": value}
    content = {"model": {"mechanism": entry}} if run_config or where == "mechanism" else entry
    (folder / "c.yaml").write_text(yaml.safe_dump(content))
    code, err = _error_lines(capsys, ["check-mechanism", "--config", "c.yaml"])
    assert code == 2 and len(err) == 1 and err[0].startswith("swar-bench check-mechanism: error: --config="), err
