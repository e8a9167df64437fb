"""A key given twice in one JSON object is refused, wherever the commands read JSON a user writes
(fault: `data generate --params '{"w": 8, "w": 9}'` wrote a folder with w=9; a params.json with two
`w` made `data verify` report misleading per-example failures; `check-mechanism GRU --init_args
'{"n_layers": 1, "n_layers": 2}'` built n_layers=2; a referee result with two "schema" keys was
read). YAML files were already refused the same way (``swar_bench.utils.yaml_keys``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.yaml_keys import DuplicateKey, json_unique
from tests.test_repeated_options import _error_lines

TAIL = "expected each key once (JSON would keep the last without a word)"


def test_the_reported_params_and_init_args_are_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = _error_lines(capsys, ["data", "generate", "--params", '{"w": 8, "w": 9}', "--out", "g",
                                      "--configs", "n32", "--splits", "test", "--num-examples", "5"])
    assert (code, err) == (2, [(f"""swar-bench data generate: error: --params='{{"w": 8, "w": 9}}': key 'w' """
                               f"appears twice; {TAIL}")])
    code, err = _error_lines(capsys, ["check-mechanism", "GRU", "--init_args", '{"n_layers": 1, "n_layers": 2}'])
    assert code == 2 and err == [(f"""swar-bench check-mechanism: error: --init_args={{"n_layers": 1, "n_layers": 2}}: """
                                 f"key 'n_layers' appears twice; {TAIL}")], err
    assert list(tmp_path.iterdir()) == []


def test_a_params_file_and_a_referee_result_with_a_key_twice_are_named(tmp_path):
    from swar_bench.referee.report import read_json
    from swar_bench.tasks.store.errors import DataSourceError
    from swar_bench.tasks.store.params_file import read_params

    (tmp_path / "params.json").write_text('{"w": 16, "w": 8}')
    with pytest.raises(DataSourceError) as err:
        read_params(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'params.json'}: key 'w' appears twice; ")
    (tmp_path / "r.json").write_text('{"schema": 1, "schema": 2}')
    with pytest.raises(ValueError) as err:
        read_json(tmp_path / "r.json")
    assert str(err.value) == f"{tmp_path / 'r.json'}: key 'schema' appears twice; {TAIL}; expected a referee result JSON"


VALUES = st.recursive(st.one_of(st.integers(-9, 9), st.booleans(), st.none(), st.text("ab", max_size=3)),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)),
                      max_leaves=8)


def _objects(value, path=()):
    """Paths to every JSON object inside ``value``."""
    found = [path] if isinstance(value, dict) else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, inner in items:
        found += _objects(inner, (*path, key))
    return found


def _dumps(value, twice=None, path=()) -> str:
    """JSON of ``value``; the object at path ``twice[0]`` gets its key ``twice[1]`` a second time."""
    if isinstance(value, dict):
        parts = [f"{json.dumps(k)}: {_dumps(v, twice, (*path, k))}" for k, v in value.items()]
        if twice is not None and twice[0] == path:
            parts.append(f"{json.dumps(twice[1])}: 0")
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps(v, twice, (*path, i)) for i, v in enumerate(value)) + "]"
    return json.dumps(value)


@settings(max_examples=100, deadline=None)
@given(value=st.dictionaries(st.text("abc", min_size=1, max_size=3), VALUES, min_size=1, max_size=3), data=st.data())
def test_any_object_given_a_key_twice_is_refused_and_any_other_reads_as_json_loads(value, data):
    """The kind: any JSON value; a key repeated in any object at any depth is refused naming it; the
    text without the repeat reads exactly as ``json.loads`` reads it."""
    assert json_unique(_dumps(value)) == json.loads(_dumps(value))
    objects = [p for p in _objects(value) if _at(value, p)]
    path = data.draw(st.sampled_from(objects), label="object")
    key = data.draw(st.sampled_from(sorted(_at(value, path))), label="key")
    with pytest.raises(DuplicateKey) as err:
        json_unique(_dumps(value, (path, key)))
    assert str(err.value) == f"key {key!r} appears twice; {TAIL}"


def _at(value, path):
    for key in path:
        value = value[key]
    return value
