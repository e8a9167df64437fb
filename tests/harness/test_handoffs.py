"""The two typed hand-offs (docs/ARCHITECTURE.md, "Hand-offs"): ``Batch`` from the DataModule to
the module, ``EvalOutputs`` from the module's evaluation steps to the callbacks and the predict file."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from lightning.fabric.utilities import move_data_to_device
from lightning.pytorch.utilities.data import extract_batch_size

from swar_bench.callbacks.eval_hooks import check_eval_outputs
from swar_bench.datamodules.batches import Batch, filler_batch
from swar_bench.module import EvalOutputs


def _batch(B: int, T: int) -> Batch:
    g = torch.Generator().manual_seed(B * 1000 + T)
    return Batch(
        input_ids=torch.randint(1, 50, (B, T), generator=g),
        labels=torch.randint(-100, 50, (B, T), generator=g),
        answer_kind=torch.randint(0, 5, (B, T), generator=g),
        key_age=torch.randint(-1, 40, (B, T), generator=g),
        n_writes=torch.full((B,), 64, dtype=torch.int64),
        seed=torch.arange(B, dtype=torch.int64),
    )


def _outputs(m: int) -> EvalOutputs:
    ints = torch.arange(m, dtype=torch.int64)
    return EvalOutputs(
        pred=ints, target=ints.clone(), loss=torch.ones(m), confidence=torch.full((m,), 0.5),
        answer_kind=torch.ones(m, dtype=torch.int64), key_age=ints.clone(), row=torch.zeros(m, dtype=torch.int64),
        n_writes=32, batch_size=1,
    )


def test_lightning_moves_a_batch_whole_and_reads_its_size():
    batch = _batch(3, 7)
    moved = move_data_to_device(batch, torch.device("meta"))
    assert type(moved) is Batch and all(t.device.type == "meta" for t in vars(moved).values())
    assert all(t.device.type == "cpu" for t in vars(batch).values())  # the original is untouched
    assert extract_batch_size(batch) == 3
    assert move_data_to_device(_outputs(4), "meta").pred.device.type == "meta"


CPU_PRECISIONS = ("32-true", "64-true", "16-true", "bf16-true", "bf16-mixed", "16-mixed", 64, 32, 16, "bf16")


@settings(max_examples=30, deadline=None)
@given(precision=st.sampled_from(CPU_PRECISIONS), B=st.integers(1, 4), T=st.integers(1, 9))
def test_every_precision_plugin_passes_a_batch_through_unchanged(precision, B, T):
    """The kind of a reported fault (`fit --trainer.precision=64-true` ended in "A frozen dataclass
    was passed to `apply_to_collection`"): every precision plugin Lightning builds on this CPU passes
    each batch through ``convert_input`` before the step; it must come out a Batch with the same
    int64 tensors (the plugins cast float tensors only)."""
    import warnings

    from lightning.pytorch import Trainer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 16-mixed on CPU: Lightning's note that it runs bf16-mixed
        plugin = Trainer(accelerator="cpu", precision=precision, logger=False).precision_plugin
    batch = _batch(B, T)
    converted = plugin.convert_input(batch)
    assert type(converted) is Batch
    for name, value in vars(batch).items():
        got = getattr(converted, name)
        assert got.dtype == torch.int64 and torch.equal(got, value), (precision, name)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"labels": torch.zeros(2, 4, dtype=torch.int64)}, r"Batch.labels has shape \(2, 4\); expected \(2, 3\)"),
        ({"seed": torch.zeros(3, dtype=torch.int64)}, r"Batch.seed has shape \(3,\); expected \[2\]"),
        ({"key_age": torch.zeros(2, 3, dtype=torch.int32)}, "Batch.key_age is torch.int32; expected a torch.int64 tensor"),
        ({"n_writes": 64}, "Batch.n_writes is int; expected a torch.int64 tensor"),
    ],
)
def test_a_malformed_batch_is_refused_in_one_line(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(_batch(2, 3), **change)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 4), T=st.integers(1, 9), extra=st.integers(0, 5))
def test_padding_keeps_the_rows_and_fills_with_the_pad_values(B, T, extra):
    batch = _batch(B, T)
    padded = batch.padded(T + extra)
    assert padded.input_ids.shape == (B, T + extra)
    for name, value in Batch.PAD.items():
        assert torch.equal(getattr(padded, name)[:, :T], getattr(batch, name))
        assert (getattr(padded, name)[:, T:] == value).all()
    assert padded.n == 64 and padded.real_rows == B


def test_a_filler_batch_has_no_real_row():
    filler = filler_batch(128)
    assert filler.n == 128 and filler.real_rows == 0 and (filler.labels == -100).all()


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(0, 4), min_size=7, max_size=7))
def test_eval_outputs_of_unequal_lengths_are_refused(lengths):
    fields = dict(zip(EvalOutputs.TENSORS, (torch.zeros(n) for n in lengths)))
    if len(set(lengths)) == 1:
        assert EvalOutputs(**fields, n_writes=32, batch_size=1).pred.numel() == lengths[0]
    else:
        with pytest.raises(ValueError, match="expected 1-D tensors of one length M"):
            EvalOutputs(**fields, n_writes=32, batch_size=1)


def test_as_dict_is_what_a_weights_only_load_reads(tmp_path):
    outputs = _outputs(5)
    path = tmp_path / "p.pt"
    torch.save([outputs.as_dict()], path)
    (saved,) = torch.load(path, weights_only=True)
    assert list(saved) == [f.name for f in dataclasses.fields(EvalOutputs)]
    assert all(torch.equal(saved[k], getattr(outputs, k)) for k in EvalOutputs.TENSORS)
    assert saved["n_writes"] == 32 and saved["batch_size"] == 1


def test_callbacks_refuse_anything_but_eval_outputs():
    with pytest.raises(TypeError, match="test_step returned dict: expected swar_bench.module.EvalOutputs"):
        check_eval_outputs(_outputs(2).as_dict(), "test")
    assert check_eval_outputs(_outputs(2)).n_writes == 32
