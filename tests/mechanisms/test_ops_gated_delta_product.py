"""Gated DeltaProduct: both forms against fla's naive recurrence and a float64 recurrence, with
initial and final state, under ordinary and extreme gates."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms.ops.gated_delta_product import (
    chunk_gated_delta_product,
    gated_delta_product,
    recurrent_gated_delta_product,
)
from tests.mechanisms import float64_recurrences as ref

fla_gdp = pytest.importorskip("fla.ops.gated_delta_product.naive")

TOL = 1e-5


def _inputs(B=2, T=30, H=2, K=8, V=6, n_h=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = normalize(torch.randn(B, T * n_h, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T * n_h, H, V, generator=gen)
    g = logsigmoid(torch.randn(B, T, H, generator=gen) + 2.0)
    beta = torch.rand(B, T * n_h, H, generator=gen)
    s0 = torch.randn(B, H, K, V, generator=gen)
    return q, k, v, g, beta, s0


def _close(a, b, tol=TOL):
    assert a.shape == b.shape
    assert (a - b).abs().max().item() <= tol


@pytest.mark.parametrize("n_h", [1, 2, 3])
@pytest.mark.parametrize("T", [1, 17, 40])
def test_gated_delta_product_matches_fla_naive_with_initial_and_final_state(n_h, T):
    q, k, v, g, beta, s0 = _inputs(T=T, n_h=n_h)
    # fla's naive function has no default scale and returns the state it was given, updated
    ref_o, ref_s = fla_gdp.naive_recurrent_gated_delta_product(
        q, k, v, g, beta, scale=8**-0.5, initial_state=s0.clone(), num_householder=n_h
    )
    for o, s in (
        recurrent_gated_delta_product(q, k, v, g, beta, n_h, initial_state=s0),
        chunk_gated_delta_product(q, k, v, g, beta, n_h, initial_state=s0, chunk_size=16),
        gated_delta_product(q, k, v, g, beta, n_h, initial_state=s0, mode="chunk", backend="torch"),
    ):
        _close(o, ref_o)
        _close(s, ref_s)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    T=st.integers(1, 40),
    n_h=st.integers(1, 3),
    chunk_size=st.sampled_from([8, 16, 32]),
    n_erased=st.integers(*ref.EXTREME_GATES["n_erased"]),
    n_bursts=st.integers(*ref.EXTREME_GATES["n_bursts"]),
    burst=st.sampled_from(ref.EXTREME_GATES["burst"]),
)
def test_chunk_form_holds_under_extreme_gates(seed, T, n_h, chunk_size, n_erased, n_bursts, burst):
    """Log decays of -inf and large bursts among gates near 1: within 2e-5 relative of the
    float64 recurrence, output and state."""
    q, k, v, _, beta, s0 = _inputs(B=1, T=T, n_h=n_h, seed=seed)
    g = ref.extreme_log_decays(q.shape[:3], seed, n_erased, n_bursts, burst)
    ref_o, ref_s = ref.gated_delta_product(q, k, v, g, beta, n_h, 8**-0.5, s0)
    o, s = chunk_gated_delta_product(q, k, v, g, beta, n_h, initial_state=s0, chunk_size=chunk_size)
    ref.assert_matches_float64(o, s, ref_o, ref_s)


def test_bad_shapes_and_step_counts_are_value_errors():
    q, k, v, g, beta, _ = _inputs(T=4, n_h=2)
    with pytest.raises(ValueError, match=r"k \[B, T\*n_h, H, K\].*n_h=3"):
        recurrent_gated_delta_product(q, k, v, g, beta, 3)
    with pytest.raises(ValueError, match="n_householder must be a positive integer, got 0"):
        chunk_gated_delta_product(q, k, v, g, beta, 0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_fla_triton_kernels_match_torch_path(mode):
    pytest.importorskip("triton")
    q, k, v, g, beta, s0 = (t.cuda() for t in _inputs(T=128, K=32, V=32))
    ref_o, ref_s = gated_delta_product(q, k, v, g, beta, 2, initial_state=s0, mode=mode, backend="torch")
    o, s = gated_delta_product(q, k, v, g, beta, 2, initial_state=s0, mode=mode, backend="fla")
    assert (o.float() - ref_o).abs().max().item() <= 2e-3
    assert (s - ref_s).abs().max().item() <= 2e-3
    grads = []
    for backend in ("torch", "fla"):
        q, v = leaves = [t.detach().clone().requires_grad_() for t in (q, v)]
        o, s = gated_delta_product(q, k, v, g, beta, 2, initial_state=s0, mode=mode, backend=backend)
        (o.float().square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert (a - b).abs().max().item() <= 2e-2 * max(1.0, b.abs().max().item())
