"""MQAR's data warnings speak MQAR's terms (fault: `fit --config configs/mqar/figure2_t64.yaml` with
fewer test examples than eval_examples warned "the validation split of n4 in generate has 100
examples", passkey_swar's words: MQAR has no config n4, no source, and validation reads the test
segment)."""

from __future__ import annotations

import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule

SMALL = {"vocab_size": 64, "input_seq_len": 16, "num_kv_pairs": 4, "num_train_examples": 40}


def _warnings(split: str, eval_examples: int, num_test_examples: int) -> list[str]:
    dm = PasskeySwarDataModule(task="mqar", mqar={**SMALL, "num_test_examples": num_test_examples}, batch_size=4,
                               eval_batch_size=8, examples_per_epoch=16, eval_examples=eval_examples)
    dm.trainer = None
    dm.setup("fit")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        loader = dm.val_dataloader if split == "validation" else dm.test_dataloader
        seen = sum(len(b.seed) for b in loader())
        again = sum(len(b.seed) for b in loader())  # a second epoch: no second warning
    assert seen == again == min(eval_examples, num_test_examples)
    return [str(w.message) for w in record if issubclass(w.category, UserWarning)]


def test_the_reported_warning_names_the_test_segment_and_its_size():
    assert _warnings("validation", 3000, 100) == [
        ("eval_examples=3000: the MQAR test segment (validation reads it) has 100 examples "
         "(mqar.num_test_examples=100); evaluating those 100")
    ]


@settings(max_examples=25, deadline=None)
@given(split=st.sampled_from(["validation", "test"]), eval_examples=st.integers(1, 40),
       num_test_examples=st.integers(1, 30))
def test_an_mqar_eval_beyond_the_test_segment_warns_once_in_mqar_terms(split, eval_examples, num_test_examples):
    """Whatever eval_examples and the test segment's size, for validation and test: one warning,
    in MQAR's terms, exactly when eval_examples exceeds the segment; none otherwise."""
    expected = [] if eval_examples <= num_test_examples else [
        (f"eval_examples={eval_examples}: the MQAR test segment ({split} reads it) has {num_test_examples} "
         f"examples (mqar.num_test_examples={num_test_examples}); evaluating those {num_test_examples}")
    ]
    assert _warnings(split, eval_examples, num_test_examples) == expected
