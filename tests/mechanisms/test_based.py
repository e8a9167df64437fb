"""Based: the Taylor linear attention against fla's naive reference (with a carried state) and a
float64 recurrence, and the model's size next to Gated DeltaNet."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms import Based
from swar_bench.mechanisms.ops.based import based, chunk_based, recurrent_based
from tests.mechanisms import float64_recurrences as f64

fla_based = pytest.importorskip("fla.ops.based.naive")


def _inputs(B=2, T=40, H=2, K=4, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, B, T, H, K, generator=gen)
    return q, k, torch.randn(B, T, H, V, generator=gen)


@pytest.mark.parametrize("fn", [recurrent_based, chunk_based])
@pytest.mark.parametrize("split", [0, 1, 19, 40])
def test_based_matches_fla_naive_across_a_carried_state(fn, split):
    q, k, v = _inputs()
    t = lambda x: x.transpose(1, 2)  # naive_parallel_based takes [B, H, T, K]
    ref = t(fla_based.naive_parallel_based(t(q), t(k), t(v)))
    kwargs = {"chunk_size": 16} if fn is chunk_based else {}
    o1, s1 = fn(q[:, :split], k[:, :split], v[:, :split], **kwargs)
    o2, s2 = fn(q[:, split:], k[:, split:], v[:, split:], initial_state=s1, **kwargs)
    assert (torch.cat([o1, o2], 1) - ref).abs().max().item() <= 1e-5
    _, ref_s1 = f64.based(q, k, v, 0.5, split)
    _, ref_s2 = f64.based(q, k, v, 0.5, 40)
    assert (s1.double() - ref_s1).abs().max().item() <= 1e-4
    assert (s2.double() - ref_s2).abs().max().item() <= 1e-4 * max(1.0, ref_s2.abs().max().item())


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**16),
    burst=st.sampled_from([1.0, 10.0, 30.0]),
    at=st.integers(0, 39),
    chunk_size=st.sampled_from([8, 16, 64]),
)
def test_chunk_form_with_key_bursts_is_within_2e5_of_float64(seed, burst, at, chunk_size):
    """Based has no decay gate; its extreme input is a burst of large keys (huge 1 + s + s^2/2)."""
    q, k, v = _inputs(seed=seed)
    k[:, at : at + 3] *= burst
    o64, s64 = f64.based(q, k, v, 0.5, 40)
    o, s = chunk_based(q, k, v, chunk_size=chunk_size)
    f64.assert_matches_float64(o, s, o64, s64)
    o_rec, _ = based(q, k, v, mode="recurrent")
    assert (o_rec.double() - o64).abs().max().item() <= 2e-5 * o64.abs().max().item()


def test_shapes_are_checked():
    q, k, v = _inputs()
    with pytest.raises(ValueError, match="expected q, k"):
        recurrent_based(q, k[..., :3], v)


def test_layers_alternate():
    model = Based(n_layers=3)
    kinds = [type(b.mixer).__name__ for b in model.blocks]
    assert kinds == ["TaylorLinearAttentionMixer", "AttentionMixer", "TaylorLinearAttentionMixer"]
