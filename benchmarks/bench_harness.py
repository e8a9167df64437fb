"""Harness overhead: training tokens/s of TBPTTModule under Lightning vs a plain PyTorch loop.

Both train the same mechanism (the quickstart Gated DeltaNet by default) on the same generated
passkey_swar batches (one chunk per sequence, one AdamW step per batch, gradient clipping). The
plain loop gets its batches pre-built; the Lightning run builds them on the fly through
PasskeySwarDataModule, so its number includes data generation. Timed: the steps after
``--warmup`` warm-up steps; the two paths alternate ``--repeats`` times and the medians are
reported (the machine may be shared). Prints a markdown table; exits 1 when a measurement failed.

    python benchmarks/bench_harness.py --steps 100 --repeats 3 --threads 2
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import lightning.pytorch as pl  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from swar_bench.datamodules.passkey_swar import PasskeySwarBatches, PasskeySwarDataModule  # noqa: E402
from swar_bench.mechanisms import GatedDeltaNet  # noqa: E402
from swar_bench.module import TBPTTModule, shift_targets  # noqa: E402


def make_mechanism() -> torch.nn.Module:
    torch.manual_seed(0)
    return GatedDeltaNet(d_model=64, n_layers=1, n_heads=2)


def plain_loop(n_writes: int, batch_size: int, steps: int, warmup: int) -> tuple[float, int]:
    """Tokens/s and timed tokens of a hand-written loop over pre-built batches."""
    mech = make_mechanism()
    opt = torch.optim.AdamW(mech.parameters(), lr=3e-3)
    ds = PasskeySwarBatches("generate")
    batches = [ds[("train", n_writes, tuple(range(i * batch_size, (i + 1) * batch_size)))] for i in range(steps + warmup)]
    tokens, t0 = 0, None
    for i, b in enumerate(batches):
        if i == warmup:
            t0 = time.perf_counter()
        logits, _ = mech(b["input_ids"], mech.init_state(batch_size))
        loss = F.cross_entropy(logits.flatten(0, 1), shift_targets(b["labels"]).flatten(), ignore_index=-100)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(mech.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= warmup:
            tokens += b["input_ids"].numel()
    return tokens / (time.perf_counter() - t0), tokens


class _Clock(pl.Callback):
    def __init__(self, warmup: int) -> None:
        self.warmup, self.t0, self.t1, self.tokens = warmup, None, None, 0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == self.warmup:
            self.t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx >= self.warmup:
            self.tokens += batch["input_ids"].numel()
            self.t1 = time.perf_counter()


def lightning_run(n_writes: int, batch_size: int, steps: int, warmup: int) -> tuple[float, int]:
    """Tokens/s and timed tokens of TBPTTModule + PasskeySwarDataModule under a Trainer."""
    model = TBPTTModule(make_mechanism(), lr=3e-3, warmup_steps=0, tbptt_steps=100_000, grad_clip=1.0)
    data = PasskeySwarDataModule(train_configs=[n_writes], batch_size=batch_size, examples_per_epoch=10**6)
    clock = _Clock(warmup)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, max_steps=steps + warmup, limit_val_batches=0, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[clock],
    )
    trainer.fit(model, datamodule=data)
    return clock.tokens / (clock.t1 - clock.t0), clock.tokens


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--n-writes", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    plain_runs, harness_runs = [], []
    try:
        for _ in range(args.repeats):
            plain_runs.append(plain_loop(args.n_writes, args.batch_size, args.steps, args.warmup))
            harness_runs.append(lightning_run(args.n_writes, args.batch_size, args.steps, args.warmup))
    except Exception as err:  # report, do not hide: a benchmark that could not measure fails
        print(f"bench_harness: could not measure: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    if not all(rate > 0 and tokens > 0 for rate, tokens in plain_runs + harness_runs):
        print("bench_harness: could not measure: no timed tokens", file=sys.stderr)
        return 1
    plain = statistics.median(rate for rate, _ in plain_runs)
    harness = statistics.median(rate for rate, _ in harness_runs)
    print(f"GatedDeltaNet d_model=64 n_layers=1, N={args.n_writes}, batch {args.batch_size}, "
          f"{args.steps} timed steps, median of {args.repeats}, {args.threads} threads\n")
    print("| path | tokens/s | relative to plain loop |")
    print("| :--- | ---: | ---: |")
    print(f"| plain PyTorch loop (pre-built batches) | {plain:,.0f} | 1.00 |")
    print(f"| TBPTTModule + DataModule + Trainer | {harness:,.0f} | {harness / plain:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
