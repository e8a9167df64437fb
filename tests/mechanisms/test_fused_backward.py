"""The hand-written backwards of ``ops.fused_backward``: ``gradcheck`` in float64 for any shape,
kernel size and carried state; forward values bitwise those of the autograd forms they replace
(``ShortConvolution``'s shifted ``addcmul`` s + SiLU, ``F.normalize``, ``nn.RMSNorm``); gradients
equal to autograd's within float32 rounding, alone and inside the mechanisms that use them."""

import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

import swar_bench.mechanisms as mech
from swar_bench.mechanisms import ShortConvolution
from swar_bench.mechanisms import base as base_module
from swar_bench.mechanisms import delta_net as delta_net_module
from swar_bench.mechanisms.ops.fused_backward import _RMSNorm, causal_conv, l2_normalize, rms_norm
from tests.mechanisms.test_short_convolution import conv_case, stream_both


def autograd_conv(x, state, weight, activation):
    """``ShortConvolution.forward`` before the hand-written backward (autograd differentiates)."""
    K, T = weight.shape[-1], x.shape[1]
    w = weight[:, 0, :].to(x.dtype)
    z = torch.cat([state.to(x.dtype).transpose(1, 2), x], dim=1) if K > 1 else x
    y = x * w[:, K - 1]
    for j in range(K - 1):
        y = torch.addcmul(y, z[:, j : j + T], w[:, j])
    new_state = z[:, z.shape[1] - (K - 1) :].transpose(1, 2).to(state.dtype).clone()
    return (F.silu(y) if activation else y), new_state


def _rel_err(a, b) -> float:
    if a.numel() == 0:
        return 0.0
    return ((a - b).abs().max() / b.abs().max().clamp_min(1.0)).item()


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(1, 6),
    channels=st.integers(1, 5),
    kernel=st.integers(1, 4),
    carried=st.booleans(),
    activation=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv_gradcheck_float64(batch, length, channels, kernel, carried, activation, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, channels, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(channels, kernel, generator=g, dtype=torch.float64, requires_grad=True)
    if carried:
        s = torch.randn(batch, kernel - 1, channels, generator=g, dtype=torch.float64)
        s.requires_grad_(True)
        assert torch.autograd.gradcheck(lambda a, b, c: causal_conv(a, b, c, activation), (x, s, w))
    else:
        assert torch.autograd.gradcheck(lambda a, c: causal_conv(a, None, c, activation), (x, w))


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    channels=st.integers(1, 17),
    kernel=st.integers(1, 4),
    cuts=st.lists(st.integers(0, 9), min_size=1, max_size=4),
    activation=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv_forward_bitwise_and_gradients_within_rounding(
    batch, channels, kernel, cuts, activation, seed
):
    """Streamed in chunks (lengths 0 .. 9, shorter and longer than the state) with the state
    carried: outputs and states bit for bit the autograd form's; gradients of the input, the
    initial state and the weight within float32 rounding of autograd's."""
    conv, x, state0 = conv_case(batch, channels, kernel, cuts, activation, seed)

    def check(chunk, y, s, r, s_ref):
        assert torch.equal(y, r) and torch.equal(s, s_ref)

    reference = lambda chunk, state: autograd_conv(chunk, state, conv.weight, activation)
    y, s, r, s_ref = stream_both(conv, reference, x, state0, cuts, check)
    cot = torch.randn(batch, sum(cuts), channels)
    inputs = (x, state0, conv.weight)
    loss = (y * cot).sum() + (s * s.detach()).sum()
    loss_ref = (r * cot).sum() + (s_ref * s_ref.detach()).sum()
    grads = torch.autograd.grad(loss, inputs, allow_unused=True, materialize_grads=True)
    grads_ref = torch.autograd.grad(loss_ref, inputs, allow_unused=True, materialize_grads=True)
    for gr, ref in zip(grads, grads_ref):
        assert _rel_err(gr, ref) <= 1e-6


def test_conv_keeps_the_dtypes_under_autocast():
    """bf16-mixed: the projection gives bfloat16; the conv stays in it, the state in float32, and
    the gradients (to the bfloat16 input, the float32 weight) match autograd's within bfloat16
    rounding."""
    torch.manual_seed(0)
    conv = ShortConvolution(6, 4)
    x = torch.randn(2, 9, 6).bfloat16().requires_grad_(True)
    state = torch.randn(2, 6, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, s = conv(x, state)
        r, s_ref = autograd_conv(x, state, conv.weight, True)
    assert y.dtype == torch.bfloat16 and s.dtype == torch.float32
    assert torch.equal(y, r) and torch.equal(s, s_ref)
    gx, gw = torch.autograd.grad(y.float().square().sum(), (x, conv.weight))
    rx, rw = torch.autograd.grad(r.float().square().sum(), (x, conv.weight))
    assert gx.dtype == torch.bfloat16 and gw.dtype == torch.float32
    assert _rel_err(gx.float(), rx.float()) <= 2**-7 and _rel_err(gw, rw) <= 2**-7


@pytest.mark.parametrize(
    "x, w, s, expected",
    [
        ((2, 5), (3, 4), None, "x [B, T, C] and w [C, K >= 1], got x (2, 5)"),
        ((2, 5, 3), (4, 4), None, "got x (2, 5, 3), w (4, 4)"),
        ((2, 5, 3), (3, 4), (2, 2, 3), "state_t [B, K-1, C] = [2, 3, 3], got [2, 2, 3]"),
    ],
)
def test_conv_bad_shapes_are_one_line(x, w, s, expected):
    with pytest.raises(ValueError) as err:
        causal_conv(torch.zeros(x), None if s is None else torch.zeros(s), torch.zeros(w), True)
    assert expected in str(err.value) and "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    dim=st.integers(1, 8),
    eps=st.sampled_from([1e-12, 0.3, 1.0]),
    scales=st.lists(st.sampled_from([0.0, 0.01, 1.0, 5.0]), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_l2_gradcheck_float64_on_both_sides_of_the_clamp(lead, dim, eps, scales, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, len(scales), dim, generator=g, dtype=torch.float64)
    x = x * torch.tensor(scales, dtype=torch.float64)[:, None]  # rows of zeros, under eps, above
    norms = x.norm(dim=-1)
    assume(bool(((norms - eps).abs() > 1e-3).all()))  # finite differences away from the kink
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: l2_normalize(a, eps), (x,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_l2_forward_bitwise_and_gradient_within_rounding(dtype):
    """A non-contiguous head view (as the mechanisms split q from qkv), a row of zeros, a row
    under eps and a row exactly at eps (where clamp_min passes the gradient to the norm)."""
    torch.manual_seed(0)
    eps = 0.5
    qkv = torch.randn(3, 7, 24, dtype=dtype)
    qkv[0, 0] = 0.0
    qkv[0, 1] *= 1e-3
    qkv[0, 2, :8] = torch.tensor([0.5] + [0.0] * 7, dtype=dtype)  # norm exactly eps (head 0)
    qkv.requires_grad_(True)
    cot = torch.randn(3, 7, 2, 4, dtype=dtype)
    for e in (1e-12, eps):
        y = l2_normalize(qkv[..., :8].view(3, 7, 2, 4), e)
        r = F.normalize(qkv[..., :8].view(3, 7, 2, 4), dim=-1, eps=e)
        assert torch.equal(y, r)
        (g,) = torch.autograd.grad((y * cot).sum(), qkv)
        (gr,) = torch.autograd.grad((r * cot).sum(), qkv)
        tol = {torch.float32: 1e-6, torch.bfloat16: 2**-7, torch.float64: 1e-14}[dtype]
        assert _rel_err(g.float(), gr.float()) <= tol


@settings(max_examples=30, deadline=None)
@given(
    lead=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    dim=st.integers(1, 9),
    eps=st.sampled_from([None, 1e-6, 0.5]),
    scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0]),
    seed=st.integers(0, 2**16),
)
@example(lead=[2, 3], dim=1, eps=None, scale=1e-3, seed=246)  # the draw that failed with a fixed step
def test_rms_norm_gradcheck_float64_and_forward_bitwise_in_float32(lead, dim, eps, scale, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, dim, generator=g, dtype=torch.float64) * scale
    w = torch.randn(dim, generator=g, dtype=torch.float64)
    e = torch.finfo(torch.float64).eps if eps is None else eps
    x.requires_grad_(True)
    w.requires_grad_(True)
    if scale > 0 or e >= 1e-6:  # at x = 0 with eps ~ 2e-16 finite differences are meaningless
        # the finite-difference step scales with x: gradcheck's fixed 1e-6 is 4% of an x of 2.6e-5
        # (scale 1e-3), where the norm bends within the step (a full-suite draw: lead [2, 3], dim 1,
        # eps None, scale 1e-3, seed 246 failed by 0.3%)
        step = 1e-6 * min(1.0, scale) if scale > 0 else 1e-6
        assert torch.autograd.gradcheck(lambda a, b: _RMSNorm.apply(a, b, e), (x, w), eps=step)
    norm = nn.RMSNorm(dim, eps=eps)
    with torch.no_grad():
        norm.weight.copy_(w.float())
    x32 = x.detach().float().requires_grad_(True)
    for grad_mode in (False, True):
        with torch.set_grad_enabled(grad_mode):
            assert torch.equal(rms_norm(x32, norm), norm(x32))
    cot = torch.randn(x32.shape, generator=g)
    inputs = (x32, norm.weight)
    grads = torch.autograd.grad((rms_norm(x32, norm) * cot).sum(), inputs)
    grads_ref = torch.autograd.grad((norm(x32) * cot).sum(), inputs)
    for gr, ref in zip(grads, grads_ref):
        assert _rel_err(gr, ref) <= 1e-5


def test_rms_norm_leaves_bfloat16_autocast_and_float64_to_the_module():
    """Outside the float32 path the module itself runs (same values, autograd's backward)."""
    torch.manual_seed(0)
    for dtype in (torch.bfloat16, torch.float64):
        x = torch.randn(3, 8, dtype=dtype)
        norm = nn.RMSNorm(8, dtype=dtype)
        y = rms_norm(x.requires_grad_(True), norm)
        assert torch.equal(y, norm(x)) and type(y.grad_fn).__name__ != "_RMSNormBackward"
    norm = nn.RMSNorm(8)
    x = torch.randn(3, 8, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = rms_norm(x, norm)
        assert torch.equal(y, norm(x)) and type(y.grad_fn).__name__ != "_RMSNormBackward"
    assert type(rms_norm(x, norm).grad_fn).__name__ == "_RMSNormBackward"
    assert torch.equal(rms_norm(x, nn.RMSNorm(8, elementwise_affine=False)), F.rms_norm(x, (8,)))


def _old_forms(monkeypatch):
    monkeypatch.setattr(delta_net_module, "l2_normalize", lambda x: F.normalize(x, dim=-1))
    for module in (base_module, delta_net_module):
        monkeypatch.setattr(module, "rms_norm", lambda x, norm: norm(x))
    monkeypatch.setattr(
        ShortConvolution,
        "forward",
        lambda self, x, state: autograd_conv(x, state, self.weight, self.activation),
    )


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("GatedDeltaNet", {}),
        ("DeltaNet", {}),
        ("GatedDeltaProduct", {}),
        ("KimiDeltaAttention", {}),
        ("Mamba2", {}),
        ("GatedLinearAttention", {"conv_size": 4}),
        ("HGRN2", {"conv_size": 3}),
        ("ScalarDecayLinearAttention", {}),
    ],
)
def test_mechanism_forward_bitwise_and_gradients_within_rounding(monkeypatch, name, kwargs):
    """Two chained calls (the state carried, as TBPTT does): logits and states bit for bit the
    autograd forms' (``nn.RMSNorm`` modules, ``F.normalize``, the autograd conv), every parameter
    gradient within float32 rounding of theirs."""
    torch.manual_seed(0)
    model = getattr(mech, name)(vocab_size=40, d_model=32, n_layers=2, **kwargs)
    ids = torch.randint(0, 40, (2, 40), generator=torch.Generator().manual_seed(1))

    def run():
        model.zero_grad()
        logits, state = model(ids[:, :23])
        logits2, state2 = model(ids[:, 23:], state)
        (logits.square().mean() + logits2.square().mean()).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        return torch.cat([logits, logits2], 1), state2, grads

    logits, state, grads = run()
    with monkeypatch.context() as m:
        _old_forms(m)
        logits_ref, state_ref, grads_ref = run()
    assert torch.equal(logits, logits_ref)
    for a, b in zip(mech.iter_state_tensors(state), mech.iter_state_tensors(state_ref)):
        assert torch.equal(a, b)
    for (pname, _), gr, ref in zip(model.named_parameters(), grads, grads_ref):
        assert _rel_err(gr, ref) <= 1e-5, pname


def test_the_delta_family_uses_the_hand_written_forms():
    """The forms the speed-up rests on are the ones the mechanisms call (a refactor that went back
    to ``F.normalize`` or an autograd conv would fail here, not only in a benchmark)."""
    model = mech.GatedDeltaNet(vocab_size=40, d_model=16, n_layers=1)
    logits, _ = model(torch.randint(0, 40, (1, 20)))
    seen, stack = {}, [logits.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(f for f, _ in fn.next_functions)
    names = {type(fn).__name__ for fn in seen.values()}
    assert {"_CausalConvBackward", "_L2NormalizeBackward", "_RMSNormBackward"} <= names
    assert not any(n.startswith(("AddcmulBackward", "ClampMin", "Rsqrt", "Pow")) for n in names)
