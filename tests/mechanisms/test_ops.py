"""The linear-attention ops against fla's pure-torch references, with initial and final state."""

import pytest
import torch
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms.ops import (
    chunk_gated_delta_rule,
    chunk_simple_gla,
    gated_delta_rule,
    recurrent_gated_delta_rule,
    recurrent_simple_gla,
    simple_gla,
)

fla_gdr = pytest.importorskip("fla.ops.gated_delta_rule.naive")
fla_gla = pytest.importorskip("fla.ops.simple_gla.naive")
fla_dr = pytest.importorskip("fla.ops.delta_rule.naive")

TOL = 1e-5


def _inputs(B=2, T=50, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = logsigmoid(torch.randn(B, T, H, generator=gen) + 2.0)
    beta = torch.rand(B, T, H, generator=gen)
    s0 = torch.randn(B, H, K, V, generator=gen)
    return q, k, v, g, beta, s0


def _close(a, b):
    assert a.shape == b.shape
    assert (a - b).abs().max().item() <= TOL


@pytest.mark.parametrize("T", [1, 17, 50, 64])
@pytest.mark.parametrize("chunk_size", [16, 64])
def test_gated_delta_rule_matches_fla_naive(T, chunk_size):
    q, k, v, g, beta, s0 = _inputs(T=T)
    ref_o, ref_s = fla_gdr.naive_recurrent_gated_delta_rule(
        q, k, v, beta, g, initial_state=s0, output_final_state=True
    )
    o, s = recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=s0)
    _close(o, ref_o)
    _close(s, ref_s)
    o, s = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=s0, chunk_size=chunk_size)
    _close(o, ref_o)
    _close(s, ref_s)
    ref_o2, ref_s2 = fla_gdr.naive_chunk_gated_delta_rule(
        q, k, v, g, beta, chunk_size=chunk_size, initial_state=s0, output_final_state=True
    )
    _close(o, ref_o2)
    _close(s, ref_s2)


def test_delta_rule_is_gated_delta_rule_without_decay():
    q, k, v, _, beta, s0 = _inputs(T=64)
    g = torch.zeros_like(beta)
    ref_o, ref_s = fla_dr.delta_rule_recurrence(
        q.transpose(1, 2),
        k.transpose(1, 2),
        v.transpose(1, 2),
        beta.transpose(1, 2),
        initial_state=s0,
    )
    for fn in (recurrent_gated_delta_rule, chunk_gated_delta_rule):
        o, s = fn(q, k, v, g, beta, initial_state=s0)
        _close(o, ref_o.transpose(1, 2))
        _close(s, ref_s)
    # fla's chunkwise delta rule starts from zeros and needs T % chunk_size == 0
    ref_o, ref_s = fla_dr.delta_rule_chunkwise(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), beta.transpose(1, 2), chunk_size=16
    )
    o, s = chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=16)
    _close(o, ref_o.transpose(1, 2))
    _close(s, ref_s)


@pytest.mark.parametrize("T", [1, 17, 64])
@pytest.mark.parametrize("chunk_size", [16, 64])
def test_simple_gla_matches_fla_naive(T, chunk_size):
    q, k, v, g, _, s0 = _inputs(T=T)
    ref_o, ref_s = fla_gla.naive_recurrent_simple_gla(
        q, k, v, g, initial_state=s0.clone(), output_final_state=True
    )
    o, s = recurrent_simple_gla(q, k, v, g, initial_state=s0)
    _close(o, ref_o)
    _close(s, ref_s)
    o, s = chunk_simple_gla(q, k, v, g, initial_state=s0, chunk_size=chunk_size)
    _close(o, ref_o)
    _close(s, ref_s)
    ref_o2, ref_s2 = fla_gla.naive_chunk_simple_gla(
        q, k, v, g, initial_state=s0.clone(), output_final_state=True, chunk_size=chunk_size
    )
    _close(o, ref_o2)
    _close(s, ref_s2)


def test_chunk_form_gradients_match_recurrent():
    q, k, v, g, beta, s0 = _inputs(T=40)
    grads = []
    for fn in (recurrent_gated_delta_rule, chunk_gated_delta_rule):
        leaves = [t.clone().requires_grad_() for t in (q, v, g, beta, s0)]
        o, s = fn(leaves[0], k, leaves[1], leaves[2], leaves[3], initial_state=leaves[4])
        (o.square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert (a - b).abs().max().item() <= 1e-4


def test_dispatch_rejects_unknown_mode_and_backend():
    q, k, v, g, beta, _ = _inputs(T=4)
    with pytest.raises(ValueError, match="mode"):
        simple_gla(q, k, v, g, mode="parallel")
    with pytest.raises(ValueError, match="backend"):
        gated_delta_rule(q, k, v, g, beta, backend="cuda")
    with pytest.raises(ValueError, match="expected q, k"):
        recurrent_simple_gla(q, k, v[:, :2], g)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_fla_triton_kernels_match_torch_path(mode):
    pytest.importorskip("triton")
    q, k, v, g, beta, s0 = (t.cuda() for t in _inputs(T=128, K=32, V=32))
    for op, args in ((gated_delta_rule, (q, k, v, g, beta)), (simple_gla, (q, k, v, g))):
        ref_o, ref_s = op(*args, initial_state=s0, mode=mode, backend="torch")
        o, s = op(*args, initial_state=s0, mode=mode, backend="fla")
        assert (o.float() - ref_o).abs().max().item() <= 2e-3
        assert (s - ref_s).abs().max().item() <= 2e-3


def test_retention_decays_match_fla_naive_retention():
    from swar_bench.mechanisms.linear_attention import retnet_decays

    fla_ret = pytest.importorskip("fla.ops.retention.naive")
    q, k, v, _, _, _ = _inputs(T=70, H=4, K=8, V=8)
    g = torch.tensor(retnet_decays(4)).log().expand(q.shape[:3])
    ref = fla_ret.naive_retention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    for fn in (chunk_simple_gla, recurrent_simple_gla):
        o, _ = fn(q, k, v, g)
        _close(o, ref.transpose(1, 2))
