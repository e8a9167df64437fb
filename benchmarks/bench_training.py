"""Training throughput (tokens/s of forward + backward + AdamW step) of the zoo's mechanisms, or of
one mechanism on two backends (its torch forms vs fla's Triton kernels), measured side by side.

    # every learned mechanism at its defaults on the CPU (the table of docs/BENCHMARKS.md)
    python benchmarks/bench_training.py --seq-len 256 --batch-size 8 --threads 1

    # Gated DeltaNet, torch path vs fla path, on a GPU (scripts/gpu_check.sh)
    python benchmarks/bench_training.py --device cuda --mechanisms GatedDeltaNet \\
        --backends torch,fla --d-model 1024 --n-heads 8 --seq-len 4096 --batch-size 4

The configurations take turns in each of ``--repeats`` rounds after ``--warmup`` untimed steps,
and the best (least) time of each is reported, so a change in machine load hits all alike. Time is
the process's CPU time on the CPU (other jobs on a shared machine do not count) and wall time
between CUDA synchronisations on a GPU. Prints a markdown table, and the ratio of the second
backend to the first when two are given. A backend that cannot run (``fla`` off CUDA) is reported
as not run; exits 1 when nothing could be measured or a loss is not finite.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from collections.abc import Callable

import torch

from swar_bench import mechanisms
from swar_bench.mechanisms import MECHANISMS


def build(name: str, args, backend: str | None) -> torch.nn.Module:
    """``name`` at ``args.d_model`` / ``args.n_layers`` (and ``args.n_heads`` when it takes heads),
    with ``backend`` when given, seeded so every backend starts from the same weights."""
    cls = getattr(mechanisms, name)
    accepted = inspect.signature(cls).parameters
    kwargs = {"d_model": args.d_model, "n_layers": args.n_layers}
    if args.n_heads and "n_heads" in accepted:
        kwargs["n_heads"] = args.n_heads
    if backend is not None:
        if "backend" not in accepted:
            raise ValueError(f"{name} has no backend option")
        kwargs["backend"] = backend
    torch.manual_seed(0)
    return cls(**kwargs).to(args.device)


def train_step(model, optimizer, x, y, args) -> Callable[[], tuple[float, float]]:
    """One timed forward + backward + optimizer step from an empty state: (seconds, loss)."""
    device = torch.device(args.device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16)

    def step() -> tuple[float, float]:
        if device.type == "cuda":
            torch.cuda.synchronize()
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        with autocast:
            logits, _ = model(x, model.init_state(x.shape[0]))
            loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start_wall
        else:
            seconds = time.process_time() - start_cpu
        return seconds, loss.item()

    return step


def measure(args) -> tuple[list[tuple[str, str, int, float, float]], list[str]]:
    """Rows ``(mechanism, backend, n_params, best seconds, first loss)`` and lines for what did
    not run."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 40, (args.batch_size, args.seq_len + 1), generator=gen).to(args.device)
    x, y = x[:, :-1], x[:, 1:]
    names = (
        [n for n in MECHANISMS if n != "Oracle"] if args.mechanisms == ["all"] else args.mechanisms
    )
    configs, skipped = [], []
    for name in names:
        for backend in args.backends or [None]:
            label = backend or "default"
            try:
                model = build(name, args, backend)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                step = train_step(model, optimizer, x, y, args)
                first_loss = step()[1]  # also the first warm-up step
            except ValueError as err:  # e.g. backend="fla" without CUDA
                skipped.append(f"{name} ({label}): not run: {err}")
                continue
            configs.append((name, label, model.n_params, step, first_loss))
    for _ in range(args.warmup - 1):
        for *_, step, _ in configs:
            step()
    best = [float("inf")] * len(configs)
    for _ in range(args.repeats):
        for i, (*_, step, _) in enumerate(configs):
            best[i] = min(best[i], step()[0])
    return [(n, b, p, s, loss) for (n, b, p, _, loss), s in zip(configs, best)], skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mechanisms", default="all", help="comma-separated class names, or all (default)"
    )
    parser.add_argument(
        "--backends",
        default="",
        help="comma-separated backends, e.g. torch,fla (default: each mechanism's own)",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-layers", type=int, default=2)
    parser.add_argument(
        "--n-heads",
        type=int,
        default=0,
        help="heads, for mechanisms that take them (default: theirs)",
    )
    parser.add_argument(
        "--seq-len", type=int, default=256, help="tokens per sequence (default 256)"
    )
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed steps per configuration (default 2)"
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed rounds, the fastest reported (default 5)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="bfloat16 autocast (fla's chunk kernels want half precision)",
    )
    args = parser.parse_args(argv)
    sizes = (
        args.d_model,
        args.n_layers,
        args.seq_len,
        args.batch_size,
        args.warmup,
        args.repeats,
        args.threads,
    )
    if min(sizes) < 1 or args.n_heads < 0:
        parser.error("sizes, --warmup, --repeats and --threads must be >= 1")
    args.mechanisms = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    unknown = [m for m in args.mechanisms if m != "all" and m not in MECHANISMS]
    if unknown:
        parser.error(
            f"unknown mechanism(s) {unknown}; expected names from {list(MECHANISMS)} or all"
        )
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch sees no CUDA device")
    torch.set_num_threads(args.threads)
    rows, skipped = measure(args)
    tokens = args.batch_size * args.seq_len
    clock = "wall time between CUDA syncs" if args.device.startswith("cuda") else "CPU time"
    print(
        f"training step (forward + backward + AdamW), d_model={args.d_model}, {args.n_layers} layers, "
        f"T={args.seq_len}, B={args.batch_size}, {args.device}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, {clock}, best of {args.repeats} rounds after "
        f"{args.warmup} warm-up (configurations take turns)\n"
    )
    print("| mechanism | backend | params | ms / step | tokens/s | first loss |")
    print("|---|---|---:|---:|---:|---:|")
    for name, backend, n_params, seconds, loss in rows:
        print(
            f"| {name} | {backend} | {n_params:,} | {1e3 * seconds:.1f} | "
            f"{tokens / seconds:,.0f} | {loss:.4f} |"
        )
    for line in skipped:
        print(line)
    if len(args.backends) == 2:
        for name in dict.fromkeys(r[0] for r in rows):
            pair = {b: s for n, b, _, s, _ in rows if n == name}
            if len(pair) == 2:
                a, b = args.backends
                print(f"ratio {name}: {b} / {a} training tokens/s = {pair[a] / pair[b]:.2f}x")
    if not rows or any(not torch.isfinite(torch.tensor(r[4])) for r in rows):
        print("error: nothing measured, or a non-finite loss", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
