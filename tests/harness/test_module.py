"""TBPTTModule: HF shift across chunks, chunked evaluation, optimizer steps, LR schedule, NaN stop."""

from __future__ import annotations

import math

import lightning.pytorch as pl
import pytest
import torch
import torch.nn.functional as F

from harness.nan_mechanism import NaNAfter
from swar_bench.datamodules.passkey_swar import PasskeySwarBatches, PasskeySwarDataModule
from swar_bench.mechanisms import GRU, GatedDeltaNet, Oracle
from swar_bench.module import TBPTTModule, shift_targets, warmup_cosine


def _batch(n=32, indices=(0, 1, 2), split="validation"):
    return PasskeySwarBatches("generate")[(split, n, tuple(indices))]


def _trainer(**kw):
    base = {
        "accelerator": "cpu", "devices": 1, "logger": False, "enable_checkpointing": False,
        "enable_progress_bar": False, "enable_model_summary": False, "num_sanity_val_steps": 0,
    }
    base.update(kw)
    return pl.Trainer(**base)


class ChunkSpy(torch.nn.Module):
    """Wraps a mechanism and records the length of every chunk it is called on."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.vocab_size = inner.vocab_size
        self.lengths: list[int] = []
        self.state_in_graph: list[bool] = []  # per call: does the incoming state carry autograd history?

    def init_state(self, batch_size, device=None, dtype=None):
        return self.inner.init_state(batch_size, device, dtype)

    def detach_state(self, state):
        return self.inner.detach_state(state)

    def forward(self, input_ids, state):
        from swar_bench.mechanisms import iter_state_tensors

        self.lengths.append(input_ids.shape[1])
        self.state_in_graph.append(any(t.grad_fn is not None for t in iter_state_tensors(state)))
        return self.inner(input_ids, state)


def test_shift_targets():
    labels = torch.tensor([[-100, 5, -100, 7]])
    assert shift_targets(labels).tolist() == [[5, -100, 7, -100]]


def test_chunked_evaluation_equals_one_pass_reference():
    torch.manual_seed(0)
    mech = GatedDeltaNet(d_model=16, n_layers=1, n_heads=2).eval()
    batch = _batch()
    spy = ChunkSpy(mech)
    out = TBPTTModule(spy, tbptt_steps=7).evaluate_batch(batch)
    assert max(spy.lengths) == 7  # streamed: never more than tbptt_steps tokens at once
    # reference: one call on the whole sequence, HF shift by hand
    with torch.no_grad():
        logits, _ = mech(batch.input_ids, mech.init_state(3))
    labels = batch.labels
    rows, cols = torch.nonzero(labels[:, 1:] != -100, as_tuple=True)
    ref_logits = logits[rows, cols]
    ref_target = labels[rows, cols + 1]
    assert torch.equal(out.target, ref_target)
    assert torch.equal(out.row, rows)
    assert torch.equal(out.pred, ref_logits.argmax(-1))
    torch.testing.assert_close(out.loss, F.cross_entropy(ref_logits, ref_target, reduction="none"), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(out.confidence, ref_logits.softmax(-1).max(-1).values, atol=1e-5, rtol=1e-4)
    assert torch.equal(out.answer_kind, batch.answer_kind[rows, cols + 1])
    assert torch.equal(out.key_age, batch.key_age[rows, cols + 1])
    assert out.n_writes == 32 and out.batch_size == 3
    assert out.pred.dtype == torch.int64 and out.loss.dtype == torch.float32
    # a chunk boundary right before an answer: the last logit of a chunk predicts the next label
    first_answer = int(torch.nonzero(labels[0] != -100)[0])
    spy.lengths.clear()
    out2 = TBPTTModule(spy, tbptt_steps=first_answer).evaluate_batch(batch)
    assert spy.lengths[0] == first_answer
    assert torch.equal(out2.target, out.target) and torch.equal(out2.pred, out.pred)


def test_oracle_is_exact_through_the_module():
    out = TBPTTModule(Oracle(), tbptt_steps=13).evaluate_batch(_batch(64, range(4)))
    assert out.target.numel() > 0 and torch.equal(out.pred, out.target)


def test_warmup_cosine_schedule():
    assert warmup_cosine(0, 4, 20, 0.1) == pytest.approx(0.25)
    assert warmup_cosine(3, 4, 20, 0.1) == pytest.approx(1.0)
    assert warmup_cosine(12, 4, 20, 0.1) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert warmup_cosine(20, 4, 20, 0.1) == pytest.approx(0.1)
    assert warmup_cosine(99, 4, 20, 0.1) == pytest.approx(0.1)
    assert warmup_cosine(99, 4, None, 0.1) == 1.0


@pytest.mark.parametrize("bad", [{"tbptt_steps": 0}, {"lr": 0.0}, {"min_lr_ratio": 2.0}])
def test_bad_arguments_raise(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        TBPTTModule(GRU(d_model=8, n_layers=1), **bad)


def test_not_a_mechanism_raises():
    with pytest.raises(ValueError, match="not a ContextMechanism"):
        TBPTTModule(torch.nn.ReLU())


def _fit_one_batch(step_per_chunk, tbptt_steps, max_steps=100):
    torch.manual_seed(0)
    mech = ChunkSpy(GRU(d_model=8, n_layers=1))
    model = TBPTTModule(mech, lr=1e-2, warmup_steps=0, tbptt_steps=tbptt_steps, step_per_chunk=step_per_chunk)
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=2)
    trainer = _trainer(max_epochs=1, max_steps=max_steps, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    return trainer, model


def test_one_optimizer_step_per_chunk_or_per_sequence():
    trainer, model = _fit_one_batch(True, 50)
    # one batch of N=32: ceil(T / 50) chunks of at most 50 tokens, one step each
    chunks = math.ceil(model.tokens_seen / 2 / 50)
    assert model.mechanism.lengths[:-1] == [50] * (chunks - 1) and len(model.mechanism.lengths) == chunks
    assert trainer.global_step == chunks >= 2
    # truncated BPTT: every chunk starts from a state cut from the previous chunk's graph
    assert model.mechanism.state_in_graph == [False] * chunks
    assert math.isfinite(model.last_train_loss) and model.last_train_loss > 0
    trainer, model = _fit_one_batch(False, 50)
    assert trainer.global_step == 1 and model.mechanism.state_in_graph == [False] * len(model.mechanism.lengths)
    # with one chunk covering the sequence, both modes make the same update
    _, a = _fit_one_batch(True, 1000)
    _, b = _fit_one_batch(False, 1000)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb)


def test_non_finite_loss_stops_before_update_and_checkpoint(tmp_path):
    torch.manual_seed(0)
    model = TBPTTModule(NaNAfter(after=3), lr=1e-2, warmup_steps=0, tbptt_steps=1000)
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=100)
    ckpt = pl.callbacks.ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=1, save_last=True, save_top_k=-1)
    trainer = _trainer(max_steps=10, limit_val_batches=0, enable_checkpointing=True, callbacks=[ckpt])
    with pytest.raises(FloatingPointError, match=r"non-finite training loss .* at global step 3"):
        trainer.fit(model, datamodule=dm)
    assert all(torch.isfinite(p).all() for p in model.parameters())  # the bad step never applied
    last = torch.load(tmp_path / "last.ckpt", weights_only=False)
    assert last["global_step"] == 3
    assert all(torch.isfinite(v).all() for v in last["state_dict"].values() if v.is_floating_point())
    assert sorted(p.name for p in tmp_path.glob("*.ckpt") if p.name != "last.ckpt") == [
        "epoch=0-step=1.ckpt", "epoch=0-step=2.ckpt", "epoch=0-step=3.ckpt"
    ]


def test_parameter_free_mechanism_trains_without_optimizer():
    model = TBPTTModule(Oracle(), tbptt_steps=64)
    assert model.configure_optimizers() is None
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=4, eval_examples=4)
    trainer = _trainer(max_epochs=1)
    trainer.fit(model, datamodule=dm)
    assert trainer.global_step == 0 and model.tokens_seen > 0
    # the oracle's answers are exact, so its loss is tiny
    assert model.last_train_loss < 1e-3


def test_parameter_free_mechanism_stops_at_max_steps():
    model = TBPTTModule(Oracle(), tbptt_steps=64)
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=1000, eval_examples=4)
    trainer = _trainer(max_steps=3, limit_val_batches=0)
    trainer.fit(model, datamodule=dm)
    assert model.free_steps == 3 and trainer.global_step == 0


def test_optimizer_state_ids_follow_parameter_order():
    torch.manual_seed(0)
    model = TBPTTModule(GatedDeltaNet(d_model=16, n_layers=2, n_heads=2), weight_decay=0.1)
    optimizer = model.configure_optimizers()["optimizer"]
    params = list(model.mechanism.parameters())
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer.step()
    state = optimizer.state_dict()
    ids = [i for g in state["param_groups"] for i in g["params"]]
    assert ids == list(range(len(params)))  # id i is the i-th parameter of the model
    for i, p in enumerate(params):
        assert state["state"][i]["exp_avg"].shape == p.shape
    decay = {i for g in state["param_groups"] if g["weight_decay"] == 0.1 for i in g["params"]}
    assert decay == {i for i, p in enumerate(params) if p.dim() >= 2} and 0 < len(decay) < len(params)


def test_vocabulary_check_follows_the_task_parameters():
    from swar_bench.mechanisms import GRU
    from swar_bench.module import check_task_fits
    from swar_bench.tasks.passkey_swar import PasskeySwarParams

    check_task_fits(GRU(vocab_size=40, d_model=8, n_layers=1))  # the card's 40 tokens
    check_task_fits(GRU(vocab_size=48, d_model=8, n_layers=1))  # spare logits are allowed
    with pytest.raises(ValueError, match=r"^vocab_size=40 of GRU is too small for passkey_swar; expected >= 44 "):
        check_task_fits(GRU(vocab_size=40, d_model=8, n_layers=1), PasskeySwarParams(n_keys=20))


def test_fused_adamw_equals_the_for_each_form_after_a_few_steps():
    torch.manual_seed(0)
    model = TBPTTModule(GatedDeltaNet(d_model=16, n_layers=2, n_heads=2), weight_decay=0.1, warmup_steps=0)
    fused = model.configure_optimizers()["optimizer"]
    assert all(g["fused"] for g in fused.param_groups)  # plain fp32 CPU parameters, no trainer
    copy = TBPTTModule(GatedDeltaNet(d_model=16, n_layers=2, n_heads=2), weight_decay=0.1, warmup_steps=0)
    copy.load_state_dict(model.state_dict())
    groups = [{k: v for k, v in g.items() if k != "fused"} for g in fused.param_groups]
    plain = torch.optim.AdamW(_same_groups(model, copy, groups), foreach=True)
    gen = torch.Generator().manual_seed(1)
    for _ in range(4):
        for p, q in zip(model.mechanism.parameters(), copy.mechanism.parameters()):
            g = torch.randn(p.shape, generator=gen)
            p.grad, q.grad = g.clone(), g.clone()
        fused.step()
        plain.step()
    for p, q in zip(model.mechanism.parameters(), copy.mechanism.parameters()):
        assert (p - q).abs().max().item() <= 1e-6


def _same_groups(model, copy, groups):
    """The param groups of ``model``'s optimizer, rebuilt over ``copy``'s parameters."""
    index = {id(p): i for i, p in enumerate(model.mechanism.parameters())}
    params = list(copy.mechanism.parameters())
    return [dict(g, params=[params[index[id(p)]] for p in g["params"]]) for g in groups]


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_gradient_clipping_works_with_the_optimizer_each_precision_gets(precision):
    torch.manual_seed(0)
    model = TBPTTModule(GatedDeltaNet(d_model=16, n_layers=1, n_heads=2), lr=1e-2, grad_clip=1e-3, warmup_steps=0)
    norms = []
    model.on_before_optimizer_step = lambda optimizer: norms.append(
        torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None])).item()
    )
    dm = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=2, examples_per_epoch=100)
    trainer = _trainer(max_steps=2, limit_val_batches=0, precision=precision)
    trainer.fit(model, datamodule=dm)
    fused = model.optimizers().optimizer.param_groups[0]["fused"]
    assert bool(fused) == (precision == "32-true")  # mixed precision refuses to clip for a fused one
    assert trainer.global_step == 2 and math.isfinite(model.last_train_loss)
    assert len(norms) == 2 and max(norms) <= 1e-3 * 1.01  # clipped to grad_clip before each step
