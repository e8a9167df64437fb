"""Metric states reduced over 2 gloo processes equal a one-process run over the same batches."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from swar_bench.callbacks import AnswerTypeCounts, CalibrationCounts

from .fakes import random_outputs


def _batches() -> list[dict]:
    g = torch.Generator().manual_seed(11)
    # Rank 0 gets the even batches, rank 1 the odd ones: n2048 only ever reaches rank 1.
    plan = [(32, 3), (2048, 2), (64, 4), (256, 1), (32, 2), (64, 3), (256, 2)]
    return [random_outputs(g, n, batch_size=b, per_row=12) for n, b in plan]


def _counts(batches: list[dict]) -> dict[str, torch.Tensor]:
    accuracy, calibration = AnswerTypeCounts(), CalibrationCounts()
    for batch in batches:
        accuracy.update_from_outputs(batch)
        calibration.update_from_outputs(batch)
    out = {f"acc.{k}": v for k, v in accuracy.compute().items()}
    out.update({f"cal.{k}": v for k, v in calibration.compute().items()})
    return out


def _worker(rank: int, world_size: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        counts = _counts(_batches()[rank::world_size])
        torch.save(counts, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_reduce_to_the_one_process_counts(tmp_path):
    mp.spawn(_worker, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    single = _counts(_batches())
    assert int(single["acc.count"].sum()) > 0
    for rank in (0, 1):
        reduced = torch.load(tmp_path / f"rank{rank}.pt")
        assert reduced.keys() == single.keys()
        for key, value in single.items():
            if value.dtype == torch.int64:
                assert torch.equal(reduced[key], value), (rank, key)
            else:  # float64 sums: the order of additions differs between the runs
                torch.testing.assert_close(reduced[key], value, rtol=1e-12, atol=1e-9)
