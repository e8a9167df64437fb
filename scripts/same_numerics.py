"""Do two commits train bit for bit the same? The evidence a study needs before it declares a
commit ``compatible_code`` (docs/STUDY.md, "Code versions").

    python scripts/same_numerics.py OLD_COMMIT [NEW_COMMIT]   # NEW defaults to the working tree

For each mechanism below, one short fit of the frontier budget (``configs/results_frontier.yaml``:
the same seeds, data and optimizer, 30 steps, a validation every 10) runs in a checkout of each
commit (``git worktree``, removed afterwards), then ``test`` of its checkpoint at n32 and n64; the
two final checkpoints' weights and the two ``answer_type_accuracy.csv`` files are compared exactly
(``torch.equal``, ``==``). Prints one line per
mechanism and exits 0 when every one is identical, 1 otherwise (2 on bad arguments).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MECHANISMS = {
    "ScalarDecay0.99_conv4": ["--config", "configs/mechanisms/scalar_decay_linear_attention_decay0.99.yaml",
                              "--model.mechanism.init_args.conv_size=4"],
    "GatedDeltaNet": ["--config", "configs/mechanisms/gated_delta_net.yaml"],
    "DeltaNet_noconv": ["--config", "configs/mechanisms/delta_net.yaml", "--model.mechanism.init_args.conv_size=0"],
    "Mamba": ["--config", "configs/mechanisms/mamba.yaml"],
}
STEPS = 30


def _fit(tree: Path, name: str, extra: list[str], out: Path) -> tuple[Path, list[str]]:
    run = out / name
    args = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", "configs/results_frontier.yaml", *extra,
            f"--trainer.max_steps={STEPS}", f"--model.max_steps={STEPS}", "--trainer.val_check_interval=10",
            "--data.eval_examples=32", "--data.seed=1", "--data.train_index_start=500000", "--seed_everything=1",
            f"--trainer.logger.init_args.save_dir={run}", "--trainer.logger.init_args.name=run",
            f"--checkpoint.dirpath={run / 'checkpoints'}"]
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    done = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fit of {name} in {tree} failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    ckpt = run / "checkpoints" / "last.ckpt"
    args = [sys.executable, "-m", "swar_bench.cli", "test", "--config", "configs/results_frontier.yaml", *extra,
            "--data.test_configs=[32,64]", "--data.eval_examples=32", f"--trainer.logger.init_args.save_dir={run / 'test'}",
            f"--ckpt_path={ckpt}"]
    done = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"test of {name} in {tree} failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    table = [p.read_text() for p in sorted((run / "test").rglob("answer_type_accuracy.csv"))]
    return ckpt, table


def _compare(a: Path, b: Path) -> str | None:
    import torch

    from swar_bench.runtime.checkpoint_io import load_checkpoint

    ca, cb = (load_checkpoint(p) for p in (a, b))
    sa, sb = ca["state_dict"], cb["state_dict"]
    if sa.keys() != sb.keys():
        return f"different parameters: {sorted(set(sa) ^ set(sb))[:3]}"
    for key in sa:
        if not torch.equal(sa[key], sb[key]):
            return f"{key} differs (max |diff| {float((sa[key].float() - sb[key].float()).abs().max()):.3g})"
    if ca["global_step"] != cb["global_step"]:
        return f"global_step {ca['global_step']} vs {cb['global_step']}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default=None, help="a commit; default: the working tree as it is")
    parser.add_argument("--mechanisms", default=",".join(MECHANISMS), help=f"comma-separated subset of {list(MECHANISMS)}")
    args = parser.parse_args(argv)
    names = [m for m in args.mechanisms.split(",") if m]
    unknown = [m for m in names if m not in MECHANISMS]
    if unknown or not names:
        parser.error(f"--mechanisms={args.mechanisms!r}: expected names from {list(MECHANISMS)}")
    with tempfile.TemporaryDirectory(prefix="same-numerics-") as tmp:
        tmp = Path(tmp)
        trees = []
        try:
            for label, commit in (("old", args.old), ("new", args.new)):
                if commit is None:
                    trees.append(ROOT)
                    continue
                tree = tmp / label
                done = subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=ROOT,
                                      capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    parser.error(f"{label} commit {commit!r}: {done.stderr.strip().splitlines()[-1]}")
                trees.append(tree)
            bad = 0
            for name in names:
                (ckpt_a, table_a), (ckpt_b, table_b) = (
                    _fit(tree, name, MECHANISMS[name], tmp / f"runs-{i}") for i, tree in enumerate(trees)
                )
                diff = _compare(ckpt_a, ckpt_b)
                if diff is None and table_a != table_b:
                    diff = "the test accuracy tables differ"
                if diff is None and not table_a:
                    diff = "the test wrote no accuracy table"
                bad += diff is not None
                print(f"{name}: {'identical' if diff is None else 'DIFFERENT: ' + diff} after {STEPS} steps")
            return 1 if bad else 0
        finally:
            for tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True, check=False)


if __name__ == "__main__":
    sys.exit(main())
