"""Checks of a swar-bench run folder, for scripts/slurm/integration_test.sh.

    python scripts/slurm/check_run.py step CKPT                 # prints the recorded global_step
    python scripts/slurm/check_run.py steps RUN_DIR TAG         # sorted distinct steps TAG was logged at
    python scripts/slurm/check_run.py same-weights CKPT CKPT    # exit 1 unless every tensor is equal
    python scripts/slurm/check_run.py layout RUN_DIR            # exit 1 unless the run is one folder

Each prints one line; a failed check exits 1 with the reason.
"""

from __future__ import annotations

import glob
import os
import sys


def _load(path: str) -> dict:
    from swar_bench.runtime.checkpoint_io import load_checkpoint

    return load_checkpoint(path)


def logged_steps(run_dir: str, tag: str) -> list[int]:
    """Distinct steps at which ``tag`` was logged in the TensorBoard event files of ``run_dir``
    itself (one run: every file of the folder, however many processes wrote them)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    steps: set[int] = set()
    for events in sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))):
        accumulator = EventAccumulator(events, size_guidance={"scalars": 0})
        accumulator.Reload()
        if tag in accumulator.Tags()["scalars"]:
            steps.update(event.step for event in accumulator.Scalars(tag))
    return sorted(steps)


def layout_problems(run_dir: str) -> list[str]:
    """What of a fit job lies outside the one-folder layout: each TensorBoard event file directly
    in ``run_dir`` (no ``version_N`` folders), config.yaml, checkpoints/last.ckpt, slurm.out."""
    problems = []
    for required in ("config.yaml", "slurm.out", os.path.join("checkpoints", "last.ckpt")):
        if not os.path.isfile(os.path.join(run_dir, required)):
            problems.append(f"no {required}")
    if not glob.glob(os.path.join(run_dir, "events.out.tfevents.*")):
        problems.append("no TensorBoard event file")
    nested = [p for p in glob.glob(os.path.join(run_dir, "**", "events.out.tfevents.*"), recursive=True)
              if os.path.dirname(p) != run_dir.rstrip("/")]
    problems += [f"event file outside the run folder's top: {os.path.relpath(p, run_dir)}" for p in nested]
    versions = glob.glob(os.path.join(run_dir, "**", "version_*"), recursive=True)
    problems += [f"a version folder: {os.path.relpath(p, run_dir)}" for p in versions]
    return problems


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "step":
        print(int(_load(argv[1])["global_step"]))
        return 0
    if len(argv) == 3 and argv[0] == "steps":
        print(" ".join(str(s) for s in logged_steps(argv[1], argv[2])))
        return 0
    if len(argv) == 3 and argv[0] == "same-weights":
        import torch

        a, b = _load(argv[1])["state_dict"], _load(argv[2])["state_dict"]
        if a.keys() != b.keys():
            print(f"different tensors: {sorted(set(a) ^ set(b))}")
            return 1
        differ = [k for k in a if not torch.equal(a[k], b[k])]
        if differ:
            worst = max(float((a[k].double() - b[k].double()).abs().max()) for k in differ)
            print(f"{len(differ)} of {len(a)} tensors differ (largest difference {worst:.3g}), e.g. {differ[0]}")
            return 1
        print(f"all {len(a)} tensors equal")
        return 0
    if len(argv) == 2 and argv[0] == "layout":
        problems = layout_problems(argv[1])
        print("; ".join(problems) if problems else "one run folder")
        return 1 if problems else 0
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
