"""scripts/slurm/fit.sbatch: Lightning's SLURM detection and the srun command it builds."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
from pathlib import Path

import lightning.pytorch as pl
import pytest
from lightning.pytorch.plugins.environments import SLURMEnvironment

SBATCH = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "fit.sbatch"


def sbatch_options() -> dict[str, str]:
    """The ``#SBATCH --key=value`` lines of the script (flags without a value map to "")."""
    opts = {}
    for line in SBATCH.read_text().splitlines():
        m = re.match(r"#SBATCH\s+--([\w-]+)(?:=(\S+))?", line)
        if m:
            opts[m.group(1)] = m.group(2) or ""
    return opts


def slurm_env(opts: dict[str, str], procid: int) -> dict[str, str]:
    """The variables srun sets for task ``procid`` of a job submitted with ``opts``."""
    nodes, per_node = int(opts["nodes"]), int(opts["ntasks-per-node"])
    return {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": opts["job-name"],
        "SLURM_NNODES": str(nodes),
        "SLURM_NTASKS": str(nodes * per_node),
        "SLURM_NTASKS_PER_NODE": str(per_node),
        "SLURM_JOB_NODELIST": f"gpu[01-{nodes:02d}]",
        "SLURM_NODELIST": f"gpu[01-{nodes:02d}]",
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(procid % per_node),
        "SLURM_NODEID": str(procid // per_node),
    }


def test_sbatch_requests_signal_requeue_and_one_task_per_device():
    opts = sbatch_options()
    assert opts["signal"] == "SIGUSR1@90"
    assert "requeue" in opts
    assert int(opts["ntasks-per-node"]) == int(opts["gpus-per-node"])


def test_lightning_detects_the_sbatch_layout(monkeypatch):
    opts = sbatch_options()
    nodes, per_node = int(opts["nodes"]), int(opts["ntasks-per-node"])
    procid = nodes * per_node - 3
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    for key, value in slurm_env(opts, procid).items():
        monkeypatch.setenv(key, value)
    assert SLURMEnvironment.detect()
    env = SLURMEnvironment()
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (
        nodes * per_node, procid, procid % per_node, procid // per_node
    )
    assert env.main_address == "gpu01"
    assert env.auto_requeue and env.requeue_signal == signal.SIGUSR1  # matches --signal=SIGUSR1@90
    # the Trainer the script starts (devices = ntasks-per-node) picks the SLURM environment; it
    # sets the process-wide rank of rank_zero_only to procid: restored after the test, or every
    # later test in this process would run as a non-zero rank (no logs, no TensorBoard images)
    from lightning.fabric.utilities import rank_zero as fabric_rank_zero
    from lightning.pytorch.utilities import rank_zero as pytorch_rank_zero
    from lightning_utilities.core import rank_zero as utils_rank_zero

    for holder in {id(m.rank_zero_only): m.rank_zero_only for m in (fabric_rank_zero, pytorch_rank_zero, utils_rank_zero)}.values():
        monkeypatch.setattr(holder, "rank", holder.rank)
    trainer = pl.Trainer(
        accelerator="cpu", devices=per_node, num_nodes=nodes, strategy="ddp",
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
    )
    assert isinstance(trainer.strategy.cluster_environment, SLURMEnvironment)
    assert (trainer.world_size, trainer.global_rank, trainer.local_rank, trainer.node_rank) == (
        nodes * per_node, procid, procid % per_node, procid // per_node
    )


@pytest.mark.parametrize("preempted", [False, True])
def test_sbatch_srun_command_resumes(tmp_path, preempted):
    opts = sbatch_options()
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    srun = fake_bin / "srun"
    srun.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$SRUN_ARGS"\n')
    srun.chmod(srun.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{fake_bin}:{os.environ['PATH']}", "SRUN_ARGS": str(tmp_path / "args.txt")}
    env.update(slurm_env(opts, 0))
    root = tmp_path / "runs" / "slurm" / opts["job-name"]
    if preempted:
        root.mkdir(parents=True)
        (root / "hpc_ckpt_1.ckpt").write_bytes(b"")
    subprocess.run(["bash", str(SBATCH), "--trainer.max_steps=7"], cwd=tmp_path, env=env, check=True, timeout=30)
    args = (tmp_path / "args.txt").read_text().split("\n")
    assert args[:3] == ["--kill-on-bad-exit=1", "swar-bench", "fit"]
    assert f"--trainer.devices={opts['ntasks-per-node']}" in args
    assert f"--trainer.num_nodes={opts['nodes']}" in args
    assert f"--ckpt_path={'hpc' if preempted else 'last'}" in args
    assert "--trainer.max_steps=7" in args
