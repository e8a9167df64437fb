"""The oracle: accepts generated examples, rejects every kind of corruption, annotates ages."""

from __future__ import annotations

import numpy as np
import pytest

from swar_bench.tasks.oracle import (
    AR_EXPIRED_NEVER,
    AR_EXPIRED_STALE,
    AR_VALID,
    PASSKEY,
    OracleError,
    annotate,
    verify_example,
)
from swar_bench.tasks.passkey_swar import (
    BOS,
    EOS,
    IGNORE_INDEX,
    NULL,
    PK,
    PKQ,
    PasskeySwarParams,
    Q,
    W,
    example_seed,
    generate_examples,
    make_example,
    split_seeds,
    vocab,
)

VOC = vocab()
SEED = example_seed("validation", 128, 9)


def k(i: int) -> int:
    return VOC.key_id(i)


def v(i: int) -> int:
    return VOC.value_id(i)


def _copy(ex: dict) -> dict:
    return {
        **ex,
        "input_ids": ex["input_ids"].copy(),
        "labels": ex["labels"].copy(),
        "answer_type": list(ex["answer_type"]),
    }


@pytest.fixture(scope="module")
def example() -> dict:
    return make_example(SEED, 128)


def _first(ex: dict, answer_type: str) -> int:
    """Position of the answer token of the first query of that answer_type."""
    supervised = np.flatnonzero(ex["labels"] != IGNORE_INDEX)
    return int(supervised[ex["answer_type"].index(answer_type)])


def test_accepts_generated_examples():
    for n in (32, 256):
        for i, ex in enumerate(generate_examples(split_seeds("test", n, 30), n)):
            verify_example(ex, index=i)


def _wrong_answer(ex):
    pos = _first(ex, "ar_valid")
    ex["input_ids"][pos] = NULL
    ex["labels"][pos] = NULL
    return pos


def _wrong_expired_answer(ex):
    pos = _first(ex, "ar_expired")
    ex["input_ids"][pos] = v(3)
    ex["labels"][pos] = v(3)
    return pos


def _wrong_answer_type(ex):
    i = ex["answer_type"].index("ar_valid")
    ex["answer_type"][i] = "ar_expired"
    return int(np.flatnonzero(ex["labels"] != IGNORE_INDEX)[i])


def _label_off_answer(ex):
    ex["labels"][7] = ex["input_ids"][7]
    return 7


def _wrong_label(ex):
    pos = _first(ex, "ar_valid")
    ex["labels"][pos] = IGNORE_INDEX
    return pos


def _passkey_mismatch(ex):
    T = len(ex["input_ids"])
    pos = T - 3
    new = v((int(ex["input_ids"][pos]) - VOC.value_offset + 1) % 16)
    ex["input_ids"][pos] = new
    ex["labels"][pos] = new
    return pos


def _missing_bos(ex):
    ex["input_ids"][0] = PK
    return 0


def _missing_pk(ex):
    ex["input_ids"][1] = v(0)
    return 1


def _missing_pkq(ex):
    T = len(ex["input_ids"])
    ex["input_ids"][T - 6] = Q
    return T - 6


def _missing_eos(ex):
    ex["input_ids"][-1] = v(1)
    return len(ex["input_ids"]) - 1


def _out_of_vocab(ex):
    ex["input_ids"][20] = 40
    return 20


def _pad_inside(ex):
    ex["input_ids"][21] = 0
    return 21


def _truncated(ex):
    # cut the last write-or-query triple and its labels: n_writes or the answer_type count breaks
    T = len(ex["input_ids"])
    keep = np.r_[0 : T - 9, T - 6 : T]
    ex["input_ids"] = ex["input_ids"][keep]
    ex["labels"] = ex["labels"][keep]


def _cut_mid_triple(ex):
    T = len(ex["input_ids"])
    keep = np.r_[0 : T - 7, T - 6 : T]
    ex["input_ids"] = ex["input_ids"][keep]
    ex["labels"] = ex["labels"][keep]


def _answer_type_too_short(ex):
    ex["answer_type"] = ex["answer_type"][:-1]


CORRUPTIONS = {
    "wrong answer": (_wrong_answer, "wrong answer"),
    "wrong expired answer": (_wrong_expired_answer, "wrong answer"),
    "wrong answer_type": (_wrong_answer_type, "wrong answer_type"),
    "label off an answer position": (_label_off_answer, "label off an answer position"),
    "wrong label": (_wrong_label, "wrong label"),
    "passkey mismatch": (_passkey_mismatch, "passkey mismatch"),
    "missing BOS": (_missing_bos, "expected BOS"),
    "missing PK": (_missing_pk, "expected PK"),
    "missing PKQ": (_missing_pkq, "expected PKQ"),
    "missing EOS": (_missing_eos, "expected EOS"),
    "token out of vocabulary": (_out_of_vocab, "not in the vocabulary"),
    "PAD inside": (_pad_inside, "not in the vocabulary"),
    "truncated example": (
        _truncated,
        "n_writes=128 but the stream has 127 writes|answer_type length mismatch",
    ),
    "cut inside a triple": (_cut_mid_triple, "not whole W k v / Q k a triples"),
    "answer_type length mismatch": (_answer_type_too_short, "answer_type length mismatch"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_rejects_corruption(example, kind):
    corrupt, rule = CORRUPTIONS[kind]
    ex = _copy(example)
    verify_example(ex, index=9)  # the clean copy passes
    pos = corrupt(ex)
    with pytest.raises(OracleError, match=rule) as err:
        verify_example(ex, index=9)
    msg = str(err.value)
    assert f"seed={SEED}" in msg and "index=9" in msg
    if pos is not None:
        assert f"position {pos}:" in msg


PASSKEY_TOKENS = (v(1), v(2), v(3), v(4))


def _hand_example(stream: list[int], n_writes: int, passkey=PASSKEY_TOKENS) -> dict:
    """An example from explicit stream tokens; labels/answer_type derived by hand-rule."""
    ids = [BOS, PK, *passkey, *stream, PKQ, *passkey, EOS]
    labels = [IGNORE_INDEX] * len(ids)
    types = []
    for s in range(6, len(ids) - 6, 3):
        if ids[s] == Q:
            labels[s + 2] = ids[s + 2]
            types.append("ar_expired" if ids[s + 2] == NULL else "ar_valid")
    for t in range(len(ids) - 5, len(ids) - 1):
        labels[t] = ids[t]
    types += ["passkey"] * 4
    return {
        "input_ids": np.array(ids, np.int16),
        "labels": np.array(labels, np.int16),
        "answer_type": types,
        "n_writes": n_writes,
        "seed": 77,
    }


def test_rejects_gray_zone_query():
    # k0 written once, then 17 writes of k1: k0 has age 18, in (16, 32]
    stream = [W, k(0), v(5)] + [W, k(1), v(6)] * 17 + [Q, k(0), NULL]
    ex = _hand_example(stream, 18)
    with pytest.raises(OracleError, match=r"position 60: gray-zone query: k0 has age 18") as err:
        verify_example(ex, index=4)
    assert "seed=77 index=4" in str(err.value)
    with pytest.raises(OracleError, match="gray-zone"):
        annotate(ex["input_ids"])


def test_age_boundaries_by_hand():
    # age 16 -> valid (latest value), age 33 -> stale NULL, never written -> NULL; overwrite counts
    stream = [W, k(0), v(5), W, k(0), v(9)] + [W, k(1), v(6)] * 15 + [Q, k(0), v(9)]
    stream += [W, k(1), v(6)] * 17 + [Q, k(0), NULL, Q, k(2), NULL]
    ex = _hand_example(stream, 34)
    verify_example(ex)
    kind, age = annotate(ex["input_ids"])
    answers = np.flatnonzero(kind)
    assert kind[answers].tolist() == [AR_VALID, AR_EXPIRED_STALE, AR_EXPIRED_NEVER] + [PASSKEY] * 4
    assert age[answers].tolist() == [16, 33, -1, -1, -1, -1, -1]
    # the same query one write later is in the gray zone
    late = _hand_example(stream[:51] + [W, k(1), v(6)] + [Q, k(0), v(9)], 18)
    with pytest.raises(OracleError, match="age 17"):
        verify_example(late)


def test_rejects_query_before_first_write():
    ex = _hand_example([Q, k(0), NULL, W, k(0), v(1)], 1)
    with pytest.raises(
        OracleError, match="position 6: bad structure: query before the first write"
    ):
        verify_example(ex)


def _reference_ages(ids: np.ndarray, w: int) -> dict[int, tuple[int, int]]:
    """Answer position -> (kind code, age) by scanning backwards from each query (slow, plain)."""
    out = {}
    for s in range(6, len(ids) - 6, 3):
        if ids[s] != Q:
            continue
        key, age = ids[s + 1], 0
        found = False
        for r in range(s - 3, 5, -3):
            if ids[r] == W:
                age += 1
                if ids[r + 1] == key:
                    found = True
                    break
        if not found:
            out[s + 2] = (AR_EXPIRED_NEVER, -1)
        else:
            out[s + 2] = (AR_VALID if age <= w else AR_EXPIRED_STALE, age)
    return out


def test_annotate_matches_backward_scan_and_labels():
    params = PasskeySwarParams()
    for n in (32, 128, 300):
        for ex in generate_examples(split_seeds("validation", n, 15), n):
            ids = ex["input_ids"].astype(np.int64)
            kind, age = annotate(ids, params)
            assert kind.dtype == np.int8 and age.dtype == np.int32 and kind.shape == ids.shape
            assert np.array_equal(
                np.flatnonzero(kind), np.flatnonzero(ex["labels"] != IGNORE_INDEX)
            )
            ref = _reference_ages(ids, params.w)
            for pos, (code, a) in ref.items():
                assert (kind[pos], age[pos]) == (code, a)
            names = {
                AR_VALID: "ar_valid",
                AR_EXPIRED_STALE: "ar_expired",
                AR_EXPIRED_NEVER: "ar_expired",
                PASSKEY: "passkey",
            }
            assert [names[c] for c in kind[kind > 0].tolist()] == ex["answer_type"]


def test_annotate_rejects_bad_structure():
    with pytest.raises(OracleError, match="tokens"):
        annotate(np.array([BOS, PK, 1, 2], np.int16))
    ex = make_example(3, 8)
    ids = ex["input_ids"].copy()
    ids[6] = NULL
    with pytest.raises(OracleError, match="position 6"):
        annotate(ids)
