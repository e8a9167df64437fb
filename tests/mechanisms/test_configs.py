"""Every configs/mechanisms/*.yaml names a mechanism class whose init_args build it."""

import importlib
from pathlib import Path

import pytest
import yaml

from swar_bench.mechanisms import ContextMechanism
from swar_bench.mechanisms.zoo import ZOO

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "mechanisms").glob("*.yaml"))


def test_there_is_a_config_per_mechanism():
    import swar_bench.mechanisms as mech

    named = {
        yaml.safe_load(p.read_text())["model"]["mechanism"]["class_path"].rsplit(".", 1)[1]
        for p in CONFIGS
    }
    exported = {n for n in mech.__all__ if isinstance(getattr(mech, n), type) and n in EXPECTED}
    assert named == exported


EXPECTED = {entry.name for entry in ZOO}
"""The zoo table's mechanisms (swar_bench/mechanisms/zoo.py)."""


@pytest.mark.parametrize("entry", ZOO, ids=[entry.name for entry in ZOO])
def test_each_zoo_entry_names_a_config_of_its_class(entry):
    path = CONFIGS[0].parent / entry.config
    assert path.is_file(), path
    assert yaml.safe_load(path.read_text())["model"]["mechanism"]["class_path"] == f"swar_bench.mechanisms.{entry.name}"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_builds_its_mechanism(path):
    spec = yaml.safe_load(path.read_text())["model"]["mechanism"]
    module, name = spec["class_path"].rsplit(".", 1)
    model = getattr(importlib.import_module(module), name)(**spec.get("init_args", {}))
    assert isinstance(model, ContextMechanism)
    assert model.vocab_size == 40
