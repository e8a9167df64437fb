"""Training throughput at the frontier config, per mechanism: tokens/s and model FLOP utilisation
(MFU) against a matmul peak measured in the same run, optionally side by side with another
checkout of the code (``--baseline``), so a speed-up is a ratio measured in one run.

    python benchmarks/bench_frontier_speed.py --mechanisms GatedDeltaNet,GatedLinearAttention
    python benchmarks/bench_frontier_speed.py --baseline ../other-checkout --precisions 32-true,bf16-mixed

What runs: for each (code tree, mechanism, precision) one worker process (its own ``PYTHONPATH``,
so the baseline's ``swar_bench`` is the one imported there) builds the mechanism from that tree's
``configs/mechanisms/`` file and the module and data from its ``configs/results_frontier.yaml``
(batch 16, N=32 and N=64 training sequences, one TBPTT chunk per sequence, clip 1.0, AdamW, the
warmup-cosine schedule) and runs Lightning's ``Trainer.fit`` in that precision (``32-true`` or
``bf16-mixed``), one CPU thread. The workers take turns: in each round every worker trains
``--steps`` optimizer steps and pauses (blocked on its stdin, using no CPU) while the others
train, so a change in machine load hits all alike; the same data seed gives every worker the same
batches. Time is the worker's CPU time (``time.process_time``) from the start of each training
batch to its end, so it holds the whole step (forward, backward, clip, optimizer, the module's
logging) but not the data generation between batches nor the pauses.

Reported per configuration: the median over ``--rounds`` timed rounds (after ``--warmup``
untimed ones) of tokens/s (the batch's ``B * T`` tokens, padding included); MFU = tokens/s *
3 * ``flops_per_token`` (forward FLOPs per token of the model, ``MixerLM.flops_per_token``; a
backward costs about twice a forward) / the float32 matmul peak, the best of several 1-thread
``[512, 512] @ [512, 512]`` float32 matmuls measured by this process at the start; and with
``--baseline``, the ratio of this tree's median tokens/s to the baseline's at the same mechanism
and precision, with the range of the per-round ratios (both timed in the same round). On a
machine shared with other jobs CPU time still grows with cache and memory contention: compare
the ratios of one run, not absolute numbers across runs. Exits 1 if a worker fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MECHANISM_CONFIGS = {
    "GatedDeltaNet": "gated_delta_net.yaml",
    "DeltaNet": "delta_net.yaml",
    "GatedDeltaProduct": "gated_delta_product.yaml",
    "KimiDeltaAttention": "kimi_delta_attention.yaml",
    "Mamba2": "mamba2.yaml",
    "Mamba": "mamba.yaml",
    "MultiScaleRetention": "multi_scale_retention.yaml",
    "ScalarDecayLinearAttention": "scalar_decay_linear_attention_learned.yaml",
    "mLSTM": "mlstm.yaml",
    "LogLinearAttention": "log_linear_attention.yaml",
    "GatedLinearAttention": "gated_linear_attention.yaml",
    "HGRN2": "hgrn2.yaml",
    "RWKV7": "rwkv7.yaml",
    "Based": "based.yaml",
    "GRU": "gru.yaml",
    "LSTM": "lstm.yaml",
    "SlidingWindowAttention": "sliding_window_attention.yaml",
    "CausalAttention": "causal_attention.yaml",
}
PRECISIONS = ("32-true", "bf16-mixed")


def matmul_peak_gflops(n: int = 512, repeats: int = 20, dtype_name: str = "float32") -> float:
    """Best GFLOP/s (``2 n^3`` per product, CPU time) of ``repeats`` one-thread ``n x n`` matmuls."""
    import torch

    torch.set_num_threads(1)
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        a @ b
        best = min(best, time.process_time() - start)
    return 2 * n**3 / max(best, 1e-9) / 1e9


# ----------------------------------------------------------------------------- worker


def batch_tokens(batch) -> int:
    """``B * T`` of a training batch: its ``input_ids`` (an attribute of this tree's batch, a key of
    the dict batch an older checkout's data module yields, so ``--baseline`` may be one)."""
    ids = batch["input_ids"] if isinstance(batch, dict) else batch.input_ids
    return ids.numel()


def worker(tree: Path, mechanism: str, precision: str, steps: int, blocks: int) -> None:
    """Train ``mechanism`` from ``tree``'s configs for ``steps * blocks`` optimizer steps, pausing
    before each block of ``steps`` until a line arrives on stdin; after each block print one JSON
    line ``{"cpu_s", "tokens"}`` (then a last ``{"flops_per_token", "swar_bench"}`` line)."""
    import importlib

    import lightning.pytorch as pl
    import torch
    import yaml

    import swar_bench
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.module import TBPTTModule

    torch.set_num_threads(1)
    frontier = yaml.safe_load((tree / "configs" / "results_frontier.yaml").read_text())
    spec = yaml.safe_load((tree / "configs" / "mechanisms" / MECHANISM_CONFIGS[mechanism]).read_text())
    spec = spec["model"]["mechanism"]
    module_name, cls_name = spec["class_path"].rsplit(".", 1)
    pl.seed_everything(0, verbose=False)
    model_cls = getattr(importlib.import_module(module_name), cls_name)
    mech = model_cls(**spec.get("init_args", {}))
    model = TBPTTModule(mech, **frontier["model"])
    data = dict(frontier["data"], val_configs=[32], eval_examples=4)
    dm = PasskeySwarDataModule(**data)

    class Blocks(pl.Callback):
        def __init__(self) -> None:
            self.done = 0
            self.cpu = 0.0
            self.tokens = 0
            self.start = 0.0

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            if self.done % steps == 0:
                sys.stdin.readline()  # wait for our turn
                self.cpu, self.tokens = 0.0, 0
            self.start = time.process_time()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.cpu += time.process_time() - self.start
            self.tokens += batch_tokens(batch)
            self.done += 1
            if self.done % steps == 0:
                print(json.dumps({"cpu_s": self.cpu, "tokens": self.tokens}), flush=True)

    trainer = pl.Trainer(
        accelerator="cpu", devices=1, precision=precision, max_steps=steps * blocks, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0, limit_val_batches=0, callbacks=[Blocks()],
    )
    trainer.fit(model, datamodule=dm)
    print(json.dumps({"flops_per_token": float(mech.flops_per_token), "swar_bench": swar_bench.__file__}), flush=True)


# ----------------------------------------------------------------------------- parent


def start_worker(tree: Path, mechanism: str, precision: str, steps: int, blocks: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(tree), mechanism, precision,
           str(steps), str(blocks)]
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=str(tree))


def read_json(proc: subprocess.Popen) -> dict:
    """The next JSON line of a worker's stdout (other lines, e.g. library notices, are skipped)."""
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {proc.args[3:6]} ended early (exit {proc.wait()})")
        if line.startswith("{"):
            return json.loads(line)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        tree, mechanism, precision, steps, blocks = argv[1:6]
        worker(Path(tree), mechanism, precision, int(steps), int(blocks))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", default="GatedDeltaNet,GatedLinearAttention",
                        help=f"comma-separated, from: {', '.join(MECHANISM_CONFIGS)}")
    parser.add_argument("--precisions", default="32-true", help=f"comma-separated, from {PRECISIONS}")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of this repository, run side by side (ratio = this / baseline)")
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps per worker per round (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds, median reported (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    args = parser.parse_args(argv)
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    if not mechs or any(m not in MECHANISM_CONFIGS for m in mechs):
        parser.error(f"--mechanisms={args.mechanisms!r}: expected names from {list(MECHANISM_CONFIGS)}")
    if not precisions or any(p not in PRECISIONS for p in precisions):
        parser.error(f"--precisions={args.precisions!r}: expected from {PRECISIONS}")
    if min(args.steps, args.rounds) < 1 or args.warmup < 0:
        parser.error("--steps and --rounds must be >= 1, --warmup >= 0")
    trees = [("this", ROOT)]
    if args.baseline is not None:
        base = args.baseline.resolve()
        if not (base / "swar_bench" / "module.py").is_file():
            parser.error(f"--baseline {args.baseline}: not a checkout of this repository (no swar_bench/module.py)")
        trees.append(("baseline", base))
    peak = matmul_peak_gflops()
    peak_bf16 = matmul_peak_gflops(dtype_name="bfloat16")
    blocks = args.warmup + args.rounds
    configs = [(label, tree, m, p) for m in mechs for p in precisions for label, tree in trees]
    procs = [start_worker(tree, m, p, args.steps, blocks) for _, tree, m, p in configs]
    rates: list[list[float]] = [[] for _ in configs]
    try:
        for r in range(blocks):
            for i, proc in enumerate(procs):
                proc.stdin.write("go\n")
                proc.stdin.flush()
                block = read_json(proc)
                if r >= args.warmup:
                    rates[i].append(block["tokens"] / max(block["cpu_s"], 1e-9))
            print(f"round {r + 1}/{blocks} done", file=sys.stderr, flush=True)
        finals = [read_json(proc) for proc in procs]
        codes = [proc.wait(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    if any(codes):
        print(f"error: a worker failed (exit statuses {codes})", file=sys.stderr)
        return 1
    print(
        f"frontier training throughput (configs/results_frontier.yaml: batch 16, N=32 and N=64, "
        f"Lightning fit), 1 thread per worker, CPU time, median of {args.rounds} interleaved rounds of "
        f"{args.steps} steps after {args.warmup} warm-up; float32 matmul peak {peak:.1f} GFLOP/s, "
        f"bfloat16 {peak_bf16:.1f} GFLOP/s (1 thread, measured in this run)\n"
    )
    print("| mechanism | precision | code | tokens/s | MFU (vs fp32 peak) | ratio vs baseline | per-round ratios (min..max) |")
    print("|---|---|---|---:|---:|---:|---:|")
    median = {(c[0], c[2], c[3]): statistics.median(r) for c, r in zip(configs, rates)}
    per_round = {(c[0], c[2], c[3]): r for c, r in zip(configs, rates)}

    def spread(a: tuple, b: tuple) -> str:
        """min..max over rounds of the ratio of two configurations timed in the same round."""
        ratios = [x / y for x, y in zip(per_round[a], per_round[b])]
        return f"{min(ratios):.2f}..{max(ratios):.2f}"

    for (label, _, m, p), final in zip(configs, finals):
        rate = median[(label, m, p)]
        mfu = rate * 3 * final["flops_per_token"] / (peak * 1e9)
        base = median.get(("baseline", m, p))
        ratio = f"{rate / base:.2f}x" if base and label == "this" else "-"
        rng = spread((label, m, p), ("baseline", m, p)) if base and label == "this" else "-"
        print(f"| {m} | {p} | {label} | {rate:,.0f} | {100 * mfu:.1f}% | {ratio} | {rng} |")
    for label, tree in trees:
        paths = sorted({f["swar_bench"] for c, f in zip(configs, finals) if c[0] == label})
        print(f"code {label}: {tree} (imported {', '.join(paths)})")
    if ("baseline", mechs[0], "32-true") in median:
        for m in mechs:
            for p in precisions:
                if p != "32-true" and ("this", m, p) in median:
                    print(f"{m}: this code in {p} vs baseline in 32-true: "
                          f"{median[('this', m, p)] / median[('baseline', m, '32-true')]:.2f}x "
                          f"(per round {spread(('this', m, p), ('baseline', m, '32-true'))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
