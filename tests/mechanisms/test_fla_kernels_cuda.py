"""On CUDA: every mechanism with a ``backend`` runs the same model on fla's Triton kernels as on
its torch forms (logits, carried state, gradients; chunk and recurrent modes), and FlaLM runs a
real ``fla.layers`` layer streaming-exact. Skipped without a CUDA device (scripts/gpu_check.sh
runs them with ``pytest -m cuda``)."""

import inspect

import pytest
import torch

import swar_bench.mechanisms as mech

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

WITH_BACKEND = [
    n for n in mech.MECHANISMS if "backend" in inspect.signature(getattr(mech, n)).parameters
]


def _run(name, backend, mode, x):
    torch.manual_seed(0)
    model = getattr(mech, name)(backend=backend, mode=mode).cuda()
    logits, state = model(x, model.init_state(x.shape[0]))
    logits.float().square().mean().backward()
    grads = [p.grad.float() for p in model.parameters() if p.grad is not None]
    return logits.float(), list(mech.iter_state_tensors(state)), grads


def _close(got, ref, tol=2e-3):
    assert torch.isfinite(got).all()
    assert (got - ref).abs().max().item() <= tol * max(1.0, ref.abs().max().item())


def test_every_mechanism_with_a_backend_is_covered():
    assert {"GatedDeltaNet", "Mamba2", "RWKV7"} <= set(WITH_BACKEND)


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
@pytest.mark.parametrize("name", WITH_BACKEND)
def test_fla_kernels_match_the_torch_forms_forward_and_backward(name, mode):
    pytest.importorskip("triton")
    x = torch.randint(0, 40, (2, 128 if mode == "chunk" else 12), device="cuda")
    ref_logits, ref_state, ref_grads = _run(name, "torch", mode, x)
    logits, state, grads = _run(name, "fla", mode, x)
    _close(logits, ref_logits)
    for got, ref in zip(state, ref_state):
        _close(got.float(), ref.float())
    assert len(grads) == len(ref_grads)
    for got, ref in zip(grads, ref_grads):
        _close(got, ref, tol=5e-3)


@pytest.mark.parametrize("name", WITH_BACKEND)
def test_fla_path_streams_exactly(name):
    pytest.importorskip("triton")
    torch.manual_seed(0)
    model = getattr(mech, name)(backend="fla").cuda().eval()
    x = torch.randint(0, 40, (2, 200), device="cuda")
    with torch.no_grad():
        full, _ = model(x, model.init_state(2))
        state, parts = model.init_state(2), []
        for a, b in ((0, 64), (64, 70), (70, 200)):
            logits, state = model(x[:, a:b], state)
            parts.append(logits)
    _close(torch.cat(parts, 1).float(), full.float())


def test_flalm_runs_a_real_fla_layer_streaming_exactly():
    pytest.importorskip("fla.layers")
    torch.manual_seed(0)
    model = (
        mech.FlaLM(
            layer="fla.layers.GatedDeltaNet",
            layer_args={"num_heads": 2, "head_dim": 32, "mode": "chunk"},
        )
        .cuda()
        .eval()
    )
    x = torch.randint(0, 40, (2, 128), device="cuda")
    with torch.no_grad():
        full, full_state = model(x, model.init_state(2))
        state, parts = model.init_state(2), []
        for a, b in ((0, 64), (64, 65), (65, 128)):
            logits, state = model(x[:, a:b], state)
            parts.append(logits)
    _close(torch.cat(parts, 1).float(), full.float())
    assert model.state_bytes(2) == mech.measure_state_bytes(full_state) > 0
