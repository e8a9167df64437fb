"""FlaLayer: an fla-style layer (fla's forward signature and cache protocol) as a zoo mixer."""

import sys
import types

import pytest
import torch

from swar_bench.mechanisms import FlaLM, measure_state_bytes
from swar_bench.mechanisms.fla_layer import FlaLayer, import_class
from tests.mechanisms import fla_style_layers

LAYER = "tests.mechanisms.fla_style_layers.GatedLinearAttentionLike"


def _model():
    torch.manual_seed(0)
    model = FlaLM(layer=LAYER, layer_args={"num_heads": 2}, d_model=16).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return model


def test_carries_the_layers_cache_between_chunks():
    model = _model()
    x = torch.randint(0, 40, (2, 30))
    with torch.no_grad():
        full, full_state = model(x, model.init_state(2))
        state, outs = model.init_state(2), []
        for a, b in ((0, 7), (7, 8), (8, 30)):
            logits, state = model(x[:, a:b], state)
            outs.append(logits)
        # without the carried cache the later chunks differ
        cold, _ = model(x[:, 7:], model.init_state(2))
    assert (torch.cat(outs, 1) - full).abs().max().item() <= 1e-5
    assert (cold - full[:, 7:]).abs().max().item() > 1e-3
    for layer_state, chunked in zip(full_state, state):
        assert set(layer_state) == {"recurrent_state", "attn_state", "conv_state", "ffn_state"}
        assert (layer_state["recurrent_state"] - chunked["recurrent_state"]).abs().max() <= 1e-5
        assert (layer_state["conv_state"][0] - chunked["conv_state"][0]).abs().max() <= 1e-5


def test_state_is_the_cache_dict_and_its_bytes_are_measured():
    model = _model()
    # per layer: recurrent [B, 2, 8, 8] + conv [B, 16, 3], float32
    per_row = 2 * (2 * 8 * 8 + 16 * 3) * 4
    for B in (1, 3):
        assert model.state_bytes(B) == measure_state_bytes(model.init_state(B)) == B * per_row
    with torch.no_grad():
        _, state = model(torch.randint(0, 40, (3, 20)), model.init_state(3))
    assert measure_state_bytes(state) == 3 * per_row
    assert model.state_bytes(2, dtype=torch.bfloat16) == measure_state_bytes(
        model.init_state(2, dtype=torch.bfloat16)
    )
    detached = model.detach_state(state)
    assert all(not t.requires_grad for layer in detached for t in layer["conv_state"])


def test_gradients_flow_through_the_carried_cache():
    model = _model().train()
    x = torch.randint(0, 40, (2, 12))
    _, state = model(x[:, :6], model.init_state(2))
    logits, _ = model(x[:, 6:], state)
    logits.sum().backward()
    assert model.blocks[0].mixer.layer.g_proj.weight.grad.abs().sum() > 0


def test_a_growing_cache_is_refused():
    model = FlaLM(layer="tests.mechanisms.fla_style_layers.KeyValueCacheLike", d_model=16)
    with pytest.raises(ValueError, match="cache grows with the tokens"):
        model.init_state(1)


def test_fla_layers_without_the_package_or_off_cuda_are_one_line_errors(monkeypatch):
    if importlib_available("fla.layers"):
        pytest.skip("flash-linear-attention is installed")
    with pytest.raises(
        ValueError,
        match=r"cannot import layer 'fla.layers.GatedDeltaNet': No module named 'fla.layers'.*pip install",
    ):
        FlaLM(layer="fla.layers.GatedDeltaNet")
    # an fla.* class runs Triton kernels: on CPU it is refused before it runs
    fake = types.ModuleType("fla.fake_layers")
    fake.GatedLinearAttentionLike = fla_style_layers.GatedLinearAttentionLike
    monkeypatch.setitem(sys.modules, "fla.fake_layers", fake)
    model = FlaLM(layer="fla.fake_layers.GatedLinearAttentionLike", d_model=16)
    with pytest.raises(
        ValueError, match="runs fla's Triton kernels, which need a CUDA device; got cpu"
    ):
        model.init_state(1)
    with pytest.raises(ValueError, match="need a CUDA device"):
        model(torch.zeros(1, 4, dtype=torch.long))


def test_bad_class_paths():
    with pytest.raises(ValueError, match="class path like"):
        import_class("GatedDeltaNet")
    with pytest.raises(ValueError, match="has no class 'Nope'"):
        import_class("torch.nn.Nope")
    with pytest.raises(ValueError, match="not a torch.nn.Module class"):
        import_class("torch.zeros")
    with pytest.raises(ValueError, match="cannot build"):
        FlaLayer(16, LAYER, {"no_such_arg": 1})


def importlib_available(name):
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_the_cuda_config_fails_in_one_line_without_flash_linear_attention(capsys, monkeypatch):
    if importlib_available("fla.layers"):
        pytest.skip("flash-linear-attention is installed")
    from pathlib import Path

    import torch

    from swar_bench.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    args = ["fit", "--config", "configs/quickstart.yaml", "--config", "configs/fla_layer_cuda.yaml"]

    def last_error_line(argv):
        try:
            code = main(argv)
        except SystemExit as done:
            code = done.code
        assert code == 2
        return capsys.readouterr().err.strip().splitlines()[-1]

    # the missing package is named whatever the accelerator (here the CPU, which gets that far)
    assert last_error_line([*args, "--trainer.accelerator=cpu"]) == (
        "swar-bench: error: cannot import layer 'fla.layers.GatedDeltaNet': No module named "
        "'fla.layers' (fla's layers are in the flash-linear-attention package: "
        "pip install 'swar_bench[fla]')"
    )
    if not torch.cuda.is_available():  # the config's own accelerator=gpu is refused first, in one line
        line = last_error_line(args)
        assert line.startswith("swar-bench: error: --config=") and line.endswith(
            "configs/fla_layer_cuda.yaml: trainer.accelerator=gpu: no CUDA device is available on this machine; "
            "expected cpu or auto")
