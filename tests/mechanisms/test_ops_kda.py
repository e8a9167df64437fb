"""Kimi Delta Attention: both forms against fla's naive recurrent and chunk references and a
float64 recurrence, with initial and final state, under ordinary and extreme gates."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms.ops.kda import chunk_kda, kda, recurrent_kda
from tests.mechanisms import float64_recurrences as ref

fla_kda = pytest.importorskip("fla.ops.kda.naive")

TOL = 1e-5


def _inputs(B=2, T=50, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = logsigmoid(torch.randn(B, T, H, K, generator=gen) + 2.0)
    beta = torch.rand(B, T, H, generator=gen)
    s0 = torch.randn(B, H, K, V, generator=gen)
    return q, k, v, g, beta, s0


def _close(a, b, tol=TOL):
    assert a.shape == b.shape
    assert (a - b).abs().max().item() <= tol


@pytest.mark.parametrize("T", [1, 17, 64])
@pytest.mark.parametrize("chunk_size", [16, 64])
def test_kda_matches_fla_naive_with_initial_and_final_state(T, chunk_size):
    q, k, v, g, beta, s0 = _inputs(T=T)
    ref_o, ref_s = fla_kda.naive_recurrent_kda(
        q, k, v, g, beta, initial_state=s0, output_final_state=True
    )
    for o, s in (
        recurrent_kda(q, k, v, g, beta, initial_state=s0),
        chunk_kda(q, k, v, g, beta, initial_state=s0, chunk_size=chunk_size),
        kda(q, k, v, g, beta, initial_state=s0, mode="chunk", chunk_size=chunk_size, backend="torch"),
    ):
        _close(o, ref_o)
        _close(s, ref_s)
    if T % chunk_size == 0:  # fla's naive chunk form needs whole chunks
        ref_o2, ref_s2 = fla_kda.naive_chunk_kda(
            q, k, v, g, beta, initial_state=s0, output_final_state=True, chunk_size=chunk_size
        )
        _close(ref_o2, ref_o)
        _close(ref_s2, ref_s)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    T=st.integers(1, 70),
    chunk_size=st.sampled_from([8, 16, 32]),
    n_erased=st.integers(*ref.EXTREME_GATES["n_erased"]),
    n_bursts=st.integers(*ref.EXTREME_GATES["n_bursts"]),
    burst=st.sampled_from(ref.EXTREME_GATES["burst"]),
)
def test_chunk_form_holds_under_extreme_gates(seed, T, chunk_size, n_erased, n_bursts, burst):
    """Per-channel log decays of -inf and large bursts among gates near 1: the WY chunk form
    stays within 2e-5 relative of the float64 recurrence, output and state."""
    q, k, v, _, beta, s0 = _inputs(B=1, T=T, H=2, K=8, V=4, seed=seed)
    g = ref.extreme_log_decays(q.shape, seed, n_erased, n_bursts, burst)
    ref_o, ref_s = ref.kda(q, k, v, g, beta, 8**-0.5, s0)
    o, s = chunk_kda(q, k, v, g, beta, initial_state=s0, chunk_size=chunk_size)
    ref.assert_matches_float64(o, s, ref_o, ref_s)


def test_chunk_form_gradients_match_recurrent():
    q, k, v, g, beta, s0 = _inputs(T=40)
    grads = []
    for fn, kw in ((recurrent_kda, {}), (chunk_kda, {"chunk_size": 16})):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, g, beta, s0)]
        o, s = fn(*leaves[:5], initial_state=leaves[5], **kw)
        (o.square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        _close(a, b, 1e-4)


def test_bad_shapes_are_value_errors():
    q, k, v, g, beta, _ = _inputs(T=4)
    with pytest.raises(ValueError, match=r"beta \[B, T, H\]"):
        recurrent_kda(q, k, v, g, beta[..., None])
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got 0"):
        chunk_kda(q, k, v, g, beta, chunk_size=0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_fla_triton_kernels_match_torch_path(mode):
    pytest.importorskip("triton")
    q, k, v, g, beta, s0 = (t.cuda() for t in _inputs(T=128, K=32, V=32))
    ref_o, ref_s = kda(q, k, v, g, beta, initial_state=s0, mode=mode, backend="torch")
    o, s = kda(q, k, v, g, beta, initial_state=s0, mode=mode, backend="fla")
    assert (o.float() - ref_o).abs().max().item() <= 2e-3
    assert (s - ref_s).abs().max().item() <= 2e-3
    grads = []
    for backend in ("torch", "fla"):
        q, v = leaves = [t.detach().clone().requires_grad_() for t in (q, v)]
        o, s = kda(q, k, v, g, beta, initial_state=s0, mode=mode, backend=backend)
        (o.float().square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert (a - b).abs().max().item() <= 2e-2 * max(1.0, b.abs().max().item())


def test_an_fla_without_the_op_falls_back_or_is_named(monkeypatch):
    """An fla install whose ``fla.ops.kda`` does not import: "auto" runs the torch forms,
    "fla" is a one-line error naming the module."""
    from swar_bench.mechanisms.ops import backend

    monkeypatch.setattr(backend, "fla_kernels_usable", lambda: True)
    monkeypatch.setattr(backend, "fla_module_importable", lambda module: module != "fla.ops.kda")

    class OnCuda:
        is_cuda = True

    assert backend.use_fla("auto", OnCuda(), "fla.ops.gla")
    assert not backend.use_fla("auto", OnCuda(), "fla.ops.kda")
    with pytest.raises(ValueError, match=r"backend='fla' needs a CUDA tensor and an importable fla\.ops\.kda"):
        backend.use_fla("fla", OnCuda(), "fla.ops.kda")
    q, k, v, g, beta, s0 = _inputs(T=4)
    with pytest.raises(ValueError, match="backend='fla' needs a CUDA tensor"):
        kda(q, k, v, g, beta, initial_state=s0, backend="fla")
