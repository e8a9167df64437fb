"""Linear-attention mechanisms: decays, the two forms agree inside the model, Mamba-2 against its
per-token recurrence."""

import math

import pytest
import torch

from swar_bench.mechanisms import (
    HGRN2,
    DeltaNet,
    GatedDeltaNet,
    GatedDeltaProduct,
    GatedLinearAttention,
    KimiDeltaAttention,
    Mamba,
    Mamba2,
    MultiScaleRetention,
    ScalarDecayLinearAttention,
)
from swar_bench.mechanisms.linear_attention import retnet_decays
from swar_bench.mechanisms.mamba2 import Mamba2Mixer

CELLS = {
    "ScalarDecayLinearAttention": (ScalarDecayLinearAttention, {"decay": 0.8}),
    "MultiScaleRetention": (MultiScaleRetention, {"n_heads": 2}),
    "DeltaNet": (DeltaNet, {"n_heads": 2}),
    "GatedDeltaNet": (GatedDeltaNet, {"n_heads": 2}),
    "Mamba2": (Mamba2, {"d_state": 8, "head_dim": 8}),
    "GatedLinearAttention": (GatedLinearAttention, {"n_heads": 2}),
    "HGRN2": (HGRN2, {"n_heads": 2}),
    "KimiDeltaAttention": (KimiDeltaAttention, {"n_heads": 2}),
    "GatedDeltaProduct": (GatedDeltaProduct, {"n_heads": 2}),
    "Mamba": (Mamba, {"d_state": 4}),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_chunk_form_equals_recurrent_form_in_the_model(name):
    cls, kwargs = CELLS[name]
    x = torch.randint(0, 40, (2, 70), generator=torch.Generator().manual_seed(0))
    outs = {}
    for mode in ("chunk", "recurrent"):
        torch.manual_seed(0)
        model = cls(d_model=16, chunk_size=16, mode=mode, **kwargs)
        with torch.no_grad():
            outs[mode], _ = model(x, model.init_state(2))
    assert (outs["chunk"] - outs["recurrent"]).abs().max().item() <= 1e-5


def test_scalar_decay_fixed_or_learned():
    fixed = ScalarDecayLinearAttention(d_model=16, decay=0.9)
    mixer = fixed.blocks[0].mixer
    assert mixer.n_heads == 1 and mixer.head_dim == 16
    assert mixer.decay.tolist() == pytest.approx([0.9])
    assert not any("decay" in n for n, _ in fixed.named_parameters())
    learned = ScalarDecayLinearAttention(d_model=16, decay=0.9, learn_decay=True)
    assert learned.blocks[0].mixer.decay.tolist() == pytest.approx([0.9])
    logits, _ = learned(torch.randint(0, 40, (1, 20)), None)
    logits.square().mean().backward()
    assert learned.blocks[0].mixer.decay_logit.grad.abs().item() > 0
    assert ScalarDecayLinearAttention(d_model=16, decay=1.0).blocks[0].mixer.decay.tolist() == [1.0]
    with pytest.raises(ValueError, match="decay must be in"):
        ScalarDecayLinearAttention(decay=1.5)
    with pytest.raises(ValueError, match="learned decay"):
        ScalarDecayLinearAttention(decay=1.0, learn_decay=True)


def test_retention_decays():
    assert retnet_decays(3) == [1 - 2**-5, 1 - 2**-6, 1 - 2**-7]
    msr = MultiScaleRetention(d_model=16, n_heads=2, decays=[0.5, 1.0])
    assert msr.blocks[1].mixer.decay.tolist() == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="n_heads=4 entries"):
        MultiScaleRetention(n_heads=4, decays=[0.5])


def test_gated_deltanet_decay_is_data_dependent_and_in_unit_interval():
    torch.manual_seed(0)
    mixer = GatedDeltaNet(d_model=16, n_heads=2).blocks[0].mixer
    x = torch.randn(1, 10, 16)
    g = -mixer.A_log.exp() * torch.nn.functional.softplus(mixer.a_proj(x) + mixer.dt_bias)
    alpha = g.exp()
    assert ((alpha > 0) & (alpha < 1)).all()
    assert alpha[0, :, 0].std().item() > 0  # varies with the token
    assert not hasattr(DeltaNet(d_model=16, n_heads=2).blocks[0].mixer, "A_log")  # no decay


def test_mamba2_mixer_matches_its_per_token_recurrence():
    torch.manual_seed(0)
    m = Mamba2Mixer(d_model=16, d_state=4, head_dim=8, chunk_size=8, mode="chunk")
    B, T = 2, 21
    x = torch.randn(B, T, 16)
    with torch.no_grad():
        y, (_, ssm) = m(x, m.init_state(B))
        # reference: explicit conv, discretisation and SSM recurrence
        H, P, N = m.n_heads, m.head_dim, m.d_state
        z, xbc, dt = m.in_proj(x).split([m.d_inner, m.d_inner + 2 * N, H], dim=-1)
        padded = torch.nn.functional.pad(xbc.transpose(1, 2), (m.conv.kernel_size - 1, 0))
        xbc = torch.nn.functional.silu(
            torch.nn.functional.conv1d(padded, m.conv.weight, groups=xbc.shape[-1])
        )
        xs, b, c = xbc.transpose(1, 2).split([m.d_inner, N, N], dim=-1)
        dt = torch.nn.functional.softplus(dt + m.dt_bias)
        A = -m.A_log.exp()
        h = torch.zeros(B, H, N, P)
        ys = []
        for t in range(T):
            xt = xs[:, t].view(B, H, P)
            h = (
                h * torch.exp(A * dt[:, t])[..., None, None]
                + dt[:, t, :, None, None] * b[:, t, None, :, None] * xt[:, :, None, :]
            )
            ys.append(torch.einsum("bn,bhnp->bhp", c[:, t], h) + m.D[:, None] * xt)
        ref = torch.stack(ys, 1).reshape(B, T, H * P)
        ref = m.out_proj(m.norm(ref * torch.nn.functional.silu(z)))
    assert (y - ref).abs().max().item() <= 1e-5
    assert (ssm - h).abs().max().item() <= 1e-5
    assert m.n_heads == 4 and math.isclose(m.D[0].item(), 1.0)


def test_mamba2_head_dim_must_divide_inner_width():
    with pytest.raises(ValueError, match="head_dim=24 must divide"):
        Mamba2(d_model=16, head_dim=24)
