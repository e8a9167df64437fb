"""benchmarks/bench_harness.py: the `swar-bench fit` path and the bare loop compute the same training."""

import argparse
import importlib.util
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_harness = _load("bench_harness")


def _tiny_args(**kw):
    # N=32 (~140 tokens) in chunks of 48 tokens: 3 chunks, 3 optimizer steps per batch
    base = {"n_writes": 32, "batch_size": 2, "tbptt_steps": 48, "warmup_steps": 2, "horizon": 9, "steps": 2, "warmup": 1}
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture(scope="module")
def tiny_runs():
    args = _tiny_args()
    return bench_harness.bare_run(args), bench_harness.harness_run(args)


def test_fit_path_and_bare_loop_train_identically_over_several_chunks(tiny_runs):
    bare, harness = tiny_runs
    assert len(bare.losses) == len(harness.losses) == 3
    assert bare.losses == pytest.approx(harness.losses, rel=1e-6)
    assert bench_harness.max_rel_diff(bare, harness)[1] <= 1e-6
    # both timed the same batches: 2 batches of 2 rows
    assert bare.tokens == harness.tokens
    assert bare.tokens % 4 == 0 and bare.tokens // 4 > 3 * 32
    assert bare.tokens_per_s > 0 and harness.tokens_per_s > 0


def test_training_moved_the_weights(tiny_runs):
    bare, _ = tiny_runs
    cls, init_args, seed, _ = bench_harness.quickstart_mechanism_and_seed()
    torch.manual_seed(seed)
    init = cls(**init_args).state_dict()
    moved = [k for k in init if not torch.equal(init[k], bare.weights[k])]
    assert len(moved) > 0


def test_a_different_schedule_is_detected(tiny_runs):
    bare, _ = tiny_runs
    other = bench_harness.bare_run(_tiny_args(warmup_steps=1))
    loss_diff, weight_diff = bench_harness.max_rel_diff(bare, other)
    assert weight_diff > 1e-3
    assert loss_diff > 0


def test_max_rel_diff_rejects_runs_of_different_length(tiny_runs):
    bare, harness = tiny_runs
    short = bench_harness.RunResult(1.0, 1, bare.losses[:-1], bare.weights)
    with pytest.raises(ValueError, match="batches"):
        bench_harness.max_rel_diff(short, harness)


def test_cli_args_override_the_quickstart_config():
    args = _tiny_args()
    argv = bench_harness.cli_args(args, "out")
    assert argv[0].startswith("--config=") and argv[0].endswith("quickstart.yaml")
    assert "--data.train_configs=[32]" in argv
    assert "--model.tbptt_steps=48" in argv
    assert "--trainer.limit_train_batches=3" in argv
    assert "--model.max_steps=9" in argv
