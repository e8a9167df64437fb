"""Harness overhead: ``swar-bench fit`` training tokens/s vs a bare PyTorch TBPTT loop.

Harness side: the product's entry point, ``SwarBenchCLI`` (what ``swar-bench fit`` runs), built
in-process from ``configs/quickstart.yaml`` plus overrides with ``run=False``, then
``cli.trainer.fit(cli.model, datamodule=cli.datamodule)``: TBPTTModule, PasskeySwarDataModule
generating the batches on the fly (the config's ``num_workers=0``), the always-on checkpoint /
metric callbacks and the TensorBoard logger (written to a temporary folder). Overrides: one
training N (``--n-writes``), ``--batch-size``, ``--tbptt-steps``, ``--warmup-steps`` and a cosine
horizon (``model.max_steps``) short enough that both schedule phases run, a fixed number of
training batches, no validation, no progress bar.

Bare side: a hand-written loop doing the same math: the same mechanism class and init (the
config's ``seed_everything``), the same batches (``generate_examples`` with the card's seeds of
the DataModule's stream, collated by ``collate_examples`` inside the loop, as the DataModule
does), the same AdamW parameter groups, ``warmup_cosine`` LR schedule, gradient clipping, one
optimizer step per ``tbptt_steps`` chunk with the state carried and detached between chunks.

Timed (both sides): from the end of the ``--warmup`` th batch to the end of the last batch, so
every timed batch includes building its data and all its chunks; process start-up, imports,
CLI parsing / instantiation and the warm-up batches are outside the window. Tokens = B * T of
the timed batches. The two sides alternate (order flipped every repeat) ``--repeats`` times on
the same threads; the table gives medians and the spread of the per-repeat ratio.

Sanity check: after each repeat the per-batch training losses and the final weights of the two
sides must agree (``--rtol``); otherwise the script prints the difference and exits 1. It also
exits 1 when a measurement failed.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_harness.py --repeats 5 --steps 8 --threads 2
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


class RunResult:
    """One timed run: tokens/s, timed tokens, per-batch mean losses (nats), final weights."""

    def __init__(self, tokens_per_s: float, tokens: int, losses: list[float], weights: dict[str, torch.Tensor],
                 data_s: float = float("nan"), window_s: float = float("nan")) -> None:
        self.tokens_per_s = tokens_per_s
        self.tokens = tokens
        self.losses = losses
        self.weights = weights
        self.data_s = data_s  # seconds of batch building inside the timed window (bare side only)
        self.window_s = window_s


# ----------------------------------------------------------------------------- harness side


class TrainClock(pl.Callback):
    """Times training batches ``warmup .. end`` (ends of batch ``warmup - 1`` to the last batch);
    records every batch's mean training loss (``pl_module.last_train_loss``)."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.t0: float | None = None
        self.t1: float | None = None
        self.tokens = 0
        self.losses: list[float] = []

    def on_train_start(self, trainer, pl_module) -> None:
        if self.warmup == 0:
            self.t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        now = time.perf_counter()
        self.losses.append(float(pl_module.last_train_loss))
        if batch_idx + 1 == self.warmup:
            self.t0 = now
        elif batch_idx >= self.warmup:
            self.tokens += batch.input_ids.numel()
            self.t1 = now


def cli_args(args: argparse.Namespace, out_dir: str) -> list[str]:
    """The ``swar-bench fit`` command line (minus the subcommand) of the harness side."""
    return [
        f"--config={CONFIG}",
        f"--data.train_configs=[{args.n_writes}]",
        f"--data.batch_size={args.batch_size}",
        f"--model.tbptt_steps={args.tbptt_steps}",
        f"--model.warmup_steps={args.warmup_steps}",
        f"--model.max_steps={args.horizon}",
        "--trainer.max_steps=-1",
        "--trainer.max_epochs=1",
        f"--trainer.limit_train_batches={args.warmup + args.steps}",
        "--trainer.limit_val_batches=0",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        f"--trainer.logger.init_args.save_dir={out_dir}",
        f"--checkpoint.dirpath={os.path.join(out_dir, 'checkpoints')}",
    ]


def harness_run(args: argparse.Namespace) -> RunResult:
    """``swar-bench fit`` in-process: SwarBenchCLI(run=False) + trainer.fit, timed by TrainClock."""
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.lightning_cli import TRAINER_DEFAULTS, SwarBenchCLI, resolve_mechanism_names
    from swar_bench.module import TBPTTModule

    with tempfile.TemporaryDirectory(prefix="bench_harness_") as out_dir:
        cli = SwarBenchCLI(
            TBPTTModule,
            PasskeySwarDataModule,
            args=resolve_mechanism_names(cli_args(args, out_dir)),
            run=False,
            trainer_defaults=TRAINER_DEFAULTS,
            save_config_kwargs={"overwrite": True},
            parser_kwargs={"exit_on_error": False},
        )
        clock = TrainClock(args.warmup)
        cli.trainer.callbacks.append(clock)
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
        weights = {k: v.detach().clone() for k, v in cli.model.mechanism.state_dict().items()}
    if clock.t0 is None or clock.t1 is None or clock.tokens == 0:
        raise RuntimeError(f"the harness run trained {len(clock.losses)} batches; expected {args.warmup + args.steps}")
    window = clock.t1 - clock.t0
    return RunResult(clock.tokens / window, clock.tokens, clock.losses, weights, window_s=window)


# ----------------------------------------------------------------------------- bare side


def quickstart_mechanism_and_seed() -> tuple[type, dict[str, Any], int, dict[str, Any]]:
    """(mechanism class, its init_args, seed_everything, model section) of configs/quickstart.yaml."""
    import importlib

    import yaml

    cfg = yaml.safe_load(CONFIG.read_text())
    mech = cfg["model"]["mechanism"]
    module_name, _, cls_name = mech["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls, dict(mech.get("init_args", {})), int(cfg["seed_everything"]), cfg["model"]


def bare_run(args: argparse.Namespace) -> RunResult:
    """The same TBPTT training as hand-written PyTorch: build batch, chunks, AdamW, clip, LR."""
    from swar_bench.datamodules.passkey_swar import collate_examples
    from swar_bench.module import shift_targets, warmup_cosine
    from swar_bench.tasks.oracle import annotate
    from swar_bench.tasks.passkey_swar import example_seed, generate_examples

    cls, init_args, seed, model_cfg = quickstart_mechanism_and_seed()
    pl.seed_everything(seed, verbose=False)
    mech = cls(**init_args)
    groups: list[dict[str, Any]] = []  # weight decay on matrices only, groups in parameter order
    for p in mech.parameters():
        wd = float(model_cfg["weight_decay"]) if p.dim() >= 2 else 0.0
        if groups and groups[-1]["weight_decay"] == wd:
            groups[-1]["params"].append(p)
        else:
            groups.append({"params": [p], "weight_decay": wd})
    # fused, as the module builds it for float32 CPU parameters (TBPTTModule._fused_adamw_supported)
    opt = torch.optim.AdamW(groups, lr=float(model_cfg["lr"]), betas=(0.9, 0.95), fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, args.warmup_steps, args.horizon, 0.1))
    clip = float(model_cfg["grad_clip"])
    B, N, K = args.batch_size, args.n_writes, args.tbptt_steps

    losses: list[float] = []
    tokens, data_s, t0 = 0, 0.0, time.perf_counter() if args.warmup == 0 else None
    for step in range(args.warmup + args.steps):
        tb = time.perf_counter()
        seeds = [example_seed("train", N, i) for i in range(step * B, (step + 1) * B)]
        batch = collate_examples(generate_examples(seeds, N), N, annotate)
        built = time.perf_counter() - tb
        input_ids, targets = batch.input_ids, shift_targets(batch.labels)
        T = input_ids.shape[1]
        state = mech.init_state(B)
        total, count = 0.0, 0
        for start in range(0, T, K):
            logits, state = mech(input_ids[:, start : start + K], state)
            tgt = targets[:, start : start + K]
            ce_sum = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tgt.reshape(-1), ignore_index=-100, reduction="sum")
            n = int((tgt != -100).sum())
            (ce_sum / max(n, 1)).backward()
            torch.nn.utils.clip_grad_norm_(mech.parameters(), clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            state = mech.detach_state(state)
            total += float(ce_sum.detach())
            count += n
        losses.append(total / max(count, 1))
        now = time.perf_counter()
        if step + 1 == args.warmup:
            t0 = now
        elif step >= args.warmup:
            tokens += B * T
            data_s += built
    window = now - t0
    weights = {k: v.detach().clone() for k, v in mech.state_dict().items()}
    return RunResult(tokens / window, tokens, losses, weights, data_s=data_s, window_s=window)


# ----------------------------------------------------------------------------- comparison


def max_rel_diff(a: RunResult, b: RunResult) -> tuple[float, float]:
    """(largest relative difference of per-batch losses, of final weights over all tensors).

    The weight difference of a tensor is ``max|a - b| / max(max|a|, 1e-12)``.
    Raises ValueError when the two runs trained different batch counts or parameters.
    """
    if len(a.losses) != len(b.losses) or a.weights.keys() != b.weights.keys():
        raise ValueError(f"runs differ in shape: {len(a.losses)} vs {len(b.losses)} batches, "
                         f"parameters {sorted(a.weights)} vs {sorted(b.weights)}")
    loss = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a.losses, b.losses))
    weight = max(
        float((a.weights[k] - b.weights[k]).abs().max()) / max(float(a.weights[k].abs().max()), 1e-12)
        for k in a.weights
    )
    return loss, weight


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-writes", type=int, default=256, help="training N (256: ~970 tokens)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--tbptt-steps", type=int, default=256, help="tokens per chunk (optimizer step per chunk)")
    p.add_argument("--warmup-steps", type=int, default=8, help="LR warmup, optimizer steps")
    p.add_argument("--horizon", type=int, default=None,
                   help="cosine horizon in optimizer steps (default: 4 chunks x all batches)")
    p.add_argument("--steps", type=int, default=8, help="timed training batches per run")
    p.add_argument("--warmup", type=int, default=2, help="untimed training batches first")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rtol", type=float, default=1e-3, help="allowed relative loss / weight difference")
    args = p.parse_args(argv)
    if args.horizon is None:
        args.horizon = 4 * (args.warmup + args.steps)
    if args.steps < 1 or args.warmup < 1 or args.repeats < 1:
        print("bench_harness: --steps, --warmup and --repeats must be >= 1", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    import logging

    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    import warnings

    warnings.filterwarnings("ignore", module="lightning")

    bare_runs: list[RunResult] = []
    harness_runs: list[RunResult] = []
    diffs: list[tuple[float, float]] = []
    try:
        for r in range(args.repeats):
            order = (bare_run, harness_run) if r % 2 == 0 else (harness_run, bare_run)
            got = {fn.__name__: fn(args) for fn in order}
            bare_runs.append(got["bare_run"])
            harness_runs.append(got["harness_run"])
            diffs.append(max_rel_diff(got["bare_run"], got["harness_run"]))
            print(f"repeat {r}: bare {got['bare_run'].tokens_per_s:,.0f} tok/s, harness {got['harness_run'].tokens_per_s:,.0f} tok/s, "
                  f"ratio {got['harness_run'].tokens_per_s / got['bare_run'].tokens_per_s:.3f}, "
                  f"max rel diff loss {diffs[-1][0]:.1e} weights {diffs[-1][1]:.1e}", flush=True)
    except Exception as err:  # noqa: BLE001 - report, do not hide: a benchmark that could not measure fails
        print(f"bench_harness: could not measure: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    if not all(x.tokens_per_s > 0 and x.tokens > 0 for x in bare_runs + harness_runs):
        print("bench_harness: could not measure: no timed tokens", file=sys.stderr)
        return 1

    ratios = sorted(h.tokens_per_s / b.tokens_per_s for b, h in zip(bare_runs, harness_runs))
    bare = statistics.median(x.tokens_per_s for x in bare_runs)
    harness = statistics.median(x.tokens_per_s for x in harness_runs)
    data_share = statistics.median(x.data_s / x.window_s for x in bare_runs)
    T = bare_runs[0].tokens // (args.steps * args.batch_size)
    chunks = -(-T // args.tbptt_steps)
    print()
    print(f"quickstart mechanism, N={args.n_writes} (mean padded T {T} tokens), batch {args.batch_size}, tbptt_steps={args.tbptt_steps} "
          f"({chunks} chunks, {chunks} optimizer steps per batch), {args.steps} timed batches after {args.warmup}, "
          f"{args.repeats} repeats, {args.threads} threads\n")
    print("| path | tokens/s (median) | ratio to bare loop (median of repeats) |")
    print("| :--- | ---: | ---: |")
    print(f"| bare PyTorch TBPTT loop (batches built in the loop) | {bare:,.0f} | 1.00 |")
    print(f"| `swar-bench fit` (SwarBenchCLI + configs/quickstart.yaml) | {harness:,.0f} | "
          f"{statistics.median(ratios):.2f} |")
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    print(f"\nper-repeat ratio: median {statistics.median(ratios):.3f}, quartiles {q1:.3f}..{q3:.3f}, "
          f"range {ratios[0]:.3f}..{ratios[-1]:.3f} ({len(ratios)} repeats)")
    print(f"batch building: {data_share:.1%} of the bare loop's timed window (median)")
    worst_loss = max(d[0] for d in diffs)
    worst_weight = max(d[1] for d in diffs)
    print(f"same math: max relative difference over all repeats: per-batch loss {worst_loss:.1e}, final weights {worst_weight:.1e} "
          f"(tolerance {args.rtol:g})")
    if not (worst_loss <= args.rtol and worst_weight <= args.rtol):
        print("bench_harness: the two paths did not compute the same training (see the differences above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
