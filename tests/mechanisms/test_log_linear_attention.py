"""Log-linear attention: the Fenwick-tree op against fla's naive reference and a float64 definition
(extreme gates included), its log2 T state growth, and the model's size next to Gated DeltaNet."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid

import swar_bench.mechanisms as mech
from swar_bench.mechanisms import LogLinearAttention
from swar_bench.mechanisms.ops.log_linear_attention import (
    chunk_log_linear_attention,
    levels_needed,
    log_linear_attention,
    recurrent_log_linear_attention,
)
from tests.mechanisms import float64_recurrences as f64

fla_lla = pytest.importorskip("fla.ops.log_linear_attn.naive")


def _inputs(B=2, T=70, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, B, T, H, K, generator=gen)
    v = torch.randn(B, T, H, V, generator=gen)
    g = logsigmoid(torch.randn(B, T, H, generator=gen) + 2.0)
    lam = torch.rand(B, T, H, levels_needed(T), generator=gen)
    return q, k, v, g, lam


@pytest.mark.parametrize("form", ["recurrent", "chunk"])
@pytest.mark.parametrize("cut", [0, 5, 16, 33, 70])
def test_matches_fla_naive_across_a_carried_state(form, cut):
    q, k, v, g, lam = _inputs()
    ref = fla_lla.naive_log_linear_attn(q, k, v, g, lam)
    whole = recurrent_log_linear_attention(q, k, v, g, lam)
    if form == "recurrent":
        fn = recurrent_log_linear_attention
    else:
        fn = lambda *a, **kw: chunk_log_linear_attention(*a, chunk_size=8, **kw)
    parts = [x[:, :cut] for x in (q, k, v, g, lam)], [x[:, cut:] for x in (q, k, v, g, lam)]
    o1, s1 = fn(*parts[0])
    o2, s2 = fn(*parts[1], initial_state=s1)
    assert (torch.cat([o1, o2], 1) - ref).abs().max().item() <= 1e-5 * ref.abs().max().item()
    assert s1[0].shape[2] == cut.bit_length() and int(s1[1][0]) == cut
    assert s2[0].shape == whole[1][0].shape == (2, 2, (70).bit_length(), 8, 6)
    assert (s2[0] - whole[1][0]).abs().max().item() <= 1e-5 * whole[1][0].abs().max().item()
    assert (s2[1] == 70).all()


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    resets=st.lists(st.integers(0, 39), max_size=4),
    burst=st.sampled_from([0.0, 30.0, 2000.0]),
    chunk_size=st.sampled_from([4, 8, 16]),
    start=st.integers(0, 9),
)
def test_chunk_form_under_extreme_gates_is_within_2e5_of_float64(
    seed, resets, burst, chunk_size, start
):
    q, k, v, g, lam = _inputs(T=40, seed=seed)
    g[:, 12:15] -= burst
    g[:, resets] = float("-inf")
    ref = f64.log_linear_attention(q, k, v, g, lam)
    # start mid-stream so the chunk form also runs its unaligned head and tail recurrently
    _, s = recurrent_log_linear_attention(*(x[:, :start] for x in (q, k, v, g, lam)))
    o, _ = chunk_log_linear_attention(
        *(x[:, start:] for x in (q, k, v, g, lam)), initial_state=s, chunk_size=chunk_size
    )
    assert torch.isfinite(o).all()
    err = (o.double() - ref[:, start:]).abs().max().item()
    assert err <= 2e-5 * ref[:, start:].abs().max().item()


def test_state_grows_as_log2_of_the_tokens_seen():
    model = LogLinearAttention(d_model=16, n_heads=2, chunk_size=8).eval()
    assert model.fixed_size_state is False and not mech.is_fixed_size(model)
    conv = 2 * 3 * 16 * 3 * 4  # two layers, 3 * d_model channels, 3 past inputs, float32
    state, seen = model.init_state(1), 0
    assert mech.measure_state_bytes(state) == model.state_bytes(1) == conv + 2 * 8
    with torch.no_grad():
        for T in (1, 2, 5, 64, 100, 1000, 1025):
            _, state = model(torch.randint(0, 40, (1, T - seen)), state)
            seen = T
            expected = conv + 2 * (2 * T.bit_length() * 8 * 8 * 4 + 8)  # levels + position
            assert mech.measure_state_bytes(state) == model.state_bytes(1, seq_len=T) == expected
            assert mech.state_bytes_at(model, 1, T) == expected


def test_bad_inputs_raise_one_line_errors():
    q, k, v, g, lam = _inputs(T=20)
    with pytest.raises(ValueError, match="power of two"):
        chunk_log_linear_attention(q, k, v, g, lam, chunk_size=6)
    with pytest.raises(ValueError, match="level_scales has 2 levels"):
        log_linear_attention(q, k, v, g, lam[..., :2])
    _, (levels, position) = recurrent_log_linear_attention(q, k, v, g, lam)
    with pytest.raises(ValueError, match="same position"):
        recurrent_log_linear_attention(
            q, k, v, g, lam, initial_state=(levels, position * torch.tensor([1, 2]))
        )
    model = LogLinearAttention(d_model=16, n_levels=4)
    with pytest.raises(
        ValueError, match="n_levels=4 streams at most 8 tokens; this call reaches 9"
    ):
        model(torch.zeros(1, 9, dtype=torch.long))
