"""scripts/slurm/fit.sbatch: Lightning's SLURM detection and the srun command it builds."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
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


def _checkpoint(path: Path, step: int) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"global_step": step, "state_dict": {}}, path)


def _run_sbatch(tmp_path: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The script as the batch step runs it, with an ``srun`` that records its arguments."""
    opts = sbatch_options()
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    srun = fake_bin / "srun"
    srun.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$SRUN_ARGS"\n')
    srun.chmod(srun.stat().st_mode | stat.S_IEXEC)
    env = {
        "PATH": f"{fake_bin}:/usr/bin:/bin", "SRUN_ARGS": str(tmp_path / "args.txt"),
        "VENV": str(Path(sys.executable).parent.parent),  # the venv running the tests
    }
    env.update(slurm_env(opts, 0))
    env.update(env_extra or {})
    return subprocess.run(
        ["bash", str(SBATCH), "--trainer.max_steps=7"], cwd=tmp_path, env=env, capture_output=True, text=True,
        check=False, timeout=60,
    )


def test_sbatch_output_goes_to_a_folder_that_exists_before_the_job_starts():
    # SLURM opens --output before the script runs: a folder the script creates is too late
    # (JobLaunchFailure, no log); the submit directory always exists
    assert os.path.dirname(sbatch_options()["output"]) == ""


def test_sbatch_srun_command_continues_one_run_per_job(tmp_path):
    opts = sbatch_options()
    done = _run_sbatch(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"fit.sbatch: job 4242 (restart 0) on gpu[01-02]: {opts['nodes']} node(s) x {opts['ntasks-per-node']} task(s), "
        "configs/quickstart.yaml --trainer.max_steps=7\n"
    )
    args = (tmp_path / "args.txt").read_text().split("\n")
    assert args[:3] == ["--kill-on-bad-exit=1", "swar-bench", "fit"]
    assert f"--trainer.devices={opts['ntasks-per-node']}" in args
    assert f"--trainer.num_nodes={opts['nodes']}" in args
    # one run folder (TensorBoard version) for the job, the same for every requeue of it, resumed
    # from its newest checkpoint; the user's arguments come last, so they win
    assert "--trainer.logger.init_args.version=slurm_4242" in args
    assert args.index("--ckpt_path=last") < args.index("--trainer.max_steps=7")


def test_sbatch_without_a_venv_says_where_it_looked(tmp_path):
    done = _run_sbatch(tmp_path, {"VENV": str(tmp_path / "no-venv")})
    assert done.returncode == 2
    assert done.stderr == (
        f"fit.sbatch: error: swar-bench not found: no {tmp_path / 'no-venv'}/bin/swar-bench (make install builds .venv; "
        "or set VENV=...) and none on PATH\n"
    )
    assert not (tmp_path / "args.txt").exists()


# (hpc step, last step) -> what `--ckpt_path last` of a job resumes: the larger recorded global
# step, whatever the names and file times (an hpc checkpoint older than last.ckpt after a requeue
# without the signal, the reported case: 102 vs 199)
@pytest.mark.parametrize(
    ("hpc_step", "last_step", "expected"),
    [(None, None, None), (None, 12, "last"), (102, 199, "last"), (40, 30, "hpc")],
)
def test_a_requeued_job_resumes_from_its_newest_checkpoint(tmp_path, hpc_step, last_step, expected):
    from swar_bench.harness.runs import last_checkpoint

    folder = tmp_path / "slurm_4242" / "checkpoints"
    paths = {"hpc": folder / "hpc_ckpt_1.ckpt", "last": folder / "last.ckpt"}
    if last_step is not None:
        _checkpoint(paths["last"], last_step)
    if hpc_step is not None:
        _checkpoint(paths["hpc"], hpc_step)  # written after last.ckpt
    found = last_checkpoint(tmp_path, "slurm_4242")
    assert found == (None if expected is None else (paths[expected], "slurm_4242"))


def test_the_cli_puts_everything_of_the_job_in_its_run_folder(tmp_path, monkeypatch):
    """What the script passes to `swar-bench fit` makes the job's run folder the logger's folder
    (one TensorBoard run, fixed for the job) and the parent of its checkpoint folder."""
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.lightning_cli import SwarBenchCLI, trainer_defaults
    from swar_bench.module import TBPTTModule

    done = _run_sbatch(tmp_path)
    assert done.returncode == 0, done.stderr
    args = [a for a in (tmp_path / "args.txt").read_text().split("\n")[3:] if a]
    local = {"--trainer.accelerator": "cpu", "--trainer.devices": "1", "--trainer.num_nodes": "1", "--trainer.strategy": "auto"}
    args = [f"{a.split('=', 1)[0]}={local[a.split('=', 1)[0]]}" if a.split("=", 1)[0] in local else a for a in args]
    args[args.index("--config") + 1] = str(SBATCH.parents[2] / args[args.index("--config") + 1])
    args = [a for a in args if not a.startswith("--ckpt_path")]  # no subcommand here (run=False)
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    args = [*args, "--model.mechanism=swar_bench.mechanisms.GRU"]
    cli = SwarBenchCLI(TBPTTModule, PasskeySwarDataModule, args=args, trainer_defaults=trainer_defaults(args), run=False)
    assert Path(cli.trainer.logger.log_dir).resolve() == (tmp_path / "runs" / "quickstart" / "GRU" / "slurm_4242").resolve()
    assert cli.trainer.checkpoint_callback.dirpath is None  # Lightning puts it in <log_dir>/checkpoints
