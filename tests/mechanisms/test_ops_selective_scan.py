"""Mamba's selective scan (S6): both forms against a float64 re-derivation of the authors'
``selective_scan_ref`` with initial and final state, under ordinary and extreme steps; the Mamba
layer against the authors' forward pass (``mamba_simple.Mamba``, slow path) on that reference."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms import Mamba
from swar_bench.mechanisms.ops.selective_scan import (
    chunk_selective_scan,
    recurrent_selective_scan,
    selective_scan,
)
from tests.mechanisms import float64_recurrences as ref


def _inputs(Bsz=2, T=50, D=6, N=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    u = torch.randn(Bsz, T, D, generator=gen)
    delta = torch.nn.functional.softplus(torch.randn(Bsz, T, D, generator=gen))
    A = -torch.rand(D, N, generator=gen) * 8
    B = torch.randn(Bsz, T, N, generator=gen)
    C = torch.randn(Bsz, T, N, generator=gen)
    D_skip = torch.randn(D, generator=gen)
    h0 = torch.randn(Bsz, D, N, generator=gen)
    return u, delta, A, B, C, D_skip, h0


def _authors_layout(u, delta, A, B, C, D_skip, h0):
    return ref.selective_scan(
        u.transpose(1, 2), delta.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2),
        D_skip, initial_state=h0,
    )


@pytest.mark.parametrize("T", [1, 17, 64])
@pytest.mark.parametrize("chunk_size", [1, 16, 64])
def test_both_forms_match_the_reference_with_initial_and_final_state(T, chunk_size):
    inputs = _inputs(T=T)
    ref_y, ref_h = _authors_layout(*inputs)
    for y, h in (
        recurrent_selective_scan(*inputs),
        chunk_selective_scan(*inputs, chunk_size=chunk_size),
        selective_scan(*inputs, mode="chunk", chunk_size=chunk_size),
    ):
        ref.assert_matches_float64(y, h, ref_y.transpose(1, 2), ref_h, tol=1e-6)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    T=st.integers(1, 70),
    chunk_size=st.sampled_from([4, 16, 32]),
    n_erased=st.integers(0, 3),
    n_bursts=st.integers(0, 6),
    burst=st.sampled_from([1e2, 1e4, 1e30]),
)
def test_chunk_form_holds_under_extreme_steps(seed, T, chunk_size, n_erased, n_bursts, burst):
    """Log decays ``delta * A`` of -inf (channels of A at -inf) and huge steps (``delta`` bursts,
    which also scale the write), among tiny steps: within 2e-5 relative of the float64
    recurrence, output and state."""
    u, _, A, B, C, D_skip, h0 = _inputs(Bsz=1, T=T, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    delta = torch.rand(u.shape, generator=gen) * 1e-3 + 1e-6
    flat = delta.view(-1)
    flat[torch.randint(0, flat.numel(), (n_bursts,), generator=gen)] = burst
    A = A.clone()
    A.view(-1)[torch.randint(0, A.numel(), (n_erased,), generator=gen)] = float("-inf")
    if burst == 1e30:  # keep the written values finite: a burst that large only erases
        u = u * (delta < 1e29)
    inputs = (u, delta, A, B, C, D_skip, h0)
    ref_y, ref_h = _authors_layout(*inputs)
    y, h = chunk_selective_scan(*inputs, chunk_size=chunk_size)
    ref.assert_matches_float64(y, h, ref_y.transpose(1, 2), ref_h)


def test_chunk_form_gradients_match_recurrent():
    inputs = _inputs(T=40)
    grads = []
    for fn, kw in ((recurrent_selective_scan, {}), (chunk_selective_scan, {"chunk_size": 16})):
        leaves = [t.clone().requires_grad_() for t in inputs]
        y, h = fn(*leaves, **kw)
        (y.square().sum() + h.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert (a - b).abs().max().item() <= 1e-4 * max(1.0, b.abs().max().item())


def test_bad_shapes_are_value_errors():
    u, delta, A, B, C, D_skip, h0 = _inputs(T=4)
    with pytest.raises(ValueError, match=r"A \[D, N\]"):
        recurrent_selective_scan(u, delta, A[:, :2], B, C, D_skip, h0)
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got 0"):
        chunk_selective_scan(u, delta, A, B, C, D_skip, h0, chunk_size=0)


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_mamba_layer_is_the_authors_forward_pass(mode):
    """``mamba_simple.Mamba.forward`` without the fused kernels: in_proj, causal conv1d with bias
    (left padding ``d_conv - 1``) + SiLU, x_proj, ``delta = W_dt dt`` with ``dt_bias`` and softplus
    inside the scan, ``A = -exp(A_log)``, ``z`` gate, out_proj."""
    torch.manual_seed(0)
    mixer = Mamba(d_model=16, d_state=4, expand=2, chunk_size=8, mode=mode).blocks[0].mixer
    for name, p in mixer.named_parameters():
        if name not in ("A_log", "dt_bias"):
            torch.nn.init.normal_(p, std=0.3)
    x = torch.randn(2, 21, 16)
    xs, z = mixer.in_proj(x).chunk(2, dim=-1)
    xs = torch.nn.functional.conv1d(
        xs.transpose(1, 2), mixer.conv.weight, mixer.conv_bias, padding=3, groups=32
    )[..., :21]
    xs = torch.nn.functional.silu(xs)  # [B, D, L]
    dt, b, c = mixer.x_proj(xs.transpose(1, 2)).split([1, 4, 4], dim=-1)
    out, last = ref.selective_scan(
        xs,
        (dt @ mixer.dt_proj_weight.t()).transpose(1, 2),
        -mixer.A_log.exp(),
        b.transpose(1, 2),
        c.transpose(1, 2),
        mixer.D,
        z=z.transpose(1, 2),
        delta_bias=mixer.dt_bias,
        delta_softplus=True,
    )
    expected = mixer.out_proj(out.transpose(1, 2).float())
    y, (_, h) = mixer(x, mixer.init_state(2))
    assert (y - expected).abs().max().item() <= 1e-5
    assert ref.relative_error(h, last) <= 1e-5
