"""Chunk sizes: each config's chunk_size is its class's default (chosen by
benchmarks/bench_chunk_size.py, docs/BENCHMARKS.md), and a mechanism's outputs and gradients do
not depend on the chunk size beyond float32 rounding, at the frontier's shapes."""

import importlib
import inspect
from pathlib import Path

import pytest
import torch
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "mechanisms").glob("*.yaml"))
WITH_CHUNK = [p for p in CONFIGS if "chunk_size" in yaml.safe_load(p.read_text())["model"]["mechanism"].get("init_args", {})]
CHUNKED = {}  # class name -> init_args of its config (the plain one, not a fixed-decay variant)
for _path in CONFIGS:
    _spec = yaml.safe_load(_path.read_text())["model"]["mechanism"]
    if "chunk_size" in _spec.get("init_args", {}) and "_decay" not in _path.stem:
        CHUNKED[_spec["class_path"].rsplit(".", 1)[1]] = dict(_spec["init_args"])


def _cls(name):
    return getattr(importlib.import_module("swar_bench.mechanisms"), name)


@pytest.mark.parametrize("path", WITH_CHUNK, ids=[p.stem for p in WITH_CHUNK])
def test_a_config_chunk_size_is_its_class_default(path):
    spec = yaml.safe_load(path.read_text())["model"]["mechanism"]
    default = inspect.signature(_cls(spec["class_path"].rsplit(".", 1)[1])).parameters["chunk_size"].default
    assert spec["init_args"]["chunk_size"] == default


@pytest.mark.parametrize("name", sorted(CHUNKED))
@settings(max_examples=4, deadline=None)
@given(chunk=st.sampled_from([8, 16, 32, 64, 128]), T=st.integers(1, 150), seed=st.integers(0, 2**16))
@example(chunk=16, T=150, seed=0).via("the frontier's N=32 length against a chunk of 16")
def test_outputs_and_gradients_do_not_depend_on_the_chunk_size(name, chunk, T, seed):
    init = CHUNKED[name]
    torch.manual_seed(seed)
    x = torch.randint(0, init.get("vocab_size", 40), (2, T))
    out = []
    for c in (init["chunk_size"], chunk):
        torch.manual_seed(0)
        model = _cls(name)(**{**init, "chunk_size": c})
        logits, _ = model(x)
        loss = logits.square().mean()
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        out.append((logits, grads))
    (la, ga), (lb, gb) = out
    assert (la - lb).abs().max().item() <= 1e-5 * max(1.0, la.abs().max().item())
    assert (ga - gb).abs().max().item() <= 1e-4 * max(1e-3, ga.abs().max().item())
