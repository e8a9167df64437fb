"""Initialisation of every mechanism against the reference implementation it follows.

Each test names its source (repository and file). The backbone (``MixerLM``) applies fla's
generic ``normal(0, 0.02)`` first and each mixer's ``reset_parameters`` after it, so the special
inits checked here are the ones a built model starts from.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from swar_bench.mechanisms import (
    RWKV7,
    Based,
    CausalAttention,
    DeltaNet,
    GatedDeltaNet,
    GatedDeltaProduct,
    GatedLinearAttention,
    KimiDeltaAttention,
    LogLinearAttention,
    Mamba,
    Mamba2,
    Mixer,
    MixerLM,
    ShortConvolution,
    mLSTM,
)
from swar_bench.module import TBPTTModule

DT_MIN, DT_MAX, DT_FLOOR = 1e-3, 1e-1, 1e-4


def _mixers(model: MixerLM):
    return [b.mixer for b in model.blocks]


def _kaiming_bound(fan_in: int) -> float:
    """PyTorch's ``nn.Linear`` default: ``kaiming_uniform_(a=sqrt(5))`` -> ``U(+-1/sqrt(fan_in))``."""
    return 1.0 / math.sqrt(fan_in)


def _no_decay_names(model: MixerLM, *names: str) -> set[str]:
    return {f"blocks.{i}.mixer.{n}" for i in range(len(model.blocks)) for n in names}


def _dt_in_range(dt_bias: torch.Tensor) -> None:
    dt = nn.functional.softplus(dt_bias.detach().double())
    assert dt.min() >= DT_MIN * (1 - 1e-5) and dt.max() <= DT_MAX * (1 + 1e-5)


# ---------------------------------------------------------------- Mamba (S6)


@pytest.mark.parametrize("n_layers", [1, 2, 4])
def test_mamba_init_matches_mamba_ssm(n_layers):
    """state-spaces/mamba ``mamba_ssm/modules/mamba_simple.py`` (``Mamba.__init__``: A_log =
    log(arange(1, d_state + 1)), D = 1, dt ~ logU(1e-3, 1e-1) through inverse softplus, W_dt ~
    U(+-dt_rank^-1/2)) and ``mamba_ssm/models/mixer_seq_simple.py`` (``_init_weights``: Linear
    weights keep PyTorch's default, out_proj kaiming-uniform / sqrt(n_residuals_per_layer *
    n_layer) with 2 residuals per block when there is an MLP)."""
    torch.manual_seed(0)
    model = Mamba(d_model=64, n_layers=n_layers, d_state=16, expand=2)
    for mixer in _mixers(model):
        N, D_in, R = mixer.d_state, mixer.d_inner, mixer.dt_rank
        expected = torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(D_in, 1)
        assert torch.equal(mixer.A_log.detach(), expected)
        assert torch.equal(mixer.D.detach(), torch.ones(D_in))
        _dt_in_range(mixer.dt_bias)
        assert mixer.dt_proj_weight.abs().max() <= R**-0.5
        # projections: PyTorch default U(+-1/sqrt(fan_in)), not the backbone's 0.02 normal
        for lin in (mixer.in_proj, mixer.x_proj):
            bound = _kaiming_bound(lin.in_features)
            assert lin.weight.abs().max() <= bound
            assert lin.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)
        bound = _kaiming_bound(D_in) / math.sqrt(2 * n_layers)
        assert mixer.out_proj.weight.abs().max() <= bound
        assert mixer.out_proj.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)
        # depthwise conv: nn.Conv1d default (fan_in = kernel size), bias U(+-1/sqrt(k))
        k = mixer.conv.kernel_size
        assert mixer.conv.weight.abs().max() <= k**-0.5
        assert mixer.conv.weight.std() > 0.1  # far from the 0.02 normal
        assert mixer.conv_bias.abs().max() <= k**-0.5
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "D", "dt_bias")


def test_mamba_dt_floor_and_range_after_softplus():
    """mamba_simple.py: ``dt = exp(U * (log dt_max - log dt_min) + log dt_min).clamp(min=1e-4)``
    and ``inv_dt = dt + log(-expm1(-dt))``, so ``softplus(dt_bias)`` spans [1e-3, 1e-1]
    log-uniformly: about half of the channels below the geometric mean 1e-2."""
    torch.manual_seed(1)
    mixer = _mixers(Mamba(d_model=128, n_layers=1, expand=2))[0]
    dt = nn.functional.softplus(mixer.dt_bias.detach().double())
    _dt_in_range(mixer.dt_bias)
    assert 0.35 < (dt < 1e-2).double().mean() < 0.65


# ---------------------------------------------------------------- Mamba-2


@pytest.mark.parametrize("n_layers", [1, 3])
def test_mamba2_init_matches_mamba_ssm(n_layers):
    """state-spaces/mamba ``mamba_ssm/modules/mamba2.py`` (``Mamba2.__init__``: A ~ U(1, 16),
    A_log = log A, dt ~ logU(1e-3, 1e-1) floored at 1e-4, D = 1, A_log / D / dt_bias flagged
    ``_no_weight_decay``) and ``mixer_seq_simple.py`` ``_init_weights`` (out_proj rescaled)."""
    torch.manual_seed(0)
    model = Mamba2(d_model=64, n_layers=n_layers)
    for mixer in _mixers(model):
        A = mixer.A_log.detach().exp()
        assert A.min() >= 1.0 - 1e-5 and A.max() <= 16.0 + 1e-4
        assert torch.equal(mixer.D.detach(), torch.ones(mixer.n_heads))
        _dt_in_range(mixer.dt_bias)
        bound = _kaiming_bound(mixer.in_proj.in_features)
        assert mixer.in_proj.weight.abs().max() <= bound
        assert mixer.in_proj.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1)
        bound = _kaiming_bound(mixer.d_inner) / math.sqrt(2 * n_layers)
        assert mixer.out_proj.weight.abs().max() <= bound
        assert mixer.out_proj.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.15)
        assert torch.equal(mixer.norm.weight.detach(), torch.ones(mixer.d_inner))
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "D", "dt_bias")


# ---------------------------------------------------------------- delta-rule family (fla)


@pytest.mark.parametrize("cls", [GatedDeltaNet, GatedDeltaProduct])
def test_gated_delta_init_matches_fla(cls):
    """fla-org/flash-linear-attention ``fla/layers/gated_deltanet.py`` and
    ``fla/layers/gated_deltaproduct.py``: ``A = empty(num_heads).uniform_(0, 16)``,
    ``A_log = log A``, ``dt`` log-uniform in [1e-3, 1e-1] floored at 1e-4 -> ``dt_bias`` by inverse
    softplus, both ``_no_weight_decay``; ``fla/models/gated_deltanet/modeling_gated_deltanet.py``
    ``_init_weights``: Linear and Conv1d (fla's ShortConvolution) weights ``normal(0, 0.02)``."""
    torch.manual_seed(0)
    model = cls(d_model=64, n_layers=2, n_heads=64)  # 64 heads: enough draws of A
    for mixer in _mixers(model):
        A = mixer.A_log.detach().exp()
        assert A.min() >= 0.0 and A.max() <= 16.0 + 1e-4
        assert A.min() < 1.0  # U(0, 16), not Mamba-2's U(1, 16): P(no draw < 1) = (15/16)^64 ~ 2%
        _dt_in_range(mixer.dt_bias)
        assert mixer.conv.weight.std().item() == pytest.approx(0.02, rel=0.15)
        assert mixer.qkv_proj.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "dt_bias")


def test_deltanet_init_matches_fla():
    """fla ``fla/models/delta_net/modeling_delta_net.py`` ``_init_weights``: Linear and Conv1d
    weights ``normal(0, 0.02)``; DeltaNet has no decay, so nothing is exempt from weight decay."""
    torch.manual_seed(0)
    model = DeltaNet(d_model=64, n_layers=2)
    for mixer in _mixers(model):
        assert mixer.conv.weight.std().item() == pytest.approx(0.02, rel=0.15)
        assert mixer.o_proj.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert model.no_weight_decay_names == frozenset()


def test_kda_init_matches_fla():
    """fla ``fla/layers/kda.py``: ``A_log = log(empty(num_heads).uniform_(1, 16))``, ``dt_bias`` of
    size ``key_dim`` (one per channel) from dt log-uniform in [1e-3, 1e-1]; gate bias zero."""
    torch.manual_seed(0)
    model = KimiDeltaAttention(d_model=64, n_layers=1)
    mixer = _mixers(model)[0]
    A = mixer.A_log.detach().exp()
    assert A.min() >= 1.0 - 1e-5 and A.max() <= 16.0 + 1e-4
    assert mixer.dt_bias.shape == (64,)
    _dt_in_range(mixer.dt_bias)
    assert torch.equal(mixer.gate_proj[1].bias.detach(), torch.zeros(64))
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "dt_bias")


def test_log_linear_attention_decay_matches_mamba2():
    """fla ``fla/layers/log_linear_mamba2.py`` (Mamba-2's decay): A ~ U(1, 16), dt log-uniform in
    [1e-3, 1e-1]; A_log and dt_bias exempt from weight decay."""
    torch.manual_seed(0)
    model = LogLinearAttention(d_model=64, n_layers=1)
    mixer = _mixers(model)[0]
    A = mixer.A_log.detach().exp()
    assert A.min() >= 1.0 - 1e-5 and A.max() <= 16.0 + 1e-4
    _dt_in_range(mixer.dt_bias)
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "dt_bias")


@pytest.mark.parametrize("cls", [GatedLinearAttention, Based, CausalAttention])
def test_fla_generic_init(cls):
    """fla ``fla/models/*/modeling_*.py`` ``_init_weights``: every Linear and Embedding weight
    ``normal(0, 0.02)``, every Linear bias 0 (these mechanisms have no special init)."""
    torch.manual_seed(0)
    model = cls(d_model=64, n_layers=2)
    for name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Embedding)) and module.weight.numel() >= 1024:
            assert module.weight.std().item() == pytest.approx(0.02, rel=0.15), name
        if isinstance(module, nn.Linear) and module.bias is not None:
            assert torch.equal(module.bias.detach(), torch.zeros_like(module.bias)), name


# ---------------------------------------------------------------- RWKV-7


def _rwkv7_official(C: int, N: int, layer_id: int, n_layer: int) -> dict[str, torch.Tensor]:
    """The loops of BlinkDL/RWKV-LM ``RWKV-v7/train_temp/src/model.py`` ``RWKV_Tmix_x070.__init__``,
    transcribed element by element."""
    ratio_0_to_1 = layer_id / (n_layer - 1) if n_layer > 1 else 0.0
    ratio_1_to_almost0 = 1.0 - (layer_id / n_layer)
    ddd = torch.tensor([i / C for i in range(C)], dtype=torch.float64)
    www, zigzag, linear = (torch.zeros(C, dtype=torch.float64) for _ in range(3))
    for n in range(C):
        linear[n] = n / (C - 1) - 0.5
        zigzag[n] = ((n % N) - ((N - 1) / 2)) / ((N - 1) / 2)
        zigzag[n] = zigzag[n] * abs(zigzag[n])
        www[n] = -6 + 6 * (n / (C - 1)) ** (1 + 1 * ratio_0_to_1**0.3)
    mu = torch.stack([1.0 - torch.pow(ddd, e * ratio_1_to_almost0) for e in (0.2, 0.9, 0.7, 0.7, 0.9, 0.2)])
    return {
        "mu": mu,
        "w0": www + 0.5 + zigzag * 2.5,
        "a0": -0.19 + zigzag * 0.3 + linear * 0.4,
        "k_k": 0.71 - linear * 0.1,
        "k_a": torch.full((C,), 1.02, dtype=torch.float64),
        "ln_x": torch.full((C,), ((1 + layer_id) / n_layer) ** 0.7, dtype=torch.float64),
    }


@pytest.mark.parametrize("n_layers", [1, 2, 3])
def test_rwkv7_init_matches_official(n_layers):
    """BlinkDL/RWKV-LM ``RWKV-v7/train_temp/src/model.py`` (``RWKV_Tmix_x070.__init__`` and
    ``generate_init_weight``; fla ``fla/layers/rwkv7.py`` ``_initialize_weights`` is the same):
    per-layer token-shift, decay, in-context learning rate, key terms, zero output projection,
    LoRA down projections 0, GroupNorm weight ``((1 + layer) / n_layers) ** 0.7``."""
    torch.manual_seed(0)
    C, H = 64, 2
    model = RWKV7(d_model=C, n_layers=n_layers, n_heads=H)
    for i, mixer in enumerate(_mixers(model)):
        ref = _rwkv7_official(C, C // H, i, n_layers)
        torch.testing.assert_close(mixer.mu.detach().double(), ref["mu"], atol=1e-6, rtol=0)
        for name in ("w0", "a0", "k_k", "k_a"):
            torch.testing.assert_close(getattr(mixer, name).detach().double(), ref[name], atol=1e-5, rtol=0)
        torch.testing.assert_close(mixer.o_norm.weight.detach().double(), ref["ln_x"], atol=1e-6, rtol=0)
        assert torch.equal(mixer.r_k.detach(), torch.full_like(mixer.r_k, -0.04))
        assert torch.equal(mixer.o_proj.weight.detach(), torch.zeros_like(mixer.o_proj.weight))
        assert mixer.k_proj.weight.abs().max() <= 0.05 / C**0.5
        assert mixer.r_proj.weight.abs().max() <= 0.5 / C**0.5
        assert mixer.v_proj.weight.abs().max() <= 0.5 / C**0.5
        for lora in (mixer.w_lora, mixer.a_lora, mixer.g_lora):
            assert torch.equal(lora.down.weight.detach(), torch.zeros_like(lora.down.weight))
            up = lora.up.weight.detach().double()  # [C, rank]: orthogonal columns, gain 0.1
            torch.testing.assert_close(up.T @ up, 0.01 * torch.eye(up.shape[1], dtype=torch.float64), atol=1e-6, rtol=0)


def test_rwkv7_rejects_bad_layer_index():
    from swar_bench.mechanisms.rwkv7 import RWKV7Mixer

    with pytest.raises(ValueError, match="layer_idx=2"):
        RWKV7Mixer(64, layer_idx=2, n_layers=2)


# ---------------------------------------------------------------- mLSTM


@pytest.mark.parametrize("n_layers", [1, 4])
def test_mlstm_init_matches_xlstm(n_layers):
    """NX-AI/xlstm ``xlstm/blocks/mlstm/cell.py`` ``mLSTMCell.reset_parameters`` (gate weights 0,
    forget bias linspace(3, 6), input bias normal(0, 0.1)), ``xlstm/blocks/mlstm/layer.py``
    ``mLSTMLayer.reset_parameters`` and ``xlstm/components/init.py``: q/k/v ``small_init``
    (std sqrt(2 / (5 d))), the output projection ``wang_init`` (std 2 / n_blocks / sqrt(d))."""
    torch.manual_seed(0)
    d = 128
    model = mLSTM(d_model=d, n_layers=n_layers, n_heads=4)
    for mixer in _mixers(model):
        assert torch.equal(mixer.gate_proj.weight.detach(), torch.zeros_like(mixer.gate_proj.weight))
        assert torch.equal(mixer.f_bias.detach(), torch.linspace(3.0, 6.0, 4))
        assert mixer.qk_proj.weight.std().item() == pytest.approx(math.sqrt(2 / (5 * d)), rel=0.05)
        assert mixer.v_proj.weight.std().item() == pytest.approx(math.sqrt(2 / (5 * d)), rel=0.05)
        assert mixer.o_proj.weight.std().item() == pytest.approx(2 / n_layers / math.sqrt(d), rel=0.05)


# ---------------------------------------------------------------- backbone order and flags


class _FlaggedMixer(Mixer):
    """A mixer with a special init (``reset_parameters``), a ``_no_reinit`` bias and a submodule
    flagged ``_is_hf_initialized``, to check the backbone honours all three."""

    def __init__(self, d_model: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model, bias=True)
        self.keep = nn.Linear(d_model, d_model, bias=True)
        self.keep.bias._no_reinit = True
        self.hf = nn.Linear(d_model, d_model, bias=False)
        self.hf._is_hf_initialized = True
        self.decay = nn.Parameter(torch.zeros(d_model, 2))
        with torch.no_grad():
            self.keep.bias.fill_(3.0)
            self.hf.weight.fill_(5.0)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            self.proj.weight.fill_(7.0)
            self.decay.fill_(-1.0)
        self.decay._no_weight_decay = True

    def init_state(self, batch_size, device=None, dtype=None):
        return torch.zeros(batch_size, 1, device=device, dtype=dtype)

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        return 0

    def forward(self, x, state):
        return self.proj(x) + self.keep(x) + self.hf(x) + self.decay[:, 0], state


def test_backbone_init_runs_before_mixer_reset_and_respects_flags():
    """Ordering of fla's ``PreTrainedModel._init_weights`` / mamba_ssm's ``MixerModel``: the
    generic init must not overwrite a mixer's own; ``_no_reinit`` (mamba_ssm
    ``mixer_seq_simple.py``) and ``_is_hf_initialized`` (HF transformers, fla layers) are kept."""
    model = MixerLM(lambda i: _FlaggedMixer(16), vocab_size=8, d_model=16, n_layers=2)
    for mixer in _mixers(model):
        assert torch.all(mixer.proj.weight == 7.0)  # reset_parameters ran last
        assert torch.all(mixer.proj.bias == 0.0)  # the generic init zeroed the flagless bias
        assert torch.all(mixer.keep.bias == 3.0)  # _no_reinit
        assert mixer.keep.weight.std().item() == pytest.approx(0.02, rel=0.3)
        assert torch.all(mixer.hf.weight == 5.0)  # _is_hf_initialized
    assert model.no_weight_decay_names == _no_decay_names(model, "decay")


def _decayed(model: MixerLM) -> tuple[set[str], set[str]]:
    module = TBPTTModule(model, weight_decay=0.1)
    opt = module.configure_optimizers()["optimizer"]
    names = {id(p): n for n, p in model.named_parameters()}
    decayed, free = set(), set()
    for group in opt.param_groups:
        (decayed if group["weight_decay"] > 0 else free).update(names[id(p)] for p in group["params"])
    return decayed, free


@pytest.mark.parametrize("cls", [Mamba, Mamba2, GatedDeltaNet, RWKV7])
def test_no_weight_decay_params_are_exempt_in_adamw(cls):
    """mamba_ssm and fla flag A_log, D, dt_bias (and RWKV-LM decays only 2-D ``.weight``
    matrices): the optimizer decays matrices only, never a flagged parameter (Mamba's A_log is a
    [d_inner, d_state] matrix, so dimension alone does not exempt it)."""
    torch.manual_seed(0)
    model = cls(d_model=64, n_layers=2)
    decayed, free = _decayed(model)
    assert model.no_weight_decay_names <= free
    assert not (model.no_weight_decay_names & decayed)
    assert decayed == {n for n, p in model.named_parameters() if p.dim() >= 2} - model.no_weight_decay_names


@settings(max_examples=8, deadline=None)
@given(
    d_state=st.integers(1, 24),
    n_layers=st.integers(1, 4),
    d_model=st.sampled_from([16, 32, 48]),
    expand=st.integers(1, 2),
)
def test_mamba_special_init_survives_backbone_property(d_state, n_layers, d_model, expand):
    """For any size, the built Mamba keeps mamba_simple.py's A_log / D exactly and the
    mixer_seq_simple.py out_proj bound: the backbone's generic init never overwrites them, and
    exactly A_log, D and dt_bias are exempt from weight decay."""
    model = Mamba(d_model=d_model, n_layers=n_layers, d_state=d_state, expand=expand)
    for mixer in _mixers(model):
        expected = torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(mixer.d_inner, 1)
        assert torch.equal(mixer.A_log.detach(), expected)
        assert torch.all(mixer.D == 1.0)
        _dt_in_range(mixer.dt_bias)
        bound = _kaiming_bound(mixer.d_inner) / math.sqrt(2 * n_layers)
        assert mixer.out_proj.weight.abs().max() <= bound
    _, free = _decayed(model)
    assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "D", "dt_bias") <= free


def test_short_convolution_generic_init_is_fla():
    """fla ``fla/modules/convolution.py``: ShortConvolution is an ``nn.Conv1d``, so fla's model
    ``_init_weights`` draws its weight from ``normal(0, 0.02)``; the backbone does the same."""
    torch.manual_seed(0)
    conv = ShortConvolution(256, 4)
    MixerLM._init_weights(conv)
    assert conv.weight.std().item() == pytest.approx(0.02, rel=0.1)


@pytest.mark.parametrize("cls", [Mamba, Mamba2, mLSTM])
def test_special_init_without_convolution(cls):
    """``conv_size=0`` (no convolution): the mixers' own initialisation still runs (mamba_ssm /
    xlstm as above) and skips the absent conv."""
    torch.manual_seed(0)
    model = cls(d_model=64, n_layers=2, conv_size=0)
    mixer = _mixers(model)[0]
    assert getattr(mixer.conv, "weight", None) is None
    if cls is mLSTM:
        assert torch.equal(mixer.f_bias.detach(), torch.linspace(3.0, 6.0, mixer.n_heads))
    else:
        assert torch.all(mixer.D == 1.0)
        assert model.no_weight_decay_names == _no_decay_names(model, "A_log", "D", "dt_bias")
