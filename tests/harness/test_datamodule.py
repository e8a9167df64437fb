"""PasskeySwarDataModule: seeds, bucketing, padding, exact eval sharding, curriculum N, workers."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.datamodules.passkey_swar import (
    FILLER_SEED,
    Batch,
    PasskeySwarBatches,
    PasskeySwarDataModule,
    TrainBatchSampler,
    TrainStream,
    eval_keys,
    parse_configs,
)
from swar_bench.tasks.oracle import annotate
from swar_bench.tasks.passkey_swar import example_seed, make_example


def _train_keys(world: int, rank: int, steps: int, configs=(32, 64), batch_size=4, seed=0):
    stream = TrainStream(configs, batch_size, steps, seed)
    sampler = TrainBatchSampler(stream, rank, world, limit=None)
    keys = []
    for key in sampler:
        keys.append(key)
        stream.consume(key[1])
    return keys


def test_train_seeds_disjoint_and_gapless_across_ranks():
    world, steps, bs = 3, 12, 4
    per_rank = [_train_keys(world, r, steps, batch_size=bs) for r in range(world)]
    # every rank draws the same N at the same step (ranks stay in step)
    assert [[k[1] for k in keys] for keys in per_rank] == [[k[1] for k in per_rank[0]]] * world
    for n in (32, 64):
        idx = [i for keys in per_rank for k in keys if k[1] == n for i in k[2]]
        assert len(idx) == len(set(idx))  # nothing repeated
        assert sorted(idx) == list(range(len(idx)))  # nothing skipped
    assert {k[1] for k in per_rank[0]} == {32, 64}


def test_batch_matches_generator_and_oracle_annotation():
    ds = PasskeySwarBatches("generate")
    batch = ds[("validation", 64, (0, 1, 2))]
    assert batch.input_ids.dtype == torch.int64 and batch.input_ids.dim() == 2
    assert batch.n_writes.tolist() == [64, 64, 64]
    for row, index in enumerate((0, 1, 2)):
        seed = example_seed("validation", 64, index)
        ex = make_example(seed, 64)
        t = len(ex["input_ids"])
        assert int(batch.seed[row]) == seed
        assert batch.input_ids[row, :t].tolist() == ex["input_ids"].astype(int).tolist()
        assert batch.labels[row, :t].tolist() == ex["labels"].astype(int).tolist()
        kind, age = annotate(ex["input_ids"])
        assert batch.answer_kind[row, :t].tolist() == kind.astype(int).tolist()
        assert batch.key_age[row, :t].tolist() == age.astype(int).tolist()
        # right padding: PAD / -100 / none / -1
        assert (batch.input_ids[row, t:] == 0).all() and (batch.labels[row, t:] == -100).all()
        assert (batch.answer_kind[row, t:] == 0).all() and (batch.key_age[row, t:] == -1).all()
        # answer_kind is set exactly on the supervised positions
        assert ((batch.labels[row] != -100) == (batch.answer_kind[row] != 0)).all()


@pytest.mark.parametrize("world", [1, 2, 3])
def test_eval_sharding_exact_with_equal_step_counts(world):
    counts = {32: 10, 64: 7}
    shards = [eval_keys("validation", (32, 64), counts, 4, r, world) for r in range(world)]
    assert len({len(s) for s in shards}) == 1  # same number of steps on every rank
    for n, total in counts.items():
        idx = [i for s in shards for k in s if k[1] == n for i in k[2]]
        assert sorted(idx) == list(range(total))  # no duplicate, no drop
        per_rank_n = [sum(1 for k in s if k[1] == n) for s in shards]
        assert len(set(per_rank_n)) == 1
    fillers = [k for s in shards for k in s if not k[2]]
    filler = PasskeySwarBatches("generate")[("validation", 64, ())]
    assert filler.seed.tolist() == [FILLER_SEED] and (filler.labels == -100).all()
    assert len(fillers) == sum(len(s) for s in shards) - sum(
        -(-len(range(r, t, world)) // 4) for r in range(world) for t in counts.values()
    )


def test_eval_filler_when_a_rank_runs_short():
    # 5 examples over 2 ranks in batches of 2: rank 0 gets [0,2],[4]; rank 1 gets [1,3] + filler
    shards = [eval_keys("test", (32,), {32: 5}, 2, r, 2) for r in range(2)]
    assert [k[2] for k in shards[0]] == [(0, 2), (4,)]
    assert [k[2] for k in shards[1]] == [(1, 3), ()]


def test_set_train_n_takes_effect_on_next_issued_batch():
    dm = PasskeySwarDataModule(train_configs=[32, 64], batch_size=2, examples_per_epoch=20)
    stream = dm.stream
    stream.batches_per_epoch = 10
    it = iter(TrainBatchSampler(stream, 0, 1, None))
    first = next(it)
    dm.set_train_n(256)
    rest = [next(it) for _ in range(4)]
    assert first[1] in (32, 64)
    assert [k[1] for k in rest] == [256] * 4
    assert [k[2] for k in rest] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    with pytest.raises(ValueError, match="48"):
        dm.set_train_n(48)


def test_workers_yield_the_same_batches_as_the_main_process():
    def batches(workers):
        dm = PasskeySwarDataModule(
            train_configs=[32], val_configs=[32, 64], batch_size=3, eval_examples=7, num_workers=workers
        )
        dm.trainer = None
        return list(dm.val_dataloader())

    a, b = batches(0), batches(2)
    assert len(a) == len(b) == 6
    for x, y in zip(a, b):
        assert type(x) is type(y) is Batch and all(torch.equal(v, vars(y)[k]) for k, v in vars(x).items())


def test_config_validation_messages():
    assert parse_configs(["n32", 64, "128"], "x") == (32, 64, 128)
    with pytest.raises(ValueError, match=r"val_configs: 48 is not an allowed N; expected one of 32, 64"):
        PasskeySwarDataModule(val_configs=[48])
    with pytest.raises(ValueError, match="batch_size=0"):
        PasskeySwarDataModule(batch_size=0)


@pytest.mark.parametrize("value", [0, -3])
def test_non_positive_eval_batch_size_is_refused(value):
    with pytest.raises(ValueError, match=rf"^eval_batch_size={value} is invalid; expected a positive integer$"):
        PasskeySwarDataModule(eval_batch_size=value)


def test_eval_batch_size_none_means_batch_size():
    assert PasskeySwarDataModule(batch_size=5).eval_batch_size == 5
    assert PasskeySwarDataModule(batch_size=5, eval_batch_size=3).eval_batch_size == 3


def test_stream_state_roundtrip_replays_pending_batches():
    stream = TrainStream((32, 64, 128), 2, 8, seed=5)
    sampler = TrainBatchSampler(stream, 0, 1, None)
    it = iter(sampler)
    keys = [next(it) for _ in range(4)]  # 4 issued
    for k in keys[:2]:
        stream.consume(k[1])  # 2 consumed, 2 in flight
    state = stream.state_dict()
    resumed = TrainStream((32, 64, 128), 2, 8, seed=5)
    resumed.load_state_dict(state)
    replay = list(TrainBatchSampler(resumed, 0, 1, None))
    reference = keys[2:] + list(it)
    assert replay == reference and len(replay) == 6
    with pytest.raises(ValueError, match="batch_size=2"):
        TrainStream((32,), 4, 8, seed=5).load_state_dict(state)


def test_local_hub_folder_gives_the_generated_batches(tmp_path):
    from swar_bench.tasks.hub_io import write_dataset

    write_dataset(tmp_path, ["n32"], ["train", "validation"], num_examples=6, progress=False)
    local = PasskeySwarDataModule(source=str(tmp_path), train_configs=[32], val_configs=[32], batch_size=4, eval_examples=100)
    generated = PasskeySwarDataModule(train_configs=[32], val_configs=[32], batch_size=4, eval_examples=6)
    for dm in (local, generated):
        dm.trainer = None
    with pytest.warns(UserWarning, match="eval_examples=100"):
        a = list(local.val_dataloader())
    b = list(generated.val_dataloader())
    assert [x.input_ids.shape[0] for x in a] == [4, 2]  # capped at the 6 stored examples
    for x, y in zip(a, b):
        assert all(torch.equal(v, vars(y)[k]) for k, v in vars(x).items())
    # training indices past the stored split wrap around: batch 1 holds indices 4..7 -> 4, 5, 0, 1
    train = iter(local.train_dataloader())
    next(train)
    second = next(train)
    assert second.seed.tolist() == [example_seed("train", 32, i) for i in (4, 5, 0, 1)]


def test_missing_local_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="nowhere'?: no such folder"):  # at once, before any run
        PasskeySwarDataModule(source=str(tmp_path / "nowhere"), val_configs=[32])
    (tmp_path / "empty").mkdir()  # a folder without the split: prepare_data names it
    dm = PasskeySwarDataModule(source=str(tmp_path / "empty"), val_configs=[32])
    dm.trainer = None
    with pytest.raises(ValueError, match="empty"):
        list(dm.val_dataloader())
    with pytest.raises(ValueError, match="empty"):
        dm.prepare_data()  # what Lightning calls before the logger writes
    PasskeySwarDataModule().prepare_data()  # generated: nothing to open


def test_train_loader_workers_build_exactly_the_issued_batches():
    def epoch(workers):
        dm = PasskeySwarDataModule(train_configs=[32, 64], batch_size=3, examples_per_epoch=18, num_workers=workers)
        dm.trainer = None
        return [(int(b.n_writes[0]), tuple(b.seed.tolist())) for b in dm.train_dataloader()]

    main_process, workers = epoch(0), epoch(2)
    assert main_process == workers and len(main_process) == 6
    seeds = [s for _, batch in workers for s in batch]
    assert len(set(seeds)) == 18  # no example built twice across the two workers


def test_resume_on_more_ranks_keeps_examples_disjoint():
    stream = TrainStream((32,), 2, 100, seed=0)
    it = iter(TrainBatchSampler(stream, 0, 2, None))
    for _ in range(3):
        stream.consume(next(it)[1])
    next(it)  # one batch in flight at the checkpoint
    used = set(range(3 * 2 * 2 + 2 * 2))  # rank 0 and rank 1 blocks of the 4 issued steps
    state = stream.state_dict()
    assert state["world_size"] == 2
    resumed = [TrainStream((32,), 2, 100, seed=0) for _ in range(3)]
    new = set()
    for rank, other in enumerate(resumed):
        other.load_state_dict(state)
        it3 = iter(TrainBatchSampler(other, rank, 3, None))
        with pytest.warns(UserWarning, match="on 3 ranks"):  # when the first batch is drawn
            first = next(it3)
        keys = [first, *(next(it3) for _ in range(3))]
        new |= {i for k in keys for i in k[2]}
        assert other.world_size == 3 and keys[0][2][0] >= 8
    assert not new & used and len(new) == 3 * 4 * 2


def test_local_folder_is_read_with_the_parameters_it_records(tmp_path):
    from swar_bench.tasks.hub_io import write_dataset
    from swar_bench.tasks.passkey_swar import PasskeySwarParams

    params = PasskeySwarParams(w=8)
    write_dataset(tmp_path, ["n32"], ["validation"], num_examples=4, params=params, progress=False)
    dm = PasskeySwarDataModule(source=str(tmp_path), val_configs=[32], eval_examples=4)
    assert dm.params == params  # from the folder's record, not the card's w=16
    dm.trainer = None
    (batch,) = list(dm.val_dataloader())
    # key ages annotated with w=8: a valid query's key is at most 8 writes old
    ages = batch.key_age[batch.answer_kind == 1]
    assert ages.numel() > 0 and int(ages.max()) <= 8
    with pytest.raises(ValueError, match=r"^--data\.task_params w=16 differ from w=8 recorded in .*leave --data\.task_params out"):
        PasskeySwarDataModule(source=str(tmp_path), val_configs=[32], task_params={"w": 16})


def test_eval_examples_beyond_a_stored_split_warn_once_with_both_counts(tmp_path):
    import warnings

    from swar_bench.tasks.hub_io import write_dataset

    write_dataset(tmp_path, ["n32", "n64"], ["validation", "test"], num_examples=5, progress=False)
    dm = PasskeySwarDataModule(source=str(tmp_path), val_configs=[32, 64], test_configs=[64], batch_size=4, eval_examples=100)
    dm.trainer = None
    with pytest.warns(UserWarning) as record:
        batches = list(dm.val_dataloader())
    messages = [str(w.message) for w in record]
    assert messages == [
        f"eval_examples=100: the validation split of n{n} in {tmp_path} has 5 examples; evaluating those 5"
        for n in (32, 64)
    ]
    assert sum(int(b.n_writes.numel()) for b in batches) == 10  # 5 per N, the cap itself
    with pytest.warns(UserWarning, match=r"eval_examples=100: the test split of n64 .* has 5 examples"):
        list(dm.test_dataloader())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per split and N: a second epoch's loader is quiet
        list(dm.val_dataloader())
        # enough stored examples: no warning
        exact = PasskeySwarDataModule(source=str(tmp_path), val_configs=[32], eval_examples=5)
        exact.trainer = None
        list(exact.val_dataloader())


def test_unknown_task_params_are_one_line():
    with pytest.raises(ValueError, match=r"^task_params has unknown field\(s\) zz; expected some of active_max, "):
        PasskeySwarDataModule(task_params={"zz": 1})


def _train_indices(start: int, seed: int, steps: int = 10, batch_size: int = 4) -> dict[int, list[int]]:
    stream = TrainStream((32, 64), batch_size, steps, seed, index_start=start)
    by_n: dict[int, list[int]] = {32: [], 64: []}
    for _, n, idx in TrainBatchSampler(stream, 0, 1, limit=None):
        by_n[n].extend(idx)
        stream.consume(n)
    return by_n


def test_train_index_start_gives_each_seed_its_own_examples():
    """Seeds 0 and 1 of a study (starts 0 and 100,000) read disjoint index blocks of the seed formula."""
    a, b = _train_indices(0, seed=0), _train_indices(100_000, seed=1)
    for n in (32, 64):
        assert a[n] == list(range(len(a[n])))  # gapless from the start
        assert b[n] == list(range(100_000, 100_000 + len(b[n])))
        assert not set(a[n]) & set(b[n])
    dm = PasskeySwarDataModule(train_configs=[32], batch_size=2, train_index_start=500)
    key = next(iter(TrainBatchSampler(dm.stream, 0, 1, None)))
    assert key == ("train", 32, (500, 501))
    assert int(dm.dataset[key].seed[0]) == example_seed("train", 32, 500)


@pytest.mark.parametrize("value", [-1, 10**6, 2.5, True, "3"])
def test_train_index_start_out_of_range_is_one_line(value):
    with pytest.raises(ValueError, match=r"train_index_start=.*expected an integer in \[0, 1000000\)"):
        PasskeySwarDataModule(train_index_start=value)


def test_resume_with_another_train_index_start_is_refused():
    state = TrainStream((32,), 2, 4, 0, index_start=0).state_dict()
    with pytest.raises(ValueError, match="train_index_start=100000"):
        TrainStream((32,), 2, 4, 0, index_start=100_000).load_state_dict(state)
    del state["index_start"]  # a checkpoint written before the option: it read from 0
    TrainStream((32,), 2, 4, 0).load_state_dict(state)


def test_index_block_past_the_seed_formula_is_refused():
    stream = TrainStream((32,), 4, 4, 0, index_start=10**6 - 6)
    it = iter(TrainBatchSampler(stream, 0, 1, None))
    assert next(it)[2] == tuple(range(10**6 - 6, 10**6 - 2))
    with pytest.raises(ValueError, match="train_index_start=999994 with batch_size=4 on 1 rank"):
        next(it)  # a setting's fault, one line (ValueError: exit 2), not a crash


@pytest.mark.parametrize(("kwargs", "lead"), [({"batch_size": 1000001}, "batch_size=1000001"),
                                              ({"train_index_start": 999990},
                                               "train_index_start=999990 (with batch_size=16)")])
def test_the_reported_batch_past_the_seed_formula_is_refused_at_once(kwargs, lead):
    """Fault: `fit --data.batch_size=1000001` (or `--data.train_index_start=999990`) built the
    model, then crashed at the first training step with a RuntimeError traceback whose hint did not
    name batch_size."""
    with pytest.raises(ValueError) as err:
        PasskeySwarDataModule(train_configs=[32], **{"batch_size": 16, **kwargs})
    assert str(err.value) == (f"{lead}: one training batch passes the 1,000,000 indices per N of the task's seed "
                              'formula (docs/TASK.md, "Columns"); expected train_index_start + batch_size <= 1000000')


@settings(max_examples=60, deadline=None)
@given(batch_size=st.integers(1, 2 * 10**6), start=st.integers(0, 10**6 - 1))
def test_a_first_batch_is_refused_exactly_when_it_passes_the_seed_formula(batch_size, start):
    """The kind: any batch size and start index of generated data: refused at construction exactly
    when the first batch would pass index 10**6; otherwise its first batch is read from there."""
    if start + batch_size > 10**6:
        with pytest.raises(ValueError, match="expected train_index_start \\+ batch_size <= 1000000"):
            PasskeySwarDataModule(train_configs=[32], batch_size=batch_size, train_index_start=start)
    else:
        dm = PasskeySwarDataModule(train_configs=[32], batch_size=batch_size, train_index_start=start)
        assert TrainBatchSampler(dm.stream, 0, 1, None)._indices(32, 0)[:1] == (start,)




@settings(max_examples=40, deadline=None)
@given(
    starts=st.lists(st.integers(0, 10_000), min_size=2, max_size=3, unique=True),
    seeds=st.lists(st.integers(0, 5), min_size=3, max_size=3),
    batch_size=st.integers(1, 5),
    steps=st.integers(1, 8),
)
def test_streams_whose_blocks_do_not_overlap_share_no_example(starts, seeds, batch_size, steps):
    """The kind: runs whose index blocks [start, start + steps * batch_size) are disjoint never read
    the same example, whatever their N draws."""
    starts = sorted(starts)
    if any(b - a < steps * batch_size for a, b in itertools.pairwise(starts)):
        return
    seen: set[tuple[int, int]] = set()
    for start, seed in zip(starts, seeds):
        for n, idx in _train_indices(start, seed, steps, batch_size).items():
            assert all(start <= i < start + steps * batch_size for i in idx)
            mine = {(n, i) for i in idx}
            assert not mine & seen
            seen |= mine


def test_the_reported_repeated_n_is_refused():
    """Fault: `test_configs: [32, 32]` was silently de-duplicated (data generate refuses the same)."""
    with pytest.raises(ValueError) as err:
        PasskeySwarDataModule(test_configs=[32, 32])
    assert str(err.value) == "test_configs: 32 gives N=32 a second time; expected each N once"


@settings(max_examples=60, deadline=None)
@given(ns=st.lists(st.sampled_from([32, 64, 128, 256, 512, 1024]), min_size=1, max_size=6, unique=True),
       data=st.data())
def test_any_list_of_n_reads_in_order_and_any_repeat_is_refused(ns, data):
    """The kind: any list of allowed N, each spelled 32 or "n32": read in its order; the same list
    with one N given again (any spelling, anywhere) is refused naming that entry."""
    from swar_bench.datamodules.passkey_swar import parse_configs

    spelled = [data.draw(st.sampled_from([n, f"n{n}", f"N{n}"]), label="spelling") for n in ns]
    assert parse_configs(spelled, "val_configs") == tuple(ns)
    again = data.draw(st.sampled_from(ns), label="repeated")
    at = data.draw(st.integers(ns.index(again) + 1, len(ns)), label="position")
    entry = data.draw(st.sampled_from([again, f"n{again}"]), label="its spelling")
    with pytest.raises(ValueError) as err:
        parse_configs([*spelled[:at], entry, *spelled[at:]], "val_configs")
    assert str(err.value) == f"val_configs: {entry!r} gives N={again} a second time; expected each N once"
