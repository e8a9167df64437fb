"""scripts/same_numerics.py: the exact comparison behind a study's ``compatible_code``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "same_numerics.py"


def _module():
    spec = importlib.util.spec_from_file_location("same_numerics", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(path: Path, weights: dict[str, torch.Tensor], step: int = 30) -> Path:
    torch.save({"state_dict": weights, "global_step": step}, path)
    return path


def test_identical_checkpoints_compare_equal_and_any_difference_is_named(tmp_path):
    same = _module()._compare
    w = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.ones(4)}
    a = _save(tmp_path / "a.ckpt", w)
    assert same(a, _save(tmp_path / "b.ckpt", {k: v.clone() for k, v in w.items()})) is None
    # one ulp in one weight is a difference
    nudged = {k: v.clone() for k, v in w.items()}
    nudged["b"][2] = torch.nextafter(nudged["b"][2], torch.tensor(2.0))
    assert same(a, _save(tmp_path / "c.ckpt", nudged)).startswith("b differs")
    assert "different parameters" in same(a, _save(tmp_path / "d.ckpt", {"a": w["a"]}))
    assert same(a, _save(tmp_path / "e.ckpt", w, step=29)) == "global_step 30 vs 29"


def test_unknown_mechanism_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        _module().main(["HEAD", "--mechanisms", "NoSuch"])
    assert stop.value.code == 2
    assert "--mechanisms='NoSuch': expected names from" in capsys.readouterr().err
