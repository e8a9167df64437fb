"""RWKV-7: the DPLR delta rule against fla's naive reference and a float64 recurrence (extreme
gates included), and the layer's size next to Gated DeltaNet."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms.ops.dplr_delta_rule import (
    _StateScan,
    _UnitLowerInverse,
    chunk_dplr_delta_rule,
    dplr_delta_rule,
    recurrent_dplr_delta_rule,
)
from tests.mechanisms import float64_recurrences as f64

fla_dplr = pytest.importorskip("fla.ops.generalized_delta_rule.dplr.naive")


def _inputs(B=2, T=40, H=2, K=8, V=6, seed=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, B, T, H, K, generator=gen)
    v = torch.randn(B, T, H, V, generator=gen)
    kappa = normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    a, b = -kappa, kappa * torch.rand(B, T, H, K, generator=gen)  # RWKV-7: a = -κ̂, b = κ̂ iclr
    gk = logsigmoid(torch.randn(B, T, H, K, generator=gen) + 2.0)
    s0 = torch.randn(B, H, K, V, generator=gen)
    return tuple(x.to(dtype) for x in (q, k, v, a, b, gk, s0))


@pytest.mark.parametrize("T", [1, 17, 40])
@pytest.mark.parametrize("chunk_size", [8, 16])
def test_dplr_matches_fla_naive_with_initial_and_final_state(T, chunk_size):
    q, k, v, a, b, gk, s0 = _inputs(T=T)
    t = lambda x: x.transpose(1, 2)  # fla naive takes [B, H, T, K]
    ref_o, ref_s = fla_dplr.dplr_recurrence(
        t(q), t(k), t(v), t(a), t(b), t(gk), initial_state=s0.clone()
    )
    for o, s in (
        recurrent_dplr_delta_rule(q, k, v, a, b, gk, initial_state=s0),
        chunk_dplr_delta_rule(q, k, v, a, b, gk, initial_state=s0, chunk_size=chunk_size),
    ):
        assert (o - t(ref_o)).abs().max().item() <= 1e-5
        assert (s - ref_s).abs().max().item() <= 1e-5


def test_rwkv7_scale_one_and_dispatch():
    q, k, v, a, b, gk, s0 = _inputs(T=20)
    o64, s64 = f64.dplr(q, k, v, a, b, gk, 1.0, s0)
    for mode in ("chunk", "recurrent"):
        o, s = dplr_delta_rule(
            q, k, v, a, b, gk, scale=1.0, initial_state=s0, mode=mode, backend="torch"
        )
        assert (o.double() - o64).abs().max().item() <= 1e-5
        assert (s.double() - s64).abs().max().item() <= 1e-5
    with pytest.raises(ValueError, match="gk"):
        recurrent_dplr_delta_rule(q, k, v, a, b, gk[..., :3])


def _assert_chunk_form_within_2e5_of_float64(inputs, chunk_size, seed=0):
    """Output, final state and the gradient of every input of the chunk form (scale 1) within
    2e-5 relative of the float64 recurrence, for a fixed random linear function of both."""
    v, s0 = inputs[2], inputs[6]
    gen = torch.Generator().manual_seed(seed)
    w_o, w_s = torch.randn(v.shape, generator=gen), torch.randn(s0.shape, generator=gen)
    ref = [x.double().requires_grad_() for x in inputs]
    o64, s64 = f64.dplr(*ref[:6], 1.0, ref[6])
    ((o64 * w_o).sum() + (s64 * w_s).sum()).backward()
    leaves = [x.clone().requires_grad_() for x in inputs]
    o, s = chunk_dplr_delta_rule(
        *leaves[:6], scale=1.0, initial_state=leaves[6], chunk_size=chunk_size
    )
    ((o * w_o).sum() + (s * w_s).sum()).backward()
    f64.assert_matches_float64(o, s, o64, s64)
    for name, leaf, r in zip(["q", "k", "v", "a", "b", "gk", "s0"], leaves, ref):
        assert torch.isfinite(leaf.grad).all(), name
        assert f64.relative_error(leaf.grad, r.grad) <= f64.EXTREME_GATES_TOL, name


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    resets=st.lists(st.tuples(st.integers(0, 47), st.integers(0, 7)), max_size=6),
    burst=st.sampled_from([0.0, 30.0, 200.0]),
    chunk_size=st.sampled_from([1, 3, 4, 16, 17]),
)
def test_chunk_form_under_extreme_gates_is_within_2e5_of_float64(seed, resets, burst, chunk_size):
    """-inf log decays (a channel reset) and bursts of strong decay (-burst over a run of tokens):
    output, final state and the gradient of every input within 2e-5 relative of the float64
    recurrence, at chunk lengths that are and are not powers of two."""
    q, k, v, a, b, gk, s0 = _inputs(T=48, seed=seed)
    gk[:, 10:14] -= burst
    for t, c in resets:
        gk[:, t, :, c] = float("-inf")
    _assert_chunk_form_within_2e5_of_float64((q, k, v, a, b, gk, s0), chunk_size, seed)


def _repeated_keys(iclr, jitter, log_decay, B=2, T=48, H=2, K=16, seed=0):
    """Inputs whose removal key ``kappa`` is nearly the same at every token (a repeated token):
    ``a = -kappa``, ``b = kappa * iclr``, so the in-chunk ``A_ab`` has entries near ``-iclr``."""
    q, k, v, _, _, _, s0 = _inputs(B=B, T=T, H=H, K=K, V=K, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    shared = torch.randn(B, 1, H, K, generator=gen)
    kappa = normalize(shared + jitter * torch.randn(B, T, H, K, generator=gen), dim=-1)
    return q, k, v, -kappa, kappa * iclr, torch.full(q.shape, log_decay), s0


def test_repeated_keys_with_iclr_one_keep_float32_precision():
    """kappa shared by every token (jitter 0.01), iclr 1, log decay 0, K = 16, chunk 16: with the
    in-chunk inverse by repeated squaring ((I + A)(I + A^2)...) the output was 2.6e-5, the state
    4.3e-5 and the gradients up to 4.2e-4 relative from float64 (the powers of A cancel); by
    substitution all within 8e-7."""
    inputs = _repeated_keys(iclr=1.0, jitter=0.01, log_decay=0.0)
    _assert_chunk_form_within_2e5_of_float64(inputs, chunk_size=16)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    iclr=st.floats(0.9, 1.0),
    jitter=st.sampled_from([0.0, 1e-3, 1e-2, 0.1]),
    log_decay=st.sampled_from([0.0, -1e-3, -0.05]),
    chunk_size=st.sampled_from([8, 16, 32]),
)
def test_chunk_form_with_repeated_keys_is_within_2e5_of_float64(
    seed, iclr, jitter, log_decay, chunk_size
):
    """The kind: nearly the same removal key along a chunk, with iclr near 1 and gates near 1 (an
    ill-conditioned in-chunk system, entries of A_ab near -1)."""
    inputs = _repeated_keys(iclr, jitter, log_decay, seed=seed)
    _assert_chunk_form_within_2e5_of_float64(inputs, chunk_size, seed)


@pytest.mark.parametrize("C", [1, 2, 3, 8, 16, 17])
def test_in_chunk_inverse_and_its_gradient(C):
    """``(I - A)^{-1}`` of a strictly lower-triangular ``A`` equals ``torch.linalg.inv`` for any
    chunk length, also with entries near -1 (float32, 1e-6 relative), and its hand-written
    backward passes gradcheck."""
    gen = torch.Generator().manual_seed(C)
    A = (torch.randn(2, C, C, generator=gen, dtype=torch.float64) / C**0.5).tril(-1)
    eye = torch.eye(C, dtype=torch.float64)
    assert torch.allclose(_UnitLowerInverse.apply(A), torch.linalg.inv(eye - A), atol=1e-12)
    near_ones = (0.01 * torch.randn(2, C, C, generator=gen, dtype=torch.float64) - 0.999).tril(-1)
    exact = torch.linalg.inv(eye - near_ones)
    assert f64.relative_error(_UnitLowerInverse.apply(near_ones.float()), exact) <= 1e-6
    # the gradient flows into the strict lower triangle only, as behind the scores' mask
    strict = torch.ones(C, C, dtype=torch.bool).tril(-1)
    A = A.requires_grad_()
    assert torch.autograd.gradcheck(lambda x: _UnitLowerInverse.apply(x * strict), (A,))


def test_state_scan_and_its_gradient():
    """The chunk-to-chunk scan ``S_{i+1} = (diag(d_i) + M_i) S_i + W_i`` against a loop, and its
    hand-written backward (the entering states and the final state) by gradcheck."""
    gen = torch.Generator().manual_seed(0)
    N, n, K, V = 2, 5, 3, 4
    M, W = torch.randn(N, n, K, K, generator=gen), torch.randn(N, n, K, V, generator=gen)
    d, S0 = torch.rand(N, n, K, generator=gen), torch.randn(N, K, V, generator=gen)
    M, d, W, S0 = (x.double().requires_grad_() for x in (M, d, W, S0))
    entering, final = _StateScan.apply(M, d, W, S0)
    S = S0
    for i in range(n):
        assert torch.allclose(entering[:, i], S)
        S = (torch.diag_embed(d[:, i]) + M[:, i]) @ S + W[:, i]
    assert torch.allclose(final, S)
    assert torch.autograd.gradcheck(_StateScan.apply, (M, d, W, S0))


def test_chunk_gradients_match_recurrent():
    q, k, v, a, b, gk, s0 = _inputs(T=24)
    grads = []
    for fn in (recurrent_dplr_delta_rule, chunk_dplr_delta_rule):
        leaves = [x.clone().requires_grad_() for x in (q, v, gk, s0)]
        o, s = fn(leaves[0], k, leaves[1], a, b, leaves[2], initial_state=leaves[3])
        (o.square().sum() + s.sum()).backward()
        grads.append([x.grad for x in leaves])
    for g1, g2 in zip(*grads):
        assert (g1 - g2).abs().max().item() <= 1e-4


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_fla_triton_kernels_match_torch_path(mode):
    pytest.importorskip("triton")
    inputs = [x.cuda() for x in _inputs(T=128, K=32, V=32)]
    q, k, v, a, b, gk, s0 = (x.requires_grad_() for x in inputs)
    results = []
    for backend in ("torch", "fla"):
        o, s = dplr_delta_rule(
            q, k, v, a, b, gk, scale=1.0, initial_state=s0, mode=mode, backend=backend
        )
        grads = torch.autograd.grad(o.float().square().mean() + s.square().mean(), (q, v, gk))
        results.append((o.float(), s, *grads))
    for ref, got in zip(*results):
        assert (got - ref).abs().max().item() <= 2e-3 * max(1.0, ref.abs().max().item())
