"""Chunk-parallel forms under extreme log decays, against a float64 token-by-token recurrence.

Relative error of a tensor ``a`` against its float64 reference ``r`` (here and in the ops'
docstrings): ``max|a - r| / max(max|r|, 1e-30)``, per tensor, in float64 (output, final state,
and the gradient of every input; the floor only matters for a tensor whose exact values are all
below float32's range, such as the gradient of a state that is then decayed by ``exp(-300)``).
A gradient is a sum of many terms that can cancel (the log decay's gradient at one token is a
``K x V`` contraction ``exp(g) <S_{t-1}, dS_t>``), so for gradients the denominator is
``max(max|r|, max|r_abs|)``, where ``r_abs`` is the same float64 gradient with every input but
the log decays and every cotangent replaced by its absolute value: the sum of the terms'
magnitudes, the scale float32 rounding error is proportional to (the componentwise condition of
the sum; Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, sec. 4.2). Without it
the float32 recurrence itself misses 2e-5 where the terms cancel (2.4e-5 on the input that
``test_chunk_forms_match_float64_recurrence_for_any_log_decays`` keeps as an example).
Float32 inputs: <= 2e-5 for every form and every log decay in [-inf, 0], in any mix within a
chunk. bfloat16 inputs: <= 8e-3 for the output and the input gradients (they are rounded to
bfloat16, unit roundoff 2^-8 = 3.9e-3), <= 2e-5 for the float32 final state.
"""

import math
from functools import partial

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms.mamba2 import ssd
from swar_bench.mechanisms.ops import (
    chunk_gated_delta_rule,
    chunk_simple_gla,
    gated_delta_rule,
    simple_gla,
)
from swar_bench.mechanisms.ops.chunking import (
    chunk_decays,
    decay_matrix,
    initial_state_of,
    merge_chunks,
    segsum,
    split_chunks,
)

TOL = 2e-5
BF16_TOL = 8e-3
INF = float("inf")


def rel_err(a: torch.Tensor, ref: torch.Tensor, magnitude: torch.Tensor | None = None) -> float:
    """max|a - ref| / max(max|ref|, max|magnitude|, 1e-30) in float64; inf when ``a`` has a
    non-finite entry. ``magnitude``: the sum of the terms' magnitudes (gradients, see above)."""
    assert a.shape == ref.shape
    a, ref = a.double(), ref.double()
    if not torch.isfinite(a).all():
        return INF
    scale = ref.abs().max()
    if magnitude is not None:
        scale = torch.maximum(scale, magnitude.double().abs().max())
    return ((a - ref).abs().max() / scale.clamp_min(1e-30)).item()


def recurrence64(q, k, v, g, beta=None, scale=None, initial_state=None):
    """The float64 recurrence, token by token: ``S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T``
    (``beta`` None: simple GLA / GLA) or the gated delta rule's
    ``S_t = D_t S_{t-1} + beta_t k_t (v_t - (D_t S_{t-1})^T k_t)^T``; ``o_t = scale S_t^T q_t``.
    ``g`` is ``[B, T, H]`` (scalar) or ``[B, T, H, K]`` (per key channel)."""
    q, k, v, g = (x.double() for x in (q, k, v, g))
    B, T, H, K = q.shape
    scale = K**-0.5 if scale is None else scale
    S = q.new_zeros(B, H, K, v.shape[-1]) if initial_state is None else initial_state.double()
    outs = []
    for t in range(T):
        decay = g[:, t].exp()
        S = S * (decay[..., None, None] if g.dim() == 3 else decay[..., :, None])
        write = v[:, t]
        if beta is not None:
            write = (write - torch.einsum("bhkv,bhk->bhv", S, k[:, t])) * beta[:, t].double()[
                ..., None
            ]
        S = S + k[:, t, ..., :, None] * write[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S))
    return torch.stack(outs, 1), S


def errors(fn, ref, inputs: dict, seed=1) -> dict[str, float]:
    """Relative errors of ``fn(**inputs)`` against ``ref(**inputs)``: output, final state, and
    the gradient of each input of a fixed random linear function of both."""
    leaves = {n: x.clone().requires_grad_() for n, x in inputs.items()}
    o, s = fn(**leaves)
    gen = torch.Generator().manual_seed(seed)
    # cotangents representable in bfloat16, so a bfloat16 output's backward sees them exactly
    w_o = torch.randn(o.shape, generator=gen).bfloat16().double()
    w_s = torch.randn(s.shape, generator=gen).bfloat16().double()
    ((o.double() * w_o).sum() + (s.double() * w_s).sum()).backward()
    ref_leaves = {n: x.detach().double().requires_grad_() for n, x in inputs.items()}
    ref_o, ref_s = ref(**ref_leaves)
    ((ref_o * w_o).sum() + (ref_s * w_s).sum()).backward()
    # the same gradients over absolute values: the magnitudes of the terms each one sums
    abs_leaves = {
        n: (x if n == "g" else x.abs()).detach().double().requires_grad_()
        for n, x in inputs.items()
    }
    abs_o, abs_s = ref(**abs_leaves)
    ((abs_o * w_o.abs()).sum() + (abs_s * w_s.abs()).sum()).backward()
    out = {"o": rel_err(o, ref_o), "state": rel_err(s, ref_s)}
    for n in inputs:
        out[f"d{n}"] = rel_err(leaves[n].grad, ref_leaves[n].grad, abs_leaves[n].grad)
    return out


def gla(mode="chunk", chunk_size=64, scale=None):
    def fn(q, k, v, g, initial_state=None):
        return simple_gla(
            q, k, v, g, scale, initial_state, mode=mode, chunk_size=chunk_size, backend="torch"
        )

    return fn


def gdr(mode="chunk", chunk_size=64, scale=None):
    def fn(q, k, v, g, beta, initial_state=None):
        return gated_delta_rule(
            q, k, v, g, beta, scale, initial_state, mode=mode, chunk_size=chunk_size,
            backend="torch",
        )  # fmt: skip

    return fn


def ref_gla(scale=None):
    return lambda q, k, v, g, initial_state=None: recurrence64(
        q, k, v, g, None, scale, initial_state
    )


def ref_gdr(scale=None):
    return lambda q, k, v, g, beta, initial_state=None: recurrence64(
        q, k, v, g, beta, scale, initial_state
    )


def helper_chunk_gla(q, k, v, g, initial_state=None, chunk_size=16):
    """GLA's chunk form (per-key-channel decays ``g [B, T, H, K]``, Yang et al., 2024) written on
    the helper in a few lines, as a later chunk form would be."""
    S = initial_state_of(q, v, initial_state)
    qc, kc, vc, gc = (split_chunks(x, chunk_size) for x in (q, k, v, g))
    qc = qc * q.shape[-1] ** -0.5
    d = chunk_decays(gc)
    dS = d.decay_keys(kc).transpose(-1, -2) @ vc
    states = []
    for total_i, dS_i in zip(d.total.unbind(2), dS.unbind(2)):
        states.append(S)
        S = S * total_i + dS_i
    o = d.scores(qc, kc) @ vc + d.decay_queries(qc) @ torch.stack(states, 2)
    return merge_chunks(o, q.shape[1]), S


def assert_within(errs: dict[str, float], tol: float = TOL, state_tol: float = TOL) -> None:
    bad = {n: e for n, e in errs.items() if not e <= (state_tol if n == "state" else tol)}
    assert not bad, f"relative errors above {tol}: {bad} (all: {errs})"


def random_inputs(B=2, T=64, H=2, K=8, V=8, seed=0, initial_state=True):
    gen = torch.Generator().manual_seed(seed)
    x = {
        "q": torch.randn(B, T, H, K, generator=gen),
        "k": normalize(torch.randn(B, T, H, K, generator=gen), dim=-1),
        "v": torch.randn(B, T, H, V, generator=gen),
    }
    if initial_state:
        x["initial_state"] = torch.randn(B, H, K, V, generator=gen)
    return x, torch.rand(B, T, H, generator=gen)


# --- the reported inputs (issue: chunk-parallel forms under extreme decays) ---


@pytest.mark.parametrize("T", [15, 16, 40])
@pytest.mark.parametrize("op", ["simple_gla", "gated_delta_rule"])
def test_minus_inf_log_decay_forgets_everything_in_every_mode(T, op):
    """q = k = v = ones(1, T, 1, 4), g = 0 but g[5] = -inf, beta = 0.5, mode "auto": T = 16 (the
    chunk form) gave NaN output, state and gradients; T = 15 (recurrent) was right."""
    ones = torch.ones(1, T, 1, 4)
    g = torch.zeros(1, T, 1)
    g[0, 5, 0] = -INF
    inputs = {"q": ones, "k": ones, "v": ones, "g": g}
    if op == "simple_gla":
        fn, ref = gla(mode="auto"), ref_gla()
        # the state restarts at token 5: S_t = (t - 4) * ones(4, 4), o_t = 0.5 * 4 * (t - 4)
        expected_o = 2.0 * (torch.arange(T) - 4.0).clamp_min(0)
        expected_o[:5] = 2.0 * torch.arange(1.0, 6.0)  # before the reset: S_t = (t + 1) * ones
    else:
        inputs["beta"] = torch.full((1, T, 1), 0.5)
        fn, ref = gdr(mode="auto"), ref_gdr()
        # delta rule on k = ones(4): S_t = c_t * ones, c_t = c_{t-1} + 0.5 (1 - 4 c_{t-1})
        #   = 0.5 - c_{t-1} -> c = (1 - (-1)^n) / 4 after n writes; o_t = 0.5 * 4 * c_t
        n_writes = torch.where(torch.arange(T) < 5, torch.arange(T) + 1, torch.arange(T) - 4)
        expected_o = (1 - (-1.0) ** n_writes) / 2
    o, s = fn(**inputs)
    assert torch.allclose(o[0, :, 0, 0], expected_o, rtol=1e-6, atol=1e-6)
    assert torch.allclose(s, expected_o[-1] / 2 * torch.ones(1, 1, 4, 4), rtol=1e-6)
    assert_within(errors(fn, ref, inputs))


def test_large_finite_log_decay_keeps_precision():
    """g = -1e-3 but g[0] = -2000, q = k = v = ones(1, 64, 1, 1), scale 1, chunk 64: the chunk
    form was 5.7e-5 relative from the exact value (recurrent: 2.2e-7)."""
    g = torch.full((1, 64, 1), -1e-3)
    g[0, 0, 0] = -2000.0
    ones = torch.ones(1, 64, 1, 1)
    inputs = {"q": ones, "k": ones, "v": ones, "g": g}
    o, _ = gla(mode="chunk", chunk_size=64, scale=1.0)(**inputs)
    # g[0] only decays the empty initial state: o_t = sum_{j <= t} exp(-1e-3 (t - j))
    t = torch.arange(64, dtype=torch.float64)
    exact = (1 - torch.exp(-1e-3 * (t + 1))) / (1 - math.exp(-1e-3))
    assert rel_err(o[0, :, 0, 0], exact) <= TOL
    assert_within(errors(gla(mode="chunk", scale=1.0), ref_gla(1.0), inputs))


@pytest.mark.parametrize("bursts", [[0], [10, 40], [3, 20, 33, 50]])
@pytest.mark.parametrize("op", ["simple_gla", "gated_delta_rule"])
def test_bursts_of_large_log_decays_among_small_ones(bursts, op):
    """Log decays of -300 among -1e-3 in a 64-token chunk (before the segment sums: up to 8.4e-5
    relative for simple GLA and 1.0e-4 for the gated delta rule, gradients included)."""
    inputs, beta = random_inputs()
    g = torch.full((2, 64, 2), -1e-3)
    g[:, bursts] = -300.0
    inputs["g"] = g
    if op == "simple_gla":
        assert_within(errors(gla(), ref_gla(), inputs))
    else:
        assert_within(errors(gdr(), ref_gdr(), {**inputs, "beta": beta}))


def test_mamba2_ssd_with_dt_from_1e_6_to_50():
    """A Mamba-2 stream whose dt mixes 1e-6 and 50 within a chunk (A in [-16, -1], so log decays
    down to -800): before the segment sums 1.2e-4 relative (output and gradients)."""
    gen = torch.Generator().manual_seed(0)
    batch, T, H, N, P = 2, 100, 2, 4, 4
    big = torch.rand(batch, T, H, generator=gen) < 0.1
    inputs = {
        "x": torch.randn(batch, T, H, P, generator=gen),
        "dt": torch.where(big, torch.tensor(50.0), torch.tensor(1e-6)),
        "B": torch.randn(batch, T, N, generator=gen),
        "C": torch.randn(batch, T, N, generator=gen),
        "initial_state": torch.randn(batch, H, N, P, generator=gen),
    }
    A = torch.tensor([-1.0, -16.0])

    def ref(x, dt, B, C, initial_state):  # h_t = exp(A dt_t) h_{t-1} + dt_t B_t x_t^T
        h, ys = initial_state, []
        for t in range(T):
            h = h * (A.double() * dt[:, t]).exp()[..., None, None] + dt[:, t, :, None, None] * (
                B[:, t, None, :, None] * x[:, t, :, None, :]
            )
            ys.append(torch.einsum("bn,bhnp->bhp", C[:, t], h))
        return torch.stack(ys, 1), h

    def fn(**kw):
        return ssd(A=A, mode="chunk", chunk_size=64, backend="torch", **kw)

    assert_within(errors(fn, ref, inputs))


# --- the kind: any log decays in [-inf, 0], any chunking, initial state or not ---

LOG_DECAY = st.one_of(
    st.just(-INF),
    st.just(0.0),
    st.floats(-3000.0, -30.0),  # bursts: exp underflows or nearly
    st.floats(-1e-2, -1e-7),  # slow decays
    st.floats(-5.0, 0.0),
)


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(["simple_gla", "gated_delta_rule", "per_channel_gla"]),
    T=st.integers(1, 70),
    chunk_size=st.sampled_from([1, 3, 8, 16, 32, 64]),
    log_decays=st.lists(LOG_DECAY, min_size=1, max_size=12),
    background=st.sampled_from([-1e-3, -0.1, 0.0]),
    with_state=st.booleans(),
    seed=st.integers(0, 2**16),
)
# the log decay's gradient is exp(g) <S_0, dS> here, a sum of 12 terms that nearly cancel:
# 9.5e-5 relative to its own size (the float32 recurrence: 2.4e-5), 2e-8 to the terms' magnitudes
@example(
    op="simple_gla", T=1, chunk_size=1, log_decays=[-INF], background=-1e-3, with_state=True,
    seed=109,
)  # fmt: skip
def test_chunk_forms_match_float64_recurrence_for_any_log_decays(
    op, T, chunk_size, log_decays, background, with_state, seed
):
    inputs, beta = random_inputs(B=1, T=T, H=2, K=4, V=3, seed=seed, initial_state=with_state)
    gen = torch.Generator().manual_seed(seed)
    g = torch.full((1, T, 2, 4) if op == "per_channel_gla" else (1, T, 2), background)
    where = torch.randint(0, g.numel(), (len(log_decays),), generator=gen)
    g.view(-1)[where] = torch.tensor(log_decays)
    inputs["g"] = g
    if op == "simple_gla":
        errs = errors(gla(chunk_size=chunk_size), ref_gla(), inputs)
    elif op == "per_channel_gla":
        errs = errors(partial(helper_chunk_gla, chunk_size=chunk_size), ref_gla(), inputs)
    else:
        errs = errors(gdr(chunk_size=chunk_size), ref_gdr(), {**inputs, "beta": beta})
    assert_within(errs)


@pytest.mark.parametrize("op", ["simple_gla", "gated_delta_rule"])
def test_bfloat16_inputs_within_the_stated_tolerance(op):
    inputs, beta = random_inputs(T=50)
    g = logsigmoid(torch.randn(2, 50, 2, generator=torch.Generator().manual_seed(3)) + 2.0)
    g[:, [7, 30]] = -INF
    g[:, 12] = -500.0
    inputs = {n: x.bfloat16() for n, x in {**inputs, "g": g}.items()}
    if op == "simple_gla":
        errs = errors(gla(chunk_size=16), ref_gla(), inputs)
    else:
        errs = errors(gdr(chunk_size=16), ref_gdr(), {**inputs, "beta": beta.bfloat16()})
    assert_within(errs, tol=BF16_TOL, state_tol=TOL)


# --- the helper itself, scalar and per-channel decays ---


def _direct_sums(g: torch.Tensor):
    """float64 segment sums by explicit loops over one chunk's log decays ``g [C]``."""
    g = g.double()
    C = len(g)
    within = torch.full((C, C), -INF, dtype=torch.float64)
    for i in range(C):
        for j in range(i + 1):
            within[i, j] = g[j + 1 : i + 1].sum()
    from_start = torch.stack([g[: i + 1].sum() for i in range(C)])
    to_end = torch.stack([g[i + 1 :].sum() for i in range(C)])
    return within, from_start, to_end, g.sum()


@pytest.mark.parametrize("per_channel", [False, True])
def test_chunk_decays_are_exact_segment_sums(per_channel):
    gen = torch.Generator().manual_seed(0)
    shape = (1, 1, 2, 8, 3) if per_channel else (1, 1, 2, 8)
    g = -torch.rand(shape, generator=gen) * 1e-3
    g[0, 0, 0, 5] = -INF
    g[0, 0, 1, 1] = -300.0
    g[0, 0, 1, 2] = -2000.0  # every channel when per channel
    if per_channel:
        g[0, 0, 0, 3, 1] = -INF  # one channel only
    g = g.requires_grad_()
    d = chunk_decays(g)
    # every tensor of every shape listed in ChunkDecays' docstring
    lead = (1, 1, 2)
    K = 3 if per_channel else 1
    assert d.within.shape == ((*lead, 8, 8, 3) if per_channel else (*lead, 8, 8))
    assert d.from_start.shape == d.to_end.shape == (*lead, 8, K)
    assert d.total.shape == (*lead, K, 1)
    for n in range(2):
        for c in range(K):
            gc = g[0, 0, n, :, c] if per_channel else g[0, 0, n]
            within, from_start, to_end, total = (x.exp() for x in _direct_sums(gc.detach()))
            got_within = d.within[0, 0, n, ..., c] if per_channel else d.within[0, 0, n]
            for got, want in (
                (got_within, within),
                (d.from_start[0, 0, n, :, c], from_start),
                (d.to_end[0, 0, n, :, c], to_end),
                (d.total[0, 0, n, c, 0], total),
            ):
                assert torch.allclose(got.double(), want, rtol=1e-6, atol=1e-12)
    loss = sum(x.sum() for x in (d.within, d.from_start, d.to_end, d.total))
    loss.backward()
    assert torch.isfinite(g.grad).all()


def test_segsum_masks_before_summing():
    g = torch.tensor([-1.0, -INF, -2.0, -0.5])
    out = segsum(g)
    want = torch.tensor(
        [[0.0, -INF, -INF, -INF], [-INF, 0.0, -INF, -INF], [-INF, -2.0, 0.0, -INF],
         [-INF, -2.5, -0.5, 0.0]]
    )  # fmt: skip
    assert torch.equal(out, want)


@pytest.mark.parametrize("dim", [-1, 1])
def test_decay_matrix_is_exp_of_segsum_with_its_gradient(dim):
    """The analytic backward of ``decay_matrix`` against autograd through ``segsum`` and against
    finite differences (float64), with -inf and large log decays in the segment."""
    gen = torch.Generator().manual_seed(0)
    g = -torch.rand(2, 7, 3, generator=gen, dtype=torch.float64) * 3
    g[0, 2, 1] = -INF
    g[1, 4, 0] = -300.0
    g = g if dim == 1 else g.transpose(1, 2).contiguous()  # C = 7 along ``dim``
    a, b = g.clone().requires_grad_(), g.clone().requires_grad_()
    w_a, w_b = decay_matrix(a, dim), segsum(b, dim).exp()
    assert torch.equal(w_a, w_b)
    cot = torch.randn(w_a.shape, generator=gen, dtype=torch.float64)
    (w_a * cot).sum().backward()
    (w_b * cot).sum().backward()
    assert torch.isfinite(a.grad).all()
    assert torch.allclose(a.grad, b.grad, rtol=1e-12, atol=1e-12)
    finite = -torch.rand(2, 5, dtype=torch.float64, generator=gen).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: decay_matrix(x, dim=1), (finite,))


def test_helper_serves_a_per_channel_decay_chunk_form():
    """The per-channel chunk form on the helper against the float64 recurrence."""
    inputs, _ = random_inputs(T=45, K=4, V=3)
    gen = torch.Generator().manual_seed(5)
    g = logsigmoid(torch.randn(2, 45, 2, 4, generator=gen) + 2.0)
    g[0, 3, 0, 1] = -INF
    g[1, 20, 1, :2] = -1000.0
    assert_within(errors(helper_chunk_gla, ref_gla(), {**inputs, "g": g}))


def test_chunk_forms_reject_a_bad_chunk_size_and_decay_shape():
    inputs, beta = random_inputs(T=4)
    g = torch.zeros(2, 4, 2)
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got 0"):
        chunk_simple_gla(inputs["q"], inputs["k"], inputs["v"], g, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size must be >= 1, got -1"):
        chunk_gated_delta_rule(inputs["q"], inputs["k"], inputs["v"], g, beta, chunk_size=-1)
    with pytest.raises(ValueError, match=r"\[B, H, n, C\] or \[B, H, n, C, K\], got \(4, 2\)"):
        chunk_decays(g[0])
