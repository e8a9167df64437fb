"""``data generate`` into a folder made with other ``--params``: one line saying what the folder
was made with and the ``--params`` that fit it, whether or not ``--params`` was given."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks.passkey_swar import PasskeySwarParams
from swar_bench.tasks.store.params_file import check_folder_params, write_params


def _folder(tmp_path, params):
    """A folder that looks generated with ``params`` (a split file and the record)."""
    (tmp_path / "n32").mkdir(parents=True, exist_ok=True)
    (tmp_path / "n32" / "test-00000-of-00001.parquet").write_bytes(b"")
    write_params(tmp_path, params)
    return tmp_path


def test_reported_no_params_into_a_w8_folder(tmp_path, capsys):
    from swar_bench.tasks.cli import main

    out = tmp_path / "g1"
    argv = ["generate", "--out", str(out), "--configs", "n32", "--splits", "test", "--num-examples", "5"]
    assert main([*argv, "--params", '{"w": 8}']) == 0
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"swar-bench data generate: error: {out} holds data generated with w=8 (recorded in {out / 'params.json'}), "
        "not the release's w=16 (no --params given): one folder holds one parameter set; "
        """expected --params '{"w": 8}' for this folder, or another --out\n"""
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(w=st.sampled_from([2, 4, 8, 32]), other=st.sampled_from([2, 4, 8, 16, 32]), passed=st.booleans())
def test_the_expected_params_are_the_folders(tmp_path_factory, w, other, passed):
    """Any folder made with ``w``, written with another ``w``: the line expects exactly the
    folder's ``--params``, which pass the check, and says whether ``--params`` was given."""
    if w == other:
        return
    folder = _folder(tmp_path_factory.mktemp("data"), PasskeySwarParams(w=w))
    with pytest.raises(ValueError) as err:
        check_folder_params(folder, PasskeySwarParams(w=other), given=passed)
    line = str(err.value)
    assert "\n" not in line
    assert ("(no --params given)" in line) == (not passed)
    expected = line.split("expected --params '")[1].split("'")[0]
    check_folder_params(folder, PasskeySwarParams(**json.loads(expected)), given=True)  # what it says works
