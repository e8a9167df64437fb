"""Gated linear attention (GLA, HGRN2): both forms against fla's naive recurrence and a float64
recurrence, with initial and final state, under ordinary and extreme gates."""

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid

from swar_bench.mechanisms import HGRN2
from swar_bench.mechanisms.ops.chunking import segsum
from swar_bench.mechanisms.ops.gla import chunk_gla, gla, recurrent_gla
from swar_bench.mechanisms.ops.gla.chunk import causal_gated_scores, gated_scores
from tests.mechanisms import float64_recurrences as ref

fla_gla = pytest.importorskip("fla.ops.gla.naive")

TOL = 1e-5


def _inputs(B=2, T=50, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = torch.randn(B, T, H, K, generator=gen)
    v = torch.randn(B, T, H, V, generator=gen)
    g = logsigmoid(torch.randn(B, T, H, K, generator=gen) + 2.0)
    s0 = torch.randn(B, H, K, V, generator=gen)
    return q, k, v, g, s0


def _close(a, b, tol=TOL):
    assert a.shape == b.shape
    assert (a - b).abs().max().item() <= tol


@pytest.mark.parametrize("T", [1, 17, 64])
@pytest.mark.parametrize("chunk_size", [16, 64])
def test_gla_matches_fla_naive_with_initial_and_final_state(T, chunk_size):
    q, k, v, g, s0 = _inputs(T=T)
    ref_o, ref_s = fla_gla.naive_recurrent_gla(q, k, v, g, initial_state=s0, output_final_state=True)
    for o, s in (
        recurrent_gla(q, k, v, g, initial_state=s0),
        chunk_gla(q, k, v, g, initial_state=s0, chunk_size=chunk_size),
        gla(q, k, v, g, initial_state=s0, mode="chunk", chunk_size=chunk_size, backend="torch"),
    ):
        _close(o, ref_o)
        _close(s, ref_s)


def test_two_level_scores_equal_the_direct_segment_sum_form():
    q, k, _, g, _ = _inputs(B=1, T=64, H=3, K=8, seed=1)
    g[0, 5, 1, 3] = float("-inf")
    g[0, 40, 2] = -1e4
    direct = gated_scores(q, k, segsum(g, dim=-2).exp())  # [.., C, C] with C = T here (H as batch)
    for sub_chunk in (1, 4, 8, 16, 64, 7):  # 7 does not divide 64: one level
        _close(causal_gated_scores(q, k, g, sub_chunk), direct, 1e-4)


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
    """Log decays of -inf (a channel erased) and large bursts, among gates near 1: the chunk form
    stays within 2e-5 relative of the float64 recurrence, output and state."""
    q, k, v, _, s0 = _inputs(B=1, T=T, H=2, K=8, V=4, seed=seed)
    g = ref.extreme_log_decays(q.shape, seed, n_erased, n_bursts, burst)
    ref_o, ref_s = ref.gla(q, k, v, g, 8**-0.5, s0)
    o, s = chunk_gla(q, k, v, g, initial_state=s0, chunk_size=chunk_size)
    ref.assert_matches_float64(o, s, ref_o, ref_s)


def test_small_decays_after_a_burst_keep_float32_precision():
    """A burst of -39 opening each chunk, then a constant -1e-3: the factored in-chunk decays
    differ running sums near -39, whose float32 rounding errors add up in one direction (2.3e-6
    relative when summed in float32); summed in float64 they stay within 1e-6."""
    q, k, v, _, s0 = _inputs(B=1, T=64, H=2, K=8, V=4)
    g = torch.full(q.shape, -1e-3)
    g[:, 0] = g[:, 32] = -39.0
    ref_o, ref_s = ref.gla(q, k, v, g, 8**-0.5, s0)
    o, s = chunk_gla(q, k, v, g, initial_state=s0, chunk_size=32)
    ref.assert_matches_float64(o, s, ref_o, ref_s, tol=1e-6)


def test_chunk_form_gradients_match_recurrent():
    q, k, v, g, s0 = _inputs(T=40)
    grads = []
    for fn in (recurrent_gla, chunk_gla):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, g, s0)]
        o, s = fn(*leaves[:4], initial_state=leaves[4], chunk_size=16) if fn is chunk_gla else fn(
            *leaves[:4], initial_state=leaves[4]
        )
        (o.square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        _close(a, b, 1e-4)


def test_gradients_stay_finite_and_exact_where_a_sub_chunk_cannot_be_factored():
    """One chunk with a -inf and one with a -1e4 burst take the segment-sum path, the others the
    factored one; the gradients equal the recurrence's (no 0 * inf from the unused path)."""
    q, k, v, g, s0 = _inputs(T=64)
    g[0, 3, 1, 2] = float("-inf")
    g[1, 40, 0] = -1e4
    grads = []
    for fn, kw in ((recurrent_gla, {}), (chunk_gla, {"chunk_size": 16})):
        leaves = [t.clone().requires_grad_() for t in (q, k, v, s0)]
        o, s = fn(leaves[0], leaves[1], leaves[2], g, initial_state=leaves[3], **kw)
        (o.square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert torch.isfinite(a).all()
        _close(a, b, 1e-3)


def test_bad_shapes_and_chunk_size_are_value_errors():
    q, k, v, g, _ = _inputs(T=4)
    with pytest.raises(ValueError, match=r"q, k, g \[B, T, H, K\]"):
        recurrent_gla(q, k, v, g[..., 0])
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got 0"):
        chunk_gla(q, k, v, g, chunk_size=0)


@pytest.mark.parametrize("with_lower_bound", [False, True])
def test_hgrn2_layer_is_fla_naive_gla_under_hgrn2_mapping(with_lower_bound):
    """HGRN2 (Qin et al., 2024, eq. 6): ``q = SiLU(W_q x)``, ``f = lb + (1 - lb) sigmoid(W_f x)``,
    ``k = 1 - f``, ``v = W_i x``, decay ``f``, no scaling; fla's naive GLA hard-codes
    ``K^-0.5``, so its queries are multiplied by ``K^0.5``."""
    torch.manual_seed(0)
    model = HGRN2(d_model=16, n_heads=2, n_layers=2, chunk_size=8)
    mixer = model.blocks[1].mixer
    for p in mixer.parameters():
        torch.nn.init.normal_(p, std=0.5)
    mixer.lower_bound = torch.rand(16) * 0.9 if with_lower_bound else None
    B, T, D, H, K = 2, 21, 16, 2, 8
    x = torch.randn(B, T, D)
    s0 = torch.randn(B, H, K, K)
    q, f, i = mixer.qfi_proj(x).split(D, dim=-1)
    bound = 0.0 if mixer.lower_bound is None else mixer.lower_bound
    forget = bound + (1 - bound) * torch.sigmoid(f)
    heads = (B, T, H, K)
    ref_o, ref_s = fla_gla.naive_recurrent_gla(
        torch.nn.functional.silu(q).view(heads) * K**0.5,
        (1 - forget).view(heads),
        i.view(heads),
        forget.log().view(heads),
        initial_state=s0,
        output_final_state=True,
    )
    expected = mixer.o_proj(mixer.o_norm(ref_o.reshape(B, T, D)))
    for mode in ("chunk", "recurrent"):
        mixer.mode = mode
        y, s = mixer(x, s0)
        _close(y, expected)
        _close(s, ref_s)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_fla_triton_kernels_match_torch_path(mode):
    pytest.importorskip("triton")
    q, k, v, g, s0 = (t.cuda() for t in _inputs(T=128, K=32, V=32))
    ref_o, ref_s = gla(q, k, v, g, initial_state=s0, mode=mode, backend="torch")
    o, s = gla(q, k, v, g, initial_state=s0, mode=mode, backend="fla")
    assert (o.float() - ref_o).abs().max().item() <= 2e-3
    assert (s - ref_s).abs().max().item() <= 2e-3
    grads = []
    for backend in ("torch", "fla"):
        q, v = leaves = [t.detach().clone().requires_grad_() for t in (q, v)]
        o, s = gla(q, k, v, g, initial_state=s0, mode=mode, backend=backend)
        (o.float().square().sum() + s.sum()).backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        assert (a - b).abs().max().item() <= 2e-2 * max(1.0, b.abs().max().item())


def test_hgrn2_lower_bounds_increase_with_depth_and_are_learned():
    """HGRN's bounds: ``cumsum(softmax(lb, 0)) - softmax(lb, 0)[0]``; zeros at start give
    ``i / n_layers``; layer 0 has none; they get gradients through the forward pass."""
    torch.manual_seed(0)
    model = HGRN2(d_model=16, n_heads=2, n_layers=4, chunk_size=8)
    bounds = model.layer_lower_bounds()
    assert torch.allclose(bounds, torch.tensor([0.0, 0.25, 0.5, 0.75])[:, None].expand(4, 16))
    seen = []

    def record(mixer, args):
        seen.append(mixer.lower_bound)

    for block in model.blocks:
        block.mixer.register_forward_pre_hook(record)
    logits, _ = model(torch.randint(0, 40, (2, 12)), None)
    assert seen[0] is None and torch.equal(seen[2], bounds[2])
    assert all(block.mixer.lower_bound is None for block in model.blocks)  # cleared after the call
    copy.deepcopy(model)
    logits.square().mean().backward()
    assert model.lower_bounds.grad is not None and model.lower_bounds.grad.abs().sum() > 0
    assert model.n_params == sum(p.numel() for p in model.parameters())
