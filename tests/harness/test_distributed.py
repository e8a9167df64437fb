"""DDP and FSDP2 on CPU (gloo, 2 processes) against one process: exact metrics, synced weights.

Each run is ``tests/harness/dist_run.py`` in a subprocess; Lightning launches its second rank.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("dist_run.py")


def _run(kind: str, out: Path) -> list[dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    for var in [v for v in env if v.startswith(("SLURM_", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_"))]:
        env.pop(var)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), kind, str(out)], env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    world = 1 if kind == "single" else 2
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(world)]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return _run("single", tmp_path_factory.mktemp("single"))[0]


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    return _run("ddp", tmp_path_factory.mktemp("ddp"))


def _check_against_single(ranks, single):
    assert [r["world_size"] for r in ranks] == [2, 2]
    merged = sorted(ranks[0]["before"] + ranks[1]["before"])
    reference = sorted(single["before"])
    # the ranks' shards together are exactly the one-process evaluation: no duplicate, no drop
    assert len({(r[0], r[1]) for r in merged}) == len(merged) == len(reference) > 0
    assert [r[:5] + r[6:] for r in merged] == [r[:5] + r[6:] for r in reference]
    for a, b in zip(merged, reference):
        assert a[5] == pytest.approx(b[5], abs=1e-5)
    # the callbacks' reduced metrics equal the one-process values, on every rank
    assert len(single["metrics_before"]) >= 10
    for r in ranks:
        assert r["metrics_before"] == single["metrics_before"]
        # val/loss: the mean over all answer tokens, not a mean of the ranks' unequal shards' means
        assert r["loss_before"] == pytest.approx(single["loss_before"], rel=1e-6)
        assert r["loss_before"] == pytest.approx(sum(x[5] for x in merged) / len(merged), rel=1e-6)
    # gradients were synced: every rank ends with the same weights
    for name, value in ranks[0]["weights"].items():
        assert torch.equal(value, ranks[1]["weights"][name]), name
    assert ranks[0]["global_step"] == ranks[1]["global_step"] > 0


def test_ddp_matches_one_process(ddp, single):
    _check_against_single(ddp, single)


def test_fsdp2_matches_one_process_and_ddp(tmp_path, ddp, single):
    fsdp = _run("fsdp", tmp_path)
    _check_against_single(fsdp, single)
    # FSDP2 (reduce-scatter of the same per-rank gradients) makes the DDP update
    for name, value in ddp[0]["weights"].items():
        torch.testing.assert_close(fsdp[0]["weights"][name], value, atol=1e-6, rtol=1e-5)
    assert fsdp[0]["metrics_after"].keys() == ddp[0]["metrics_after"].keys()
    for key, value in ddp[0]["metrics_after"].items():
        assert fsdp[0]["metrics_after"][key] == pytest.approx(value, abs=1e-6), key


def test_process_group_is_destroyed_at_exit(tmp_path):
    """gloo groups are torn down by our atexit hook (Lightning does it only for NCCL)."""
    script = tmp_path / "exit_hook.py"
    script.write_text(
        "import atexit, torch.distributed as dist\n"
        "from swar_bench.runtime.distributed import destroy_process_group_at_exit\n"
        f"dist.init_process_group('gloo', init_method='file://{tmp_path / 'store'}', rank=0, world_size=1)\n"
        # registered first, so it runs last (atexit is LIFO): it sees what our hook left
        "atexit.register(lambda: print('initialized at exit:', dist.is_initialized()))\n"
        "destroy_process_group_at_exit()\n"
        "destroy_process_group_at_exit()\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "initialized at exit: False"
