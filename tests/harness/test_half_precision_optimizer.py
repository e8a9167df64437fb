"""Half-precision parameters stay finite under the module's AdamW wherever a gradient is 0
(fault: `fit --config configs/fsdp.yaml --trainer.precision=16-true` stopped at global step 1 with
a NaN loss, printed by both ranks: FSDP2's sharded DTensor parameters got the for-each AdamW,
which rounds eps=1e-8 to 0 in float16 and divides 0 by 0 for every embedding row the batch did
not use; one process trained, its plain tensors get the fused update, which computes in float32).

The reported runs are real 2-process fits (subprocesses; Lightning starts the second rank). The
property steps the module's own optimizer over sharded (FSDP2, a one-rank gloo group) and plain
parameters in every dtype, for any set of tokens the batch uses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms import GRU
from swar_bench.module import TBPTTModule

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
LR, WD = 1e-2, 0.1


def _fit(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_", "SWAR_BENCH_LAUNCHER"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT), env.get("PYTHONPATH", "")])
    env["OMP_NUM_THREADS"] = "1"
    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", str(CONFIGS / "quickstart.yaml"),
            "--data.batch_size=2", "--data.val_configs=[32]", "--data.eval_examples=2",
            "--trainer.val_check_interval=100000", "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false", f"--trainer.logger.init_args.save_dir={tmp_path}",
            f"--checkpoint.dirpath={tmp_path / 'ckpt'}", *options]
    return subprocess.run(argv, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_fsdp2_trains_at_16_true(tmp_path):
    done = _fit(tmp_path, "--config", str(CONFIGS / "fsdp.yaml"), "--trainer.precision=16-true",
                "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=16", "--trainer.max_steps=3")
    assert done.returncode == 0, done.stderr[-3000:]
    saved = torch.load(tmp_path / "ckpt" / "last.ckpt", map_location="cpu", weights_only=False)
    assert saved["global_step"] == 3
    weights = [w for w in saved["state_dict"].values() if w.is_floating_point()]
    assert weights and all(w.dtype == torch.float16 and torch.isfinite(w).all() for w in weights)


def test_a_non_finite_loss_on_one_rank_ends_a_ddp_run_in_one_line(tmp_path):
    # the line names the rank whose loss it is (rank 0 had named its own finite loss), and only rank 0 prints it
    rank = 1
    done = _fit(tmp_path, "--config", str(CONFIGS / "ddp.yaml"), "--model.mechanism=harness.nan_mechanism.NaNAfter",
                "--model.mechanism.init_args.after=1", f"--model.mechanism.init_args.on_rank={rank}",
                "--model.tbptt_steps=1000", "--trainer.max_steps=10")
    assert done.returncode == 1, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("swar-bench")]
    assert len(lines) == 1 and re.fullmatch(
        rf"swar-bench: training stopped: non-finite training loss \(nan on rank {rank}\) at global step 1, batch 1, "
        r"n_writes=32, tokens 0\.\.\d+; stopping before the update, no checkpoint is written", lines[0]), done.stderr[-3000:]


@pytest.fixture(scope="module")
def one_rank_group(tmp_path_factory):
    """A one-rank gloo process group and its device mesh, for FSDP2 in this process."""
    from torch.distributed.device_mesh import init_device_mesh

    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    store = dist.FileStore(str(tmp_path_factory.mktemp("store") / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


@settings(max_examples=24, deadline=None)
@given(dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float32]), sharded=st.booleans(),
       tokens=st.lists(st.integers(0, 39), min_size=1, max_size=12), seed=st.integers(0, 2**16))
def test_weights_whose_gradient_is_zero_only_decay(one_rank_group, dtype, sharded, tokens, seed):
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(seed)
    model = TBPTTModule(GRU(d_model=8, n_layers=1), lr=LR, weight_decay=WD, warmup_steps=0)
    model.mechanism.to(dtype)
    if sharded:
        fully_shard(model.mechanism, mesh=one_rank_group)
    optimizer = model.configure_optimizers()["optimizer"]
    embedding = next(p for n, p in model.mechanism.named_parameters() if "emb" in n)
    before = _full(embedding).float().clone()
    ids = torch.tensor([tokens])
    logits, _ = model.mechanism(ids, model.mechanism.init_state(1))
    logits.float().square().mean().backward()
    optimizer.step()
    assert all(torch.isfinite(_full(p)).all() for p in model.mechanism.parameters())
    unused = [t for t in range(before.shape[0]) if t not in tokens]
    after = _full(embedding).float()
    decay = WD if embedding.dim() >= 2 else 0.0  # AdamW's decoupled decay, then a zero step
    tolerance = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-6}[dtype]
    torch.testing.assert_close(after[unused], before[unused] * (1 - LR * decay), rtol=tolerance, atol=tolerance)


def _full(p: torch.Tensor) -> torch.Tensor:
    return p.full_tensor().detach() if hasattr(p, "full_tensor") else p.detach()


def test_float16_weights_without_the_fused_update_are_refused(monkeypatch):
    import torch.utils._foreach_utils as foreach_utils

    monkeypatch.setattr(foreach_utils, "_get_fused_kernels_supported_devices", lambda: ["cuda"])  # none for cpu
    model = TBPTTModule(GRU(d_model=8, n_layers=1))
    model.configure_optimizers()  # float32: the for-each update is sound
    model.mechanism.to(torch.float16)
    with pytest.raises(ValueError, match=r"^parameters in float16 \(precision 16-true\) need AdamW's fused update.*"
                                         r"expected --trainer.precision=bf16-true, bf16-mixed or 32-true$"):
        model.configure_optimizers()
