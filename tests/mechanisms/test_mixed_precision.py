"""bf16 mixed precision: the chunk and recurrent forms run in float32 under autocast (float32_op),
pass through untouched outside it, and every mechanism trains under Lightning's
``precision="bf16-mixed"`` with a finite loss and a float32 state."""

import importlib
import inspect

import lightning.pytorch as pl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import logsigmoid, normalize

from swar_bench.mechanisms import MECHANISMS, iter_state_tensors
from swar_bench.mechanisms.ops import chunk_gated_delta_rule, chunk_simple_gla
from swar_bench.mechanisms.ops.precision import float32_op

LEARNED = [n for n in MECHANISMS if n != "Oracle"]


def _gdr_inputs(seed, T, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q, k = (normalize(torch.randn(2, T, 2, 8, generator=g), dim=-1) for _ in range(2))
    v = torch.randn(2, T, 2, 8, generator=g)
    gate = logsigmoid(torch.randn(2, T, 2, generator=g))
    beta = torch.rand(2, T, 2, generator=g)
    return tuple(t.to(dtype) for t in (q, k, v, gate, beta))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), T=st.integers(1, 80), chunk=st.sampled_from([8, 16, 32, 64]))
def test_a_chunk_form_under_autocast_is_its_float32_computation(seed, T, chunk):
    """Inputs in bfloat16 (as the projections give them under autocast): the form's output and
    state equal those of float32 inputs with autocast off, bit for bit."""
    x = _gdr_inputs(seed, T, torch.bfloat16)
    ref_o, ref_s = chunk_gated_delta_rule(*(t.float() for t in x), chunk_size=chunk)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        o, s = chunk_gated_delta_rule(*x, chunk_size=chunk)
        o2, s2 = chunk_simple_gla(x[0], x[1], x[2], x[3], chunk_size=chunk)
    assert o.dtype == s.dtype == torch.float32
    assert torch.equal(o, ref_o) and torch.equal(s, ref_s)
    ref2 = chunk_simple_gla(*(t.float() for t in x[:4]), chunk_size=chunk)
    assert torch.equal(o2, ref2[0]) and torch.equal(s2, ref2[1])


def test_outside_autocast_a_call_passes_through_untouched():
    seen = []

    @float32_op
    def op(a, state=None):
        seen.append((a.dtype, state))
        return a

    a = torch.ones(2, dtype=torch.bfloat16)
    assert op(a) is a and seen == [(torch.bfloat16, None)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = op(a, state=(torch.zeros(1, dtype=torch.bfloat16), torch.tensor([3])))
    assert out.dtype == torch.float32
    assert seen[1][1][0].dtype == torch.float32 and seen[1][1][1].dtype == torch.int64  # positions stay ints


def test_autocast_is_off_inside_the_op_and_back_on_after():
    inside = []

    @float32_op
    def op(a):
        inside.append(torch.is_autocast_enabled("cpu"))
        return a @ a

    a = torch.randn(3, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = op(a)
        assert torch.is_autocast_enabled("cpu")
        assert (a @ a).dtype == torch.bfloat16
    assert inside == [False] and y.dtype == torch.float32


def _build(name):
    cls = getattr(importlib.import_module("swar_bench.mechanisms"), name)
    kwargs = {"d_model": 32, "n_layers": 1}
    return cls(**{k: v for k, v in kwargs.items() if k in inspect.signature(cls).parameters})


@pytest.mark.parametrize("name", LEARNED)
def test_every_mechanism_fits_under_bf16_mixed_with_a_finite_loss(name):
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.module import TBPTTModule

    torch.manual_seed(0)
    model = TBPTTModule(_build(name), lr=3e-3, warmup_steps=0, tbptt_steps=64)
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=100)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, max_steps=2, limit_val_batches=0,
        precision="bf16-mixed",
    )
    trainer.fit(model, datamodule=dm)
    assert trainer.global_step >= 2 and torch.isfinite(torch.tensor(model.last_train_loss))
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, state = model.mechanism(torch.randint(0, 40, (2, 20)))
    assert all(t.dtype == torch.float32 for t in iter_state_tensors(state) if t.is_floating_point())


def _cell_forms():
    """Every public ``chunk_*`` / ``recurrent_*`` function defined in swar_bench.mechanisms.ops."""
    import pkgutil

    from swar_bench.mechanisms import ops

    forms = {}
    for info in pkgutil.walk_packages(ops.__path__, ops.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if name.startswith(("chunk_", "recurrent_")) and callable(fn) and name != "chunk_decays":
                target = getattr(fn, "__wrapped__", fn)
                if target.__module__ == info.name:
                    forms[f"{info.name}.{name}"] = fn
    return forms


def test_every_cell_form_runs_in_float32_under_autocast():
    forms = _cell_forms()
    assert len(forms) >= 20  # based, dplr, gated delta rule / product, gla, kda, log-linear, mlstm, scan, simple gla
    missing = [name for name, fn in forms.items() if not getattr(fn, "float32_op", False)]
    assert missing == []
