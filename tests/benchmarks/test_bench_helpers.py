"""Pure functions and the timing callback of benchmarks/bench_data.py and benchmarks/bench_streaming_eval.py."""

import importlib.util
import json
import resource
from pathlib import Path

import numpy as np
import pytest
import torch

from swar_bench.datamodules.batches import Batch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_data = _load("bench_data")
bench_streaming_eval = _load("bench_streaming_eval")


def test_data_share_sums_the_fetches_inside_the_timed_iterations():
    # batch i ends at ends[i]; iteration i (ends[i-1]..ends[i]) holds fetch[i]
    ends = [0.0, 1.0, 3.0, 6.0, 10.0]
    fetch = [9.0, 9.0, 0.5, 0.25, 1.0, 7.0]  # the extra last fetch (end of epoch) is not counted
    share, step_s, steps = bench_data.data_share(fetch, ends, warmup=1)
    # timed: iterations 2..4, wall 10 - 1 = 9 s, waited 0.5 + 0.25 + 1.0
    assert steps == 3
    assert step_s == pytest.approx(3.0)
    assert share == pytest.approx(1.75 / 9.0)


def test_data_share_rejects_too_few_batches():
    with pytest.raises(ValueError, match="warmup=3"):
        bench_data.data_share([0.1] * 4, [0.0, 1.0, 2.0, 3.0], warmup=3)
    with pytest.raises(ValueError, match="one fetch per batch"):
        bench_data.data_share([0.1], [0.0, 1.0, 2.0], warmup=0)


def test_same_examples_compares_every_column_across_dtypes():
    a = [{"input_ids": np.array([1, 3, 8], np.int16), "labels": np.array([-100, -100, 20], np.int16),
          "answer_type": ["passkey"], "n_writes": 32, "seed": 7}]
    b = [{"input_ids": np.array([1, 3, 8], np.int64), "labels": np.array([-100, -100, 20]),
          "answer_type": np.array(["passkey"]), "n_writes": np.int64(32), "seed": np.int64(7)}]
    assert bench_data.same_examples(a, b)
    for key, value in (("labels", np.array([-100, -100, 21])), ("seed", 8), ("answer_type", ["ar_valid"])):
        c = [dict(b[0], **{key: value})]
        assert not bench_data.same_examples(a, c)
    assert not bench_data.same_examples(a, a + a)


def test_examples_for_keeps_tokens_about_equal_across_n():
    assert [bench_streaming_eval.examples_for(n, 4) for n in (256, 1024, 4096, 16384)] == [256, 64, 16, 4]
    assert bench_streaming_eval.examples_for(16384, 4, top_n=1024) == 4


def test_eval_clock_writes_tokens_batches_and_peak_rss(tmp_path):
    out = tmp_path / "clock.json"
    clock = bench_streaming_eval.EvalClock(str(out))
    clock.on_test_start(None, None)
    for b in range(3):
        grid = torch.zeros((4, 10 + b), dtype=torch.int64)
        batch = Batch(input_ids=grid, labels=grid, answer_kind=grid, key_age=grid,
                      n_writes=torch.full((4,), 32), seed=torch.zeros(4, dtype=torch.int64))
        clock.on_test_batch_start(None, None, batch, b)
        clock.on_test_batch_end(None, None, {}, batch, b)
    clock.on_test_end(None, None)
    record = json.loads(out.read_text())
    assert record["tokens"] == 4 * (10 + 11 + 12)
    assert record["batches"] == 3
    assert record["seconds"] >= 0 and record["cpu_seconds"] >= 0
    assert 0 < record["maxrss_start_kib"] <= record["maxrss_end_kib"] <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert not (tmp_path / "clock.json.tmp").exists()
