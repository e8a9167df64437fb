"""passkey_swar generator: parameters, vocabulary, seeds, randomness, format, batched == reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from swar_bench.tasks import passkey_swar as ps
from swar_bench.tasks.oracle import annotate, verify_example
from swar_bench.tasks.passkey_swar import (
    IGNORE_INDEX,
    PasskeySwarParams,
    batched,
    example_seed,
    generate_examples,
    make_example,
    split_seeds,
    vocab,
)


def test_params_defaults_are_the_cards():
    assert PasskeySwarParams().to_dict() == {
        "w": 16,
        "n_keys": 16,
        "n_values": 16,
        "query_rate": 0.25,
        "valid_frac": 0.5,
        "drift_rate": 0.1,
        "active_min": 6,
        "active_max": 8,
    }
    assert PasskeySwarParams().query_prob == pytest.approx(0.2)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"w": 0}, "w"),
        ({"n_keys": 0}, "n_keys"),
        ({"active_max": 17}, "active_max"),
        ({"active_min": 9}, "active_min"),
        ({"query_rate": -0.1}, "query_rate"),
        ({"valid_frac": 1.5}, "valid_frac"),
        ({"drift_rate": float("nan")}, "drift_rate"),
        ({"w": 2.5}, "w"),
        ({"n_keys": 65, "active_max": 8}, "n_keys"),
    ],
)
def test_params_reject_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        PasskeySwarParams(**kwargs)


def test_vocab_matches_the_card(tmp_path):
    v = vocab()
    assert (v.PAD, v.BOS, v.EOS, v.PK, v.PKQ, v.W, v.Q, v.NULL) == tuple(range(8))
    assert (v.key_id(0), v.key_id(15), v.value_id(0), v.value_id(15), v.size) == (8, 23, 24, 39, 40)
    path = ps.write_vocab_json(tmp_path / "vocab.json")
    mapping = json.loads(Path(path).read_text())
    assert (
        len(mapping) == 40 and mapping["NULL"] == 7 and mapping["k0"] == 8 and mapping["v15"] == 39
    )
    small = vocab(PasskeySwarParams(n_keys=4, n_values=3, active_min=2, active_max=3))
    assert (small.key_id(3), small.value_id(0), small.size) == (11, 12, 15)


def test_example_seed_formula_and_errors():
    assert example_seed("validation", 256, 7) == 2 * 10**12 + 256 * 10**6 + 7
    assert example_seed("train", 32, 0) == 10**12 + 32 * 10**6
    assert split_seeds("test", 64, 3, start=5).tolist() == [
        example_seed("test", 64, i) for i in (5, 6, 7)
    ]
    with pytest.raises(ValueError, match="split='dev'"):
        example_seed("dev", 32, 0)
    with pytest.raises(ValueError, match="n_writes=0"):
        example_seed("train", 0, 0)
    with pytest.raises(ValueError, match="index=1000000"):
        example_seed("train", 32, 10**6)


def _splitmix64_reference(state: int, count: int) -> list[int]:
    """SplitMix64 (Steele, Lea, Flood 2014) in plain Python integers."""
    mask, out = (1 << 64) - 1, []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


def test_streams_are_splitmix64():
    # Published first output of SplitMix64 from state 0.
    assert _splitmix64_reference(0, 1) == [0xE220A8397B1DCDAF]
    seed, stream = 2 * 10**12 + 64 * 10**6 + 3, ps.STREAM_WRITE
    base = _splitmix64_reference(seed, 1)[0]
    key = _splitmix64_reference((base + stream * 0x9E3779B97F4A7C15) & ((1 << 64) - 1), 1)[0]
    assert int(ps.stream_keys(np.array([seed]), stream)[0]) == key
    assert ps.stream_bits(seed, stream, 5).tolist() == _splitmix64_reference(key, 5)


def test_uniform_index_coins_and_query_counts():
    bits = np.array([0, (1 << 63) + 5, (1 << 64) - 1], dtype=np.uint64)
    assert ps.hi32(bits).tolist() == [0, 1 << 31, (1 << 32) - 1]
    assert ps.lo32(bits).tolist() == [0, 5, (1 << 32) - 1]
    assert ps.uniform_index(ps.hi32(bits), 16).tolist() == [0, 8, 15]
    assert (ps.prob32(0.0), ps.prob32(0.5), ps.prob32(1.0)) == (0, 1 << 31, 1 << 32)
    # query counts: P(K >= k) = p**k with p = q / (1 + q) = 0.2
    t = ps.query_thresholds(PasskeySwarParams())
    assert t[0] == ps.prob32(0.2) and t[1] == ps.prob32(0.04) and t[-1] >= 1
    assert ps.prob32(0.2 ** (len(t) + 1)) == 0
    stay, table_stay, table_drift = ps.write_cells(PasskeySwarParams())
    assert stay == 2**32 - ps.prob32(0.1)  # drift coin: u >= stay, probability 0.1
    assert table_stay[0] == round(stay * 0.2) and table_drift[0] == round((2**32 - stay) * 0.2)
    assert ps.query_thresholds(PasskeySwarParams(query_rate=0.0)).size == 0


def test_bit_helpers_match_plain_python():
    rng = np.random.default_rng(0)
    masks = rng.integers(0, 1 << 62, size=300, dtype=np.int64).astype(np.uint64) | np.uint64(1)
    counts = ps.popcount(masks)
    assert counts.tolist() == [int(m).bit_count() for m in masks]
    ranks = (rng.random(300) * counts).astype(np.int64)
    expect = [[i for i in range(64) if int(m) >> i & 1][r] for m, r in zip(masks, ranks)]
    assert ps.select_bit(masks, ranks, 64).tolist() == expect
    small = masks & np.uint64(0xFFFF)
    small[small == 0] = 1
    r16 = np.zeros(300, dtype=np.int64)
    assert ps.select_key(small, r16, 16).tolist() == [
        (int(m) & -int(m)).bit_length() - 1 for m in small
    ]
    bits = (np.uint16(1) << rng.integers(0, 16, size=(3, 50)).astype(np.uint16)).astype(np.uint16)
    levels = ps.or_levels(bits, 32)
    assert sorted(levels) == [1, 2, 4, 8, 16, 32]
    for length in (1, 3, 16, 32):
        got = ps.window_or(levels, length)
        for b in range(3):
            for j in range(50):
                want = 0
                for t in range(max(0, j - length + 1), j + 1):
                    want |= int(bits[b, t])
                assert int(got[b, j]) == want


def test_make_example_format():
    params, voc = PasskeySwarParams(), vocab()
    seed = example_seed("validation", 64, 11)
    ex = make_example(seed, 64)
    ids, labels = ex["input_ids"], ex["labels"]
    assert ids.dtype == np.int16 and labels.dtype == np.int16 and ids.shape == labels.shape
    assert ex["n_writes"] == 64 and ex["seed"] == seed
    T = len(ids)
    n_queries = len(ex["answer_type"]) - 4
    assert T == 12 + 3 * (64 + n_queries)
    assert (
        ids[0] == voc.BOS and ids[1] == voc.PK and ids[T - 6] == voc.PKQ and ids[T - 1] == voc.EOS
    )
    assert ids[2:6].tolist() == ids[T - 5 : T - 1].tolist()
    triples = ids[6 : T - 6].reshape(-1, 3)
    assert (triples[:, 0] == voc.W).sum() == 64 and (triples[:, 0] == voc.Q).sum() == n_queries
    supervised = np.flatnonzero(labels != IGNORE_INDEX)
    assert len(supervised) == len(ex["answer_type"])
    assert np.array_equal(labels[supervised], ids[supervised])
    assert supervised[-4:].tolist() == list(range(T - 5, T - 1))
    q_rows = np.flatnonzero(triples[:, 0] == voc.Q)
    assert supervised[:-4].tolist() == (6 + 3 * q_rows + 2).tolist()
    assert ex["answer_type"][-4:] == ["passkey"] * 4
    assert set(ex["answer_type"][:-4]) <= {"ar_valid", "ar_expired"}
    # a pure function of its arguments
    again = make_example(seed, 64, params)
    assert np.array_equal(again["input_ids"], ids) and again["answer_type"] == ex["answer_type"]
    assert not np.array_equal(make_example(seed + 1, 64)["input_ids"][:60], ids[:60])


@pytest.mark.parametrize("bad, match", [(-1, "seed=-1"), (1.5, "seed=1.5")])
def test_make_example_rejects_bad_seed(bad, match):
    with pytest.raises(ValueError, match=match):
        make_example(bad, 32)


def test_make_example_rejects_bad_n_writes():
    with pytest.raises(ValueError, match="n_writes=0"):
        make_example(1, 0)
    with pytest.raises(ValueError, match="n_writes=0"):
        generate_examples([1], 0)


def test_examples_follow_the_answer_rule_and_avoid_the_gray_zone():
    params = PasskeySwarParams()
    ages, kinds = [], []
    for ex in generate_examples(split_seeds("validation", 512, 40), 512):
        verify_example(ex, params)
        kind, age = annotate(ex["input_ids"], params)
        ages.append(age[kind > 0])
        kinds.append(kind[kind > 0])
    age, kind = np.concatenate(ages), np.concatenate(kinds)
    assert not np.any((age > params.w) & (age <= 2 * params.w))
    assert age[kind == 1].min() == 1 and age[kind == 1].max() == params.w
    assert age[kind == 2].min() > 2 * params.w
    assert np.all(age[(kind == 3) | (kind == 4)] == -1)


def _assert_same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x["seed"] == y["seed"] and x["n_writes"] == y["n_writes"]
        assert x["input_ids"].dtype == y["input_ids"].dtype == np.int16
        assert x["labels"].dtype == y["labels"].dtype == np.int16
        assert np.array_equal(x["input_ids"], y["input_ids"]), x["seed"]
        assert np.array_equal(x["labels"], y["labels"]), x["seed"]
        assert x["answer_type"] == y["answer_type"], x["seed"]


@pytest.mark.parametrize("n_writes", [1, 2, 3, 7, 32, 33, 64, 100, 256])
def test_batched_generator_equals_reference(n_writes):
    seeds = split_seeds("validation", n_writes, 60).tolist() + [0, 5, 2**62 + 17]
    _assert_same(generate_examples(seeds, n_writes), [make_example(s, n_writes) for s in seeds])


@pytest.mark.parametrize(
    "params",
    [
        PasskeySwarParams(
            w=2, n_keys=5, n_values=3, active_min=1, active_max=4, drift_rate=0.5, query_rate=1.5
        ),
        PasskeySwarParams(
            w=4, n_keys=6, active_min=6, active_max=6, valid_frac=0.2
        ),  # never drifts
        PasskeySwarParams(
            w=1, n_keys=3, n_values=2, active_min=1, active_max=2, drift_rate=1.0, valid_frac=0.0
        ),
        PasskeySwarParams(query_rate=0.0),
        PasskeySwarParams(
            w=5, n_keys=24, n_values=30, active_min=3, active_max=12, drift_rate=0.3
        ),  # 32-bit sets
        PasskeySwarParams(
            w=8, n_keys=64, active_min=20, active_max=40, query_rate=0.6
        ),  # 64-bit sets
    ],
)
def test_batched_generator_equals_reference_other_params(params):
    seeds = list(range(40))
    for n in (5, 50):
        batch = generate_examples(seeds, n, params)
        _assert_same(batch, [make_example(s, n, params) for s in seeds])
        for ex in batch:
            verify_example(ex, params)


@pytest.mark.parametrize("n_writes, w", [(32, 200), (32, 500), (64, 500), (5, 1000), (1, 3)])
@pytest.mark.parametrize("batch", [1, 3])
def test_batched_generator_window_longer_than_the_batch(n_writes, w, batch):
    # 2w beyond all the writes of the batch (B * N): the window reads must stay inside it
    # (an IndexError before) and still equal the reference.
    params = PasskeySwarParams(w=w)
    seeds = split_seeds("validation", n_writes, batch)
    out = generate_examples(seeds, n_writes, params)
    _assert_same(out, [make_example(int(s), n_writes, params) for s in seeds])
    for ex in out:
        verify_example(ex, params)


def test_batched_generator_chunks_identically(monkeypatch):
    seeds = split_seeds("train", 32, 50)
    whole = generate_examples(seeds, 32)
    monkeypatch.setattr(batched, "examples_per_chunk", lambda n: 7)  # 8 chunks of 7 examples
    flat = ps.generate_flat(seeds, 32)
    assert flat.offsets.shape == (51,) and flat.query_offsets.shape == (51,)
    _assert_same([flat.example(b) for b in range(50)], whole)


@pytest.mark.parametrize(
    "n_writes, params",
    [
        (100, PasskeySwarParams()),
        (48, PasskeySwarParams(w=5, n_keys=24, n_values=30, active_min=3, active_max=12)),
    ],
)
def test_batched_generator_blocks_identically(monkeypatch, n_writes, params):
    # Blocks of draws (_BLOCK_WRITES) and of examples (_BLOCK_ROWS_WRITES) much smaller than
    # the chunk, with a ragged last block: the output must not depend on where blocks end.
    seeds = split_seeds("test", n_writes, 23)
    reference = [make_example(int(s), n_writes, params) for s in seeds]
    monkeypatch.setattr(batched, "_BLOCK_WRITES", 3 * n_writes)
    monkeypatch.setattr(batched, "_BLOCK_ROWS_WRITES", 5 * n_writes)
    _assert_same(generate_examples(seeds, n_writes, params), reference)
    monkeypatch.setattr(batched, "_BLOCK_WRITES", 1)  # one example per block
    monkeypatch.setattr(batched, "_BLOCK_ROWS_WRITES", 1)
    _assert_same(generate_examples(seeds, n_writes, params), reference)


def test_batched_generator_equals_reference_long_sequences():
    # N = 2048: about 200 drift events per example, so the drift rounds run long and ragged.
    seeds = split_seeds("validation", 2048, 6)
    _assert_same(generate_examples(seeds, 2048), [make_example(int(s), 2048) for s in seeds])


def test_no_expired_candidate_falls_back_to_valid():
    # Two keys, both always active: once both are written within 2w writes, no key is expired.
    params = PasskeySwarParams(
        w=16, n_keys=2, active_min=2, active_max=2, valid_frac=0.0, query_rate=1.0
    )
    for seed in range(20):
        ex = make_example(seed, 40, params)
        verify_example(ex, params)
        kind, _ = annotate(ex["input_ids"], params)
        ids = ex["input_ids"]
        answers = np.flatnonzero((kind == 1) | (kind == 2) | (kind == 3))
        for pos, k in zip(answers, kind[answers]):
            written = set(ids[6:pos][np.flatnonzero(ids[6:pos] == ps.W) + 1].tolist())
            # valid_frac = 0 asks for expired keys; valid only when there is none
            assert (k == 1) == (len(written) == 2)


def test_generate_examples_rejects_bad_seeds():
    with pytest.raises(ValueError, match="seeds"):
        generate_examples([[1, 2]], 32)
    with pytest.raises(ValueError, match="seeds"):
        generate_examples([-3], 32)


def test_write_cells_give_independent_drift_and_query_counts():
    # One 32-bit half per write decides both: P(drift) = drift_rate and, in both groups,
    # P(#queries >= k) = p**k with p = q / (1 + q) (card, "Format").
    params = PasskeySwarParams()
    u = ps.hi32(ps.stream_bits(np.arange(100), ps.STREAM_WRITE, 5000)).reshape(-1)
    stay, table_stay, table_drift = ps.write_cells(params)
    drift = u >= stay
    counts = np.where(
        drift,
        (u[:, None] - stay < table_drift[None, :]).sum(axis=1),
        (u[:, None] < table_stay[None, :]).sum(axis=1),
    )
    assert drift.mean() == pytest.approx(0.1, abs=0.003)
    for group in (drift, ~drift):
        k = counts[group]
        assert k.mean() == pytest.approx(0.25, abs=0.015)
        assert (k >= 1).mean() == pytest.approx(0.2, abs=0.01)
        assert (k >= 2).mean() == pytest.approx(0.04, abs=0.006)
