"""MQAR through the harness: DataModule batches and cache, the Zoology backbone, supervised-only
logits, the MQAR accuracy callback, the CLI end to end."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.callbacks import AnswerTypeAccuracy, Calibration, MQARAccuracy, MQARCounts
from swar_bench.callbacks.mqar_accuracy import gap_band_labels
from swar_bench.datamodules import mqar as mqar_module
from swar_bench.datamodules.batches import Batch
from swar_bench.datamodules.mqar import MQARBatches, MQARData
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule, TrainBatchSampler
from swar_bench.mechanisms import GRU, CausalAttention, GatedDeltaNet, Oracle
from swar_bench.mechanisms.zoology_backbone import ZoologyBackbone
from swar_bench.module import TBPTTModule, check_task_fits, shift_targets
from swar_bench.tasks.mqar import IGNORE_INDEX, multiquery_ar, query_gaps
from swar_bench.tasks.oracle import AR_VALID

SMALL = {"vocab_size": 64, "input_seq_len": 16, "num_kv_pairs": 2,
         "num_train_examples": 40, "num_test_examples": 12}


def _dm(**kwargs):
    mqar = {**SMALL, **kwargs.pop("mqar", {})}
    kwargs.setdefault("batch_size", 4)
    kwargs.setdefault("examples_per_epoch", 16)
    kwargs.setdefault("eval_examples", 12)
    return PasskeySwarDataModule(task="mqar", mqar=mqar, **kwargs)


# ---------------------------------------------------------------- batches


def test_batch_is_zoologys_example_in_the_harness_convention():
    data = MQARData(**SMALL)
    batch = MQARBatches(data)[("train", 2, (0, 1, 2))]
    inputs, labels = multiquery_ar(64, 40, 16, data.train_seed, num_kv_pairs=2, random_non_queries=False)
    assert isinstance(batch, Batch) and all(v.dtype == torch.int64 for v in vars(batch).values())
    np.testing.assert_array_equal(batch.input_ids.numpy(), inputs[:3])
    # the module's shift recovers Zoology's labels: labels[t] is the target after inputs[t]
    np.testing.assert_array_equal(shift_targets(batch.labels).numpy(), labels[:3])
    supervised = batch.labels != IGNORE_INDEX
    assert (batch.answer_kind[supervised] == AR_VALID).all() and (batch.answer_kind[~supervised] == 0).all()
    gaps = query_gaps(inputs[:3], labels[:3], 2)
    np.testing.assert_array_equal(shift_targets(batch.key_age).clamp_min(0).numpy()[:, :-1], gaps[:, :-1])
    assert (batch.key_age[~supervised] == -1).all()
    assert batch.n_writes.tolist() == [2, 2, 2] and batch.seed.tolist() == [0, 1, 2]


def test_indices_wrap_and_validation_reads_the_test_segment():
    ds = MQARBatches(MQARData(**SMALL))
    np.testing.assert_array_equal(ds[("train", 2, (40, 41))].input_ids, ds[("train", 2, (0, 1))].input_ids)
    np.testing.assert_array_equal(ds[("validation", 2, (3,))].input_ids, ds[("test", 2, (3,))].input_ids)
    assert (ds[("test", 2, (0,))].input_ids != ds[("train", 2, (0,))].input_ids).any()
    assert ds.split_size("train", 2) == 40 and ds.split_size("validation", 2) == 12
    filler = ds[("test", 2, ())]
    assert filler.seed.tolist() == [-1] and (filler.labels == IGNORE_INDEX).all()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 10), st.integers(0, 2**32 - 1), st.integers(1, 2))
def test_conversion_keeps_every_answer(n, extra, seed, passes):
    T = 2 * (n * passes + n + extra)
    data = MQARData(vocab_size=T + 1 + 4 * n, input_seq_len=T, num_kv_pairs=n, num_passes=passes,
                    num_train_examples=5, num_test_examples=1, train_seed=seed, random_non_queries=True)
    batch = MQARBatches(data)[("train", n, tuple(range(5)))]
    inputs, labels = multiquery_ar(data.vocab_size, 5, T, seed, num_kv_pairs=n, num_passes=passes)
    np.testing.assert_array_equal(batch.input_ids.numpy(), inputs)
    np.testing.assert_array_equal(shift_targets(batch.labels).numpy(), labels)
    assert int((batch.labels != IGNORE_INDEX).sum()) == 5 * n  # Zoology's last position is never a query
    age = shift_targets(batch.key_age)[labels != IGNORE_INDEX]
    assert (age >= 2).all() and (age <= T).all()


# ---------------------------------------------------------------- the DataModule


def test_training_stream_reads_the_segment_in_order_then_wraps():
    dm = _dm()
    dm.setup("fit")
    loader = dm.train_dataloader()
    assert isinstance(loader.batch_sampler or loader.sampler, TrainBatchSampler)
    seen = []
    for batch in loader:
        dm.stream.consume(int(batch.n_writes[0]))
        seen += batch.seed.tolist()
    assert seen == list(range(16))
    seen = []
    for _ in range(3):
        for batch in dm.train_dataloader():
            dm.stream.consume(int(batch.n_writes[0]))
            seen += batch.seed.tolist()
    assert seen == [i % 40 for i in range(16, 64)]


def test_eval_loader_covers_the_test_segment_once():
    dm = _dm(eval_batch_size=5)
    dm.setup("validate")
    seeds = [s for b in dm.val_dataloader() for s in b.seed.tolist()]
    assert seeds == list(range(12))
    assert dm.train_configs == dm.val_configs == dm.test_configs == (2,)


@pytest.mark.parametrize("kwargs, match", [
    ({"task": "lm"}, "task='lm' is invalid; expected one of passkey_swar, mqar"),
    ({"train_configs": [32]}, "train_configs is passkey_swar's; expected it unset with task=mqar"),
    ({"test_configs": ["n64"]}, "test_configs is passkey_swar's"),
    ({"task_params": {"w": 8}}, "task_params is passkey_swar's"),
    ({"source": "irodkin/passkey_swar"}, "source is passkey_swar's"),
    ({"mqar": {"num_keys": 3}}, "mqar has unknown field"),
    ({"mqar": {"input_seq_len": 15}}, "MQAR input_seq_len=15: expected an even length"),
    ({"mqar": {"vocab_size": 16}}, "MQAR vocab_size=16: expected more than input_seq_len=16"),
    ({"mqar": {"num_test_examples": 0}}, "MQAR num_examples=0: expected a positive integer"),
    ({"mqar": {"test_seed": -3}}, r"MQAR seed=-3: expected an integer in \[0, 2\*\*32\)"),
])
def test_refusals_are_one_line(kwargs, match):
    task = kwargs.pop("task", "mqar")
    mqar = {**SMALL, **kwargs.pop("mqar", {})}
    with pytest.raises(ValueError, match=match) as info:
        PasskeySwarDataModule(task=task, mqar=mqar, **kwargs)
    assert "\n" not in str(info.value)


def test_mqar_fields_without_the_task_and_curriculum_are_refused():
    with pytest.raises(ValueError, match="mqar is set but task=passkey_swar"):
        PasskeySwarDataModule(mqar=SMALL)
    with pytest.raises(ValueError, match="task=mqar has one configuration"):
        _dm().set_train_n(2)


def test_passkey_default_is_unchanged():
    dm = PasskeySwarDataModule()
    assert dm.task == "passkey_swar" and dm.mqar is None
    assert dm.train_configs == (32, 64, 128, 256)


def test_cache_is_written_once_and_reused(tmp_path, monkeypatch):
    dm = _dm(mqar={"cache_dir": str(tmp_path)})
    dm.prepare_data()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("mqar-") and files[0].endswith(".npz")
    first = dm.dataset[("train", 2, (0, 5))]

    def refuse(params):
        raise AssertionError("generated again despite the cache")

    monkeypatch.setattr(mqar_module, "_segment_arrays", refuse)
    again = _dm(mqar={"cache_dir": str(tmp_path)})
    again.setup("fit")
    for key, value in vars(again.dataset[("train", 2, (0, 5))]).items():
        assert torch.equal(value, getattr(first, key)), key
    # other parameters, another file
    assert MQARData(**{**SMALL, "cache_dir": str(tmp_path), "test_seed": 5}).cache_path() != again.mqar.cache_path()


def test_unreadable_cache_is_regenerated(tmp_path):
    data = MQARData(**SMALL, cache_dir=str(tmp_path))
    with open(data.cache_path(), "wb") as handle:
        handle.write(b"not an npz")
    arrays = MQARBatches(data).load()
    assert arrays["train"]["inputs"].shape == (40, 16)
    assert MQARBatches(data).load()["train"]["inputs"].shape == (40, 16)  # the replaced file reads


# ---------------------------------------------------------------- the model


def _attention(vocab=64, **kwargs):
    torch.manual_seed(0)
    return CausalAttention(vocab_size=vocab, d_model=16, n_layers=2, n_heads=1, mlp_ratio=1, **kwargs)


@pytest.mark.parametrize("state_mixer", ["identity", "none", "mlp"])
def test_zoology_backbone_is_streaming_exact(state_mixer):
    model = ZoologyBackbone(_attention(), state_mixer=state_mixer, max_position_embeddings=16).eval()
    ids = torch.randint(0, 64, (3, 16))
    whole, _ = model(ids, model.init_state(3))
    state = model.init_state(3)
    parts = []
    for a, b in ((0, 5), (5, 6), (6, 16)):
        logits, state = model(ids[:, a:b], state)
        parts.append(logits)
    torch.testing.assert_close(torch.cat(parts, 1), whole, rtol=1e-5, atol=1e-5)
    assert int(state[1][0]) == 16


def test_zoology_backbone_structure():
    inner = _attention()
    model = ZoologyBackbone(inner, state_mixer="identity", max_position_embeddings=16)
    assert model.project.__self__ is model and inner.head.weight is inner.embedding.weight
    assert all(b.mlp is None and b.mlp_norm is not None for b in inner.blocks)
    # tied matrix counted once; positions 16 x 16 added; MLP gone
    expected = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert model.n_params == expected
    assert not any("mlp.fc" in name for name, _ in model.named_parameters())
    none = ZoologyBackbone(_attention(), state_mixer="none")
    assert all(b.mlp_norm is None for b in none.lm.blocks)
    assert model.state_bytes(2, 16) == inner.state_bytes(2, 16) + 16
    with pytest.raises(ValueError, match="position 16 is beyond max_position_embeddings=16"):
        model(torch.zeros(1, 17, dtype=torch.int64))


def test_zoology_backbone_identity_block_is_zoologys():
    # Zoology's TransformerBlock with an Identity state mixer adds norm2(residual) to the
    # residual stream; with the mixer's output zeroed the features are norm_f(x + norm2(x)) per layer.
    inner = _attention()
    model = ZoologyBackbone(inner, state_mixer="identity").eval()
    for block in inner.blocks:
        torch.nn.init.zeros_(block.mixer.o_proj.weight)
    ids = torch.randint(0, 64, (2, 8))
    x = inner.embedding(ids)
    for block in inner.blocks:
        x = x + block.mlp_norm(x)
    features, _ = model.forward_features(ids)
    torch.testing.assert_close(features, inner.norm(x))


def test_zoology_backbone_refusals():
    with pytest.raises(ValueError, match="is not a MixerLM"):
        ZoologyBackbone(Oracle())
    with pytest.raises(ValueError, match="state_mixer='glu': expected one of identity, none, mlp"):
        ZoologyBackbone(_attention(), state_mixer="glu")
    with pytest.raises(ValueError, match="max_position_embeddings=-1"):
        ZoologyBackbone(_attention(), max_position_embeddings=-1)
    with pytest.raises(ValueError, match="embed_dropout=1.0"):
        ZoologyBackbone(_attention(), embed_dropout=1.0)


@pytest.mark.parametrize("build", [
    lambda: _attention(),
    lambda: ZoologyBackbone(_attention(), max_position_embeddings=16),
    lambda: GatedDeltaNet(vocab_size=64, d_model=16, n_layers=1, n_heads=2),
])
def test_supervised_logits_give_the_same_loss_and_gradients(build):
    data = MQARData(**SMALL)
    batch = MQARBatches(data)[("train", 2, tuple(range(8)))]
    grads, losses = [], []
    for sparse in (False, True):
        torch.manual_seed(0)
        mechanism = build()
        module = TBPTTModule(mechanism, tbptt_steps=16, supervised_logits=sparse)
        module.eval()  # no dropout: the two passes must see the same function
        targets = shift_targets(batch.labels)
        state = mechanism.init_state(8)
        _, (loss_sum, count) = module._chunk_loss(state, batch.input_ids, targets)
        (loss_sum / count).backward()
        losses.append(loss_sum.detach())
        grads.append({n: p.grad.clone() for n, p in mechanism.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=1e-6)
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-5, atol=1e-7, msg=name)


def test_supervised_logits_need_features():
    with pytest.raises(ValueError, match="supervised_logits=True: mechanism Oracle has no forward_features"):
        TBPTTModule(Oracle(), supervised_logits=True)
    TBPTTModule(GRU(vocab_size=40, d_model=8, n_layers=1), supervised_logits=False)


def test_vocabulary_check_for_mqar():
    data = MQARData(**SMALL)
    check_task_fits(_attention(vocab=64), mqar=data)
    with pytest.raises(ValueError, match="vocab_size=40 of CausalAttention is too small for MQAR; expected >= 64"):
        check_task_fits(_attention(vocab=40), mqar=data)
    with pytest.raises(ValueError, match="reads passkey_swar's rules"):
        check_task_fits(Oracle(), mqar=MQARData(**{**SMALL, "vocab_size": 20}))


# ---------------------------------------------------------------- the callback


def test_mqar_counts_by_band():
    metric = MQARCounts()
    pred = torch.tensor([5, 6, 7, 8, 9])
    target = torch.tensor([5, 0, 7, 8, 0])
    gaps = torch.tensor([2, 4, 6, 40, 3000])
    metric.update(pred, target, gaps)
    out = {k: v.reshape(-1).tolist() for k, v in metric.compute().items()}
    assert out["correct"] == [3] and out["count"] == [5]
    labels = gap_band_labels()
    assert labels[0] == "1-4" and labels[-1] == ">2048"
    count = dict(zip(labels, out["gap_count"]))
    correct = dict(zip(labels, out["gap_correct"]))
    assert count["1-4"] == 2 and correct["1-4"] == 1
    assert count["5-8"] == 1 and correct["5-8"] == 1
    assert count["33-64"] == 1 and correct["33-64"] == 1
    assert count[">2048"] == 1 and correct[">2048"] == 0
    with pytest.raises(ValueError, match="expected 1-D tensors of one length M"):
        metric.update(pred, target[:2], gaps)


def test_each_callback_measures_its_own_task():
    class Trainer:
        datamodule = _dm()

    assert MQARAccuracy().serves(Trainer())
    assert not AnswerTypeAccuracy().serves(Trainer()) and not Calibration().serves(Trainer())
    Trainer.datamodule = PasskeySwarDataModule()
    assert AnswerTypeAccuracy().serves(Trainer()) and not MQARAccuracy().serves(Trainer())


# ---------------------------------------------------------------- end to end


def test_cli_fits_and_tests_mqar(tmp_path, capsys):
    from swar_bench.lightning_cli import main

    run = tmp_path / "runs"
    common = [
        "--config", "configs/mqar/figure2_t64.yaml",
        "--model.mechanism.init_args.mechanism.init_args.vocab_size=64",
        "--model.mechanism.init_args.mechanism.init_args.d_model=16",
        "--model.mechanism.init_args.max_position_embeddings=16",
        "--data.mqar.vocab_size=64", "--data.mqar.input_seq_len=16", "--data.mqar.num_kv_pairs=2",
        "--data.mqar.num_train_examples=64", "--data.mqar.num_test_examples=32",
        f"--data.mqar.cache_dir={tmp_path / 'cache'}",
        "--data.batch_size=16", "--data.eval_batch_size=16", "--data.examples_per_epoch=64",
        "--data.eval_examples=32", "--model.tbptt_steps=16", "--model.max_steps=8",
        "--trainer.max_epochs=2", "--trainer.enable_progress_bar=false",
        f"--trainer.logger.init_args.save_dir={run}",
    ]
    assert main(["fit", *common]) == 0
    folders = sorted(run.glob("mqar_t64/ZoologyBackbone-CausalAttention/version_*"))  # named after both
    assert len(folders) == 1
    ckpt = folders[0] / "checkpoints" / "last.ckpt"
    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    assert saved["global_step"] == 8
    assert saved["hyper_parameters"]["supervised_logits"] is True
    early = [(k, v) for k, v in saved["callbacks"].items() if k.startswith("EarlyStopping")]
    assert len(early) == 1 and "val/mqar/acc" in early[0][0]
    assert 0.0 <= float(early[0][1]["best_score"]) <= 1.0  # the MQAR accuracy was logged and monitored

    capsys.readouterr()
    assert main(["test", *common, "--ckpt_path", str(ckpt)]) == 0
    table = (folders[0] / "mqar_accuracy.md").read_text()
    printed = capsys.readouterr().out
    assert "Test MQAR accuracy per query-gap band:" in printed and table.strip() in printed
    assert "Test accuracy per N x answer kind" not in printed and "Calibration:" not in printed
    assert "| all |" in table and "(64)" in table  # 32 test examples x 2 queries
    assert not (folders[0] / "answer_type_accuracy.md").exists()  # passkey's report stands aside


def test_run_folder_names_the_wrapper_and_what_it_wraps():
    from swar_bench.lightning_cli import nested_class_paths

    plain = {"class_path": "swar_bench.mechanisms.GRU", "init_args": {"d_model": 8}}
    wrapped = {"class_path": "swar_bench.mechanisms.zoology_backbone.ZoologyBackbone",
               "init_args": {"mechanism": {"class_path": "swar_bench.mechanisms.CausalAttention"}}}
    assert nested_class_paths(plain) == ["swar_bench.mechanisms.GRU"]
    assert nested_class_paths(wrapped) == ["swar_bench.mechanisms.zoology_backbone.ZoologyBackbone",
                                           "swar_bench.mechanisms.CausalAttention"]
    assert nested_class_paths(None) == [] and nested_class_paths({"init_args": {}}) == []


@pytest.mark.parametrize("build", [
    lambda: ZoologyBackbone(_attention(), max_position_embeddings=16),
    lambda: GatedDeltaNet(vocab_size=64, d_model=16, n_layers=1, n_heads=2),
])
def test_supervised_logits_evaluate_the_same_answers(build):
    """Evaluation with the head at the answer positions only: the same predictions, losses and
    confidences as the full logits (up to float summation order), chunked or not."""
    data = MQARData(**SMALL)
    batch = MQARBatches(data)[("test", 2, tuple(range(8)))]
    outs = []
    for sparse in (False, True):
        torch.manual_seed(0)
        module = TBPTTModule(build(), tbptt_steps=5, supervised_logits=sparse)
        module.eval()
        outs.append(module.evaluate_batch(batch))
    full, sparse = (out.as_dict() for out in outs)
    assert full.keys() == sparse.keys() and full["pred"].numel() == 8 * SMALL["num_kv_pairs"]
    for name in ("pred", "target", "answer_kind", "key_age", "row"):
        assert torch.equal(sparse[name], full[name]), name
    for name in ("loss", "confidence"):
        torch.testing.assert_close(sparse[name], full[name], rtol=1e-5, atol=1e-6, msg=name)
