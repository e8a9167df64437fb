"""Training step time of each chunked mechanism at several chunk sizes, at the frontier's shapes,
side by side in one run, as ratios to the chunk size its config uses today.

    python benchmarks/bench_chunk_size.py --threads 1 --rounds 7
    python benchmarks/bench_chunk_size.py --mechanisms GatedDeltaNet,DeltaNet --chunks 16,32,64

Shapes: each mechanism as ``configs/mechanisms/<name>.yaml`` builds it (d_model 64, 2 layers,
its heads), one training step (forward + backward + AdamW) of a batch of ``--batch-size``
(default 16, the frontier's) passkey-SWAR training sequences, once at N=32 and once at N=64 (the
frontier trains on both; one chunk of tbptt per sequence, so T is the whole sequence, about 150 and
270 tokens). Every (mechanism, chunk size) starts from the same weights and sees the same batches.

Timing: in each of ``--rounds`` rounds every configuration runs one N=32 step and one N=64 step,
taking turns, so a change in machine load hits all alike; the time of a configuration is the
median over rounds of the process CPU time (``time.process_time``) of its two steps. The ratio is
that median over the median at the config's chunk size (< 1: faster). On a machine shared with
other jobs the CPU time still grows with cache and memory-bandwidth contention: compare ratios
measured in one run, not times across runs. ``max |dlogits|`` is the largest difference of the
logits from those at the config's chunk size on the N=64 batch (the chunk forms are exact up to
float32 rounding). Prints one markdown table; exits 1 if a loss is not finite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

from swar_bench import mechanisms

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {  # mechanism -> its config under configs/mechanisms/ (the chunked ones)
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
}


def config_init_args(name: str) -> dict:
    """The ``init_args`` of ``name``'s mechanism config (chunk_size included)."""
    with open(ROOT / "configs" / "mechanisms" / CONFIGS[name]) as f:
        return dict(yaml.safe_load(f)["model"]["mechanism"]["init_args"])


def frontier_batches(batch_size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One training batch at N=32 and one at N=64: ``(input_ids[B, T], targets[B, T])``, int64."""
    from swar_bench.datamodules.passkey_swar import PasskeySwarBatches
    from swar_bench.module import shift_targets

    source = PasskeySwarBatches("generate")
    out = []
    for n in (32, 64):
        batch = source[("train", n, tuple(range(batch_size)))]
        out.append((batch.input_ids.long(), shift_targets(batch.labels).long()))
    return out


def make_step(model, batches):
    """A callable: one AdamW training step on each batch; returns (CPU seconds, last loss)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> tuple[float, float]:
        start = time.process_time()
        for x, y in batches:
            logits, _ = model(x, model.init_state(x.shape[0]))
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        return time.process_time() - start, loss.item()

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", default="all", help=f"comma-separated, or all: {', '.join(CONFIGS)}")
    parser.add_argument("--chunks", default="16,32,64", help="chunk sizes to compare (the config's is added)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds, median reported (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    names = list(CONFIGS) if args.mechanisms == "all" else [m.strip() for m in args.mechanisms.split(",")]
    unknown = [m for m in names if m not in CONFIGS]
    if unknown:
        parser.error(f"unknown mechanism(s) {unknown}; expected names from {list(CONFIGS)} or all")
    try:
        chunks = sorted({int(c) for c in args.chunks.split(",")})
    except ValueError:
        chunks = []
    if not chunks or min(chunks) < 1 or min(args.batch_size, args.rounds, args.threads) < 1 or args.warmup < 0:
        parser.error(f"--chunks={args.chunks!r} and the sizes must be positive integers")
    torch.set_num_threads(args.threads)
    batches = frontier_batches(args.batch_size)
    configs = []  # (name, chunk, is_config_default, step, max |dlogits|)
    for name in names:
        init = config_init_args(name)
        default = init["chunk_size"]
        reference = None
        for chunk in sorted({*chunks, default}, key=lambda c: (c != default, c)):
            torch.manual_seed(0)
            model = getattr(mechanisms, name)(**{**init, "chunk_size": chunk})
            with torch.no_grad():
                x = batches[1][0]
                logits = model(x, model.init_state(x.shape[0]))[0]
            if reference is None:
                reference = logits
            diff = (logits - reference).abs().max().item()
            configs.append((name, chunk, chunk == default, make_step(model, batches), diff))
    for _ in range(args.warmup):
        for c in configs:
            c[3]()
    times: list[list[float]] = [[] for _ in configs]
    losses = [0.0] * len(configs)
    for r in range(args.rounds):
        for i, c in enumerate(configs):
            times[i].append(c[3]()[0])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    for i, c in enumerate(configs):
        losses[i] = c[3]()[1]
    medians = [statistics.median(t) for t in times]
    base = {c[0]: m for c, m in zip(configs, medians) if c[2]}
    tokens = sum(x.numel() for x, _ in batches)
    print(
        f"chunk size, training step (forward + backward + clip + AdamW) on one N=32 and one N=64 "
        f"batch of {args.batch_size} (T={batches[0][0].shape[1]}, {batches[1][0].shape[1]}), "
        f"configs/mechanisms/ shapes, torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
        f"CPU time, median of {args.rounds} interleaved rounds after {args.warmup} warm-up\n"
    )
    print("| mechanism | chunk | ms (N32 + N64 step) | tokens/s | vs config's chunk | max abs dlogits |")
    print("|---|---:|---:|---:|---:|---:|")
    for c, m in zip(configs, medians):
        mark = " (config)" if c[2] else ""
        print(
            f"| {c[0]} | {c[1]}{mark} | {1e3 * m:.1f} | {tokens / m:,.0f} | {m / base[c[0]]:.2f}x | {c[4]:.1e} |"
        )
    if not all(torch.isfinite(torch.tensor(losses))):
        print("error: a non-finite loss", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
