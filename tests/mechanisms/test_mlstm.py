"""mLSTM: the cell against the xLSTM paper's equations in float64 (extreme gates included) and the
authors' native PyTorch backends (mlstm-kernels), with initial and final state."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid

from swar_bench.mechanisms.ops.mlstm import chunk_mlstm, mlstm, recurrent_mlstm
from tests.mechanisms import float64_recurrences as f64


def _inputs(B=2, T=40, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, B, T, H, K, generator=gen)
    v = torch.randn(B, T, H, V, generator=gen)
    f_pre = torch.randn(B, T, H, generator=gen) + 3.0
    i_pre = 3.0 * torch.randn(B, T, H, generator=gen)
    state = (
        torch.randn(B, H, K, V, generator=gen),
        torch.randn(B, H, K, generator=gen),
        torch.randn(B, H, generator=gen),
    )
    return q, k, v, f_pre, i_pre, state


def _unstabilised(state):
    C, n, m = (s.double() for s in state)
    return C * m.exp()[..., None, None], n * m.exp()[..., None]


@pytest.mark.parametrize("T", [1, 17, 40])
def test_both_forms_follow_the_paper_equations_with_initial_and_final_state(T):
    q, k, v, f_pre, i_pre, s0 = _inputs(T=T)
    o64, (C64, n64) = f64.mlstm(q, k, v, logsigmoid(f_pre), i_pre, 8**-0.5, s0)
    for o, s in (
        recurrent_mlstm(q, k, v, logsigmoid(f_pre), i_pre, initial_state=s0, eps=0.0),
        chunk_mlstm(q, k, v, logsigmoid(f_pre), i_pre, initial_state=s0, eps=0.0, chunk_size=16),
    ):
        assert f64.relative_error(o, o64) <= 1e-5
        C, n = _unstabilised(s)
        assert f64.relative_error(C, C64) <= 1e-5 and f64.relative_error(n, n64) <= 1e-5


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    resets=st.lists(st.integers(0, 47), max_size=4),
    burst=st.sampled_from([0.0, 20.0, 60.0]),
    decay_burst=st.sampled_from([0.0, 30.0, 2000.0]),
    chunk_size=st.sampled_from([8, 16, 64]),
)
def test_chunk_form_under_extreme_gates_is_within_2e5_of_float64(
    seed, resets, burst, decay_burst, chunk_size
):
    """log f = -inf (forget everything), log f bursts to -2000, input-gate bursts ĩ up to +60
    (i = e^60: only the stabiliser keeps float32 finite). Queries, keys and the initial normaliser
    are taken positive so that ``n^T q`` does not cancel: a cancelling normaliser amplifies float32
    rounding in any form (the recurrence too), which is not what this test is about."""
    q, k, v, f_pre, i_pre, (C0, n0, m0) = _inputs(T=48, seed=seed)
    q, k, s0 = q.abs(), k.abs(), (C0, n0.abs(), m0)
    log_f = logsigmoid(f_pre)
    log_f[:, 20:23] -= decay_burst
    log_f[:, resets] = float("-inf")
    i_pre[:, 30:32] += burst
    o64, (C64, n64) = f64.mlstm(q, k, v, log_f, i_pre, 8**-0.5, s0)
    o, s = chunk_mlstm(q, k, v, log_f, i_pre, initial_state=s0, eps=0.0, chunk_size=chunk_size)
    assert all(torch.isfinite(x).all() for x in (o, *s))
    assert f64.relative_error(o, o64) <= 2e-5
    C, n = _unstabilised(s)
    assert f64.relative_error(C, C64) <= 2e-5 and f64.relative_error(n, n64) <= 2e-5


@pytest.mark.parametrize("form", ["recurrent", "chunkwise"])
def test_matches_the_authors_native_torch_backends(form):
    """mlstm-kernels' native PyTorch backends: [B, H, T, K] layout, f given as its pre-activation
    (they apply logsigmoid), m as [B, H, 1], eps in the stabilised scale as here."""
    if form == "recurrent":
        native = pytest.importorskip("mlstm_kernels.torch.recurrent.native_sequence")
        fn, ours, kw = native.mlstm_recurrent_sequence__native_fw, recurrent_mlstm, {}
    else:
        native = pytest.importorskip("mlstm_kernels.torch.chunkwise.native.fwbw")
        fn, ours, kw = native.mlstm_chunkwise__native_autograd, chunk_mlstm, {"chunk_size": 16}
    q, k, v, f_pre, i_pre, s0 = _inputs(T=64)
    t = lambda x: x.transpose(1, 2)
    h, (C, n, m) = fn(
        t(q), t(k), t(v), t(i_pre), t(f_pre),
        c_initial=s0[0], n_initial=s0[1], m_initial=s0[2][..., None],
        return_last_states=True, **kw,
    )  # fmt: skip
    o, s = ours(q, k, v, logsigmoid(f_pre), i_pre, initial_state=s0, **kw)
    assert f64.relative_error(o, t(h).double()) <= 1e-5
    for mine, theirs in zip(s, (C, n, m.squeeze(-1))):
        assert (mine - theirs).abs().max().item() <= 1e-5 * max(1.0, theirs.abs().max().item())


def test_dispatch_and_shapes():
    q, k, v, f_pre, i_pre, s0 = _inputs(T=20)
    a, _ = mlstm(q, k, v, logsigmoid(f_pre), i_pre, initial_state=s0, mode="chunk")
    b, _ = mlstm(q, k, v, logsigmoid(f_pre), i_pre, initial_state=s0, mode="recurrent")
    assert f64.relative_error(a, b.double()) <= 1e-5
    with pytest.raises(ValueError, match="i_pre"):
        recurrent_mlstm(q, k, v, f_pre, i_pre[..., :1])
