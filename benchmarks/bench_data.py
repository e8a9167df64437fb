"""Data loading: the batched generator vs parquet read back with `datasets`, and the data share
of a training step under ``lightning.Trainer``.

Part 1 (``generator vs parquet``): for each N, the validation examples ``0 .. K-1`` are written
with ``swar_bench.tasks.hub_io.write_dataset`` into a temporary folder (zstd parquet, the Hub
layout) and then, side by side in one run and in turns:

- ``generate``: ``generate_examples(seeds, N)`` (the same seeds, list of dicts of numpy arrays);
- ``parquet, cold``: ``load_split(folder, "n<N>", "validation")`` with an empty ``datasets``
  cache (parquet decoded, Arrow cache written), then every row read with
  ``ds.with_format("numpy")`` and its columns materialised;
- ``parquet, cached``: the same with the Arrow cache already built (memory-mapped);
- ``parquet, cached, arrow``: the cached dataset read through ``hub_io.iter_examples`` (the
  column buffers sliced as numpy, no per-row formatting).

Times are CPU seconds of this process (``time.process_time``, all its threads; other jobs on a
shared machine do not count), the least of ``--repeats`` rounds. The script checks that every
path yields the same examples before reporting.

Part 2 (``data share of step time``): ``swar-bench fit``'s objects (``SwarBenchCLI`` on
``configs/quickstart.yaml``, ``run=False``) train the quickstart Gated DeltaNet under a real
``lightning.Trainer`` with Lightning's ``SimpleProfiler``; the DataModule keeps its default
workers (``num_workers=0``: batches are built in the training process). Share = time in
``[_TrainingEpochLoop].train_dataloader_next`` (waiting for the next batch) / wall time of the
same training iterations (from one ``on_train_batch_end`` to the next), after ``--warmup``
iterations. Training batches, not optimizer steps, are counted (with ``tbptt_steps=256`` a
batch of N=256 is about 4 optimizer steps). "between batches" is the time from one
``on_train_batch_end`` to the next ``on_train_batch_start`` (the fetch plus Lightning's own
bookkeeping between batches): an upper bound on the data share; "between batches, CPU time"
is the same in CPU seconds of the process (``time.process_time``) over the CPU seconds of the
timed iterations, less sensitive to other jobs on a shared machine. Rows: the quickstart data
settings (N=32, batch 16) and the DataModule's default training data (N drawn from 32..256,
batch 32).

Prints markdown tables; exits 1 when it could not measure or the paths disagree.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_data.py [--n-writes 32,256,1024] [--steps 40]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime
import functools
import logging
import platform
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FETCH_KEY = "[_TrainingEpochLoop].train_dataloader_next"
# examples per N for part 1: about 250k tokens each (T is about 3.8 tokens per write)
DEFAULT_EXAMPLES = {32: 2048, 64: 1024, 128: 512, 256: 256, 512: 128, 1024: 64, 2048: 32, 4096: 16}


def best_cpu_time(fn, repeats: int) -> float:
    """Least CPU time (seconds, ``time.process_time``) of ``repeats`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def same_examples(a: list[dict], b: list[dict]) -> bool:
    """True when both lists hold the same examples (``input_ids``, ``labels``, ``answer_type``,
    ``n_writes``, ``seed``), in order; integer dtypes may differ."""
    return len(a) == len(b) and all(
        np.array_equal(np.asarray(x["input_ids"]), np.asarray(y["input_ids"]))
        and np.array_equal(np.asarray(x["labels"]), np.asarray(y["labels"]))
        and [str(t) for t in x["answer_type"]] == [str(t) for t in y["answer_type"]]
        and int(x["n_writes"]) == int(y["n_writes"])
        and int(x["seed"]) == int(y["seed"])
        for x, y in zip(a, b)
    )


def data_share(fetch_seconds: list[float], batch_end_times: list[float], warmup: int) -> tuple[float, float, int]:
    """Share of training-iteration wall time spent waiting for batches.

    ``fetch_seconds[i]``: seconds the loop waited in the dataloader's ``next`` before batch i;
    ``batch_end_times[i]``: ``time.perf_counter()`` at batch i's ``on_train_batch_end``. The
    timed iterations are ``warmup + 1 .. len(batch_end_times) - 1``; iteration i spans
    ``batch_end_times[i - 1] .. batch_end_times[i]`` and contains the fetch of batch i.

    Returns ``(share, mean iteration seconds, timed iterations)``.

    Raises:
        ValueError: fewer than ``warmup + 2`` batches, or fewer fetches than batches.
    """
    n = len(batch_end_times)
    if n < warmup + 2 or len(fetch_seconds) < n:
        raise ValueError(
            f"{n} batch ends and {len(fetch_seconds)} fetches with warmup={warmup}: expected at least "
            f"warmup + 2 batches and one fetch per batch"
        )
    total = batch_end_times[-1] - batch_end_times[warmup]
    waited = float(sum(fetch_seconds[warmup + 1 : n]))
    steps = n - 1 - warmup
    return waited / total, total / steps, steps


# ---------------------------------------------------------------------------------- part 1


def _read_numpy(ds) -> list[dict]:
    rows = []
    for r in ds.with_format("numpy"):
        rows.append({k: r[k] for k in ("input_ids", "labels", "answer_type", "n_writes", "seed")})
    return rows


def _read_cold(folder: Path, n: int, work: Path, counter) -> list[dict]:
    """Read with an empty ``datasets`` cache (parquet decoded, Arrow cache written), then drop it."""
    from swar_bench.tasks.hub_io import load_split

    d = work / f"cold_{n}_{next(counter)}"
    try:
        return _read_numpy(load_split(folder, f"n{n}", "validation", cache_dir=str(d)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _read_cached(folder: Path, n: int, cache: Path, read) -> list[dict]:
    from swar_bench.tasks.hub_io import load_split

    return read(load_split(folder, f"n{n}", "validation", cache_dir=str(cache)))


def generator_vs_parquet(n_values: list[int], examples: dict[int, int], repeats: int, work: Path) -> list[dict]:
    import datasets

    from swar_bench.tasks.hub_io import iter_examples, write_dataset
    from swar_bench.tasks.passkey_swar import generate_examples, split_seeds

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    rows = []
    for n in n_values:
        k = examples[n]
        folder = work / f"data_n{n}"
        write_dataset(folder, configs=[f"n{n}"], splits=["validation"], num_examples=k, progress=False)
        seeds = split_seeds("validation", n, k)
        cache = work / f"cache_n{n}"
        cold_dirs = iter(range(10**6))

        gen = functools.partial(generate_examples, seeds, n)
        cold = functools.partial(_read_cold, folder, n, work, cold_dirs)
        cached = functools.partial(_read_cached, folder, n, cache, _read_numpy)
        cached_arrow = functools.partial(_read_cached, folder, n, cache, lambda ds: list(iter_examples(ds)))

        reference = gen()
        for name, fn in (("cold", cold), ("cached", cached), ("arrow", cached_arrow)):
            if not same_examples(reference, fn()):
                raise RuntimeError(f"N={n}: parquet path {name!r} returned different examples than the generator")
        best = {name: float("inf") for name in ("gen", "cold", "cached", "arrow")}
        for _ in range(repeats):  # interleaved: a load spike hits every path alike
            for name, fn in (("gen", gen), ("cold", cold), ("cached", cached), ("arrow", cached_arrow)):
                best[name] = min(best[name], best_cpu_time(fn, 1))
        if not all(0 < t < float("inf") for t in best.values()):
            raise RuntimeError(f"N={n}: a timer read zero ({best})")
        tokens = sum(len(e["input_ids"]) for e in reference)
        rows.append({"n": n, "examples": k, "tokens": tokens, **{f"{k_}_eps": k / t for k_, t in best.items()}})
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return rows


# ---------------------------------------------------------------------------------- part 2


def fit_share(extra_args: list[str], steps: int, warmup: int, work: Path, threads: int) -> dict:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.profilers import SimpleProfiler

    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.lightning_cli import TRAINER_DEFAULTS, SwarBenchCLI
    from swar_bench.module import TBPTTModule

    torch.set_num_threads(threads)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*LightningCLI's args parameter.*")

    class Ends(pl.Callback):
        def __init__(self) -> None:
            self.ends: list[float] = []
            self.starts: list[float] = []
            self.cpu_ends: list[float] = []
            self.cpu_starts: list[float] = []
            self.fetch: list[float] = []
            self.tokens = 0

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.starts.append(time.perf_counter())
            self.cpu_starts.append(time.process_time())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.ends.append(time.perf_counter())
            self.cpu_ends.append(time.process_time())
            self.tokens += batch.input_ids.numel()

        def on_train_end(self, trainer, pl_module):
            self.fetch = list(trainer.profiler.recorded_durations.get(FETCH_KEY, []))

    args = [
        "--config", str(REPO / "configs" / "quickstart.yaml"),
        "--trainer.max_steps=-1",
        "--trainer.max_epochs=1",
        f"--trainer.limit_train_batches={steps + warmup + 1}",
        "--trainer.max_time=null",
        "--trainer.logger=false",
        "--trainer.limit_val_batches=0",
        "--trainer.enable_progress_bar=false",
        "--trainer.enable_model_summary=false",
        f"--checkpoint.dirpath={work / 'ckpt'}",
        "--checkpoint.save_last=false",
        "--checkpoint.save_top_k=0",
        "--model.warmup_steps=0",
        *extra_args,
    ]
    cli = SwarBenchCLI(
        TBPTTModule, PasskeySwarDataModule, args=args, run=False, trainer_defaults=TRAINER_DEFAULTS,
        save_config_kwargs={"overwrite": True},
    )
    ends = Ends()
    trainer = cli.trainer
    trainer.callbacks.append(ends)
    profiler = SimpleProfiler(dirpath=str(work), filename="profile")
    trainer.profiler = profiler
    # the loops read ``trainer.profiler`` at every fetch, so it can be swapped in after construction
    trainer.fit(cli.model, datamodule=cli.datamodule)
    dm = cli.datamodule
    share, step_s, timed = data_share(ends.fetch, ends.ends, warmup)
    timed_ix = range(warmup + 1, len(ends.ends))
    gaps = [ends.starts[i] - ends.ends[i - 1] for i in timed_ix]
    cpu_gaps = [ends.cpu_starts[i] - ends.cpu_ends[i - 1] for i in timed_ix]
    cpu_total = ends.cpu_ends[-1] - ends.cpu_ends[warmup]
    return {
        "configs": ",".join(str(n) for n in dm.train_configs),
        "batch": dm.batch_size,
        "workers": dm.num_workers,
        "share": share,
        "step_ms": 1000 * step_s,
        "fetch_ms": 1000 * share * step_s,
        "steps": timed,
        "gap_share": sum(gaps) / (step_s * timed),
        "cpu_gap_share": sum(cpu_gaps) / cpu_total,
        "tbptt": cli.model.tbptt_steps,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-writes", default="32,256,1024", help="N values of part 1 (comma separated)")
    p.add_argument("--examples", type=int, default=None, help="examples per N (default: about 250k tokens per N)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=40, help="timed training steps per row of part 2")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--skip-generator", action="store_true")
    p.add_argument("--skip-fit", action="store_true")
    args = p.parse_args(argv)
    try:
        n_values = [int(x) for x in args.n_writes.split(",") if x.strip()]
        examples = {n: args.examples or DEFAULT_EXAMPLES.get(n, 4) for n in n_values}
    except ValueError:
        print(f"bench_data: --n-writes={args.n_writes!r}: expected comma-separated integers", file=sys.stderr)
        return 2
    print(f"{datetime.date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}\n")
    work = Path(tempfile.mkdtemp(prefix="bench_data_"))
    try:
        if not args.skip_generator:
            rows = generator_vs_parquet(n_values, examples, args.repeats, work)
            print(f"Generator vs parquet (examples/s, CPU time, least of {args.repeats})\n")
            print("| N | examples | generate | parquet, cold | ratio | parquet, cached | ratio "
                  "| parquet, cached, arrow | ratio |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for r in rows:
                g = r["gen_eps"]
                print(f"| {r['n']} | {r['examples']} | {g:,.0f} | {r['cold_eps']:,.0f} | {g / r['cold_eps']:.1f}x "
                      f"| {r['cached_eps']:,.0f} | {g / r['cached_eps']:.1f}x | {r['arrow_eps']:,.0f} "
                      f"| {g / r['arrow_eps']:.1f}x |")
            print("\n(ratio = generate / parquet: how many times faster generating is than reading back)\n")
        if not args.skip_fit:
            rows = [
                fit_share([], args.steps, args.warmup, work, args.threads),
                fit_share(["--data.train_configs=[32,64,128,256]", "--data.batch_size=32"],
                          args.steps, args.warmup, work, args.threads),
            ]
            print(f"Data loading share of training step time (quickstart GatedDeltaNet, SimpleProfiler, "
                  f"{args.threads} threads)\n")
            print("| train N | batch | workers | tbptt_steps | timed steps | step ms "
                  "| waiting for batch ms | share | between batches (upper bound) "
                  "| between batches, CPU time |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for r in rows:
                print(f"| {r['configs']} | {r['batch']} | {r['workers']} | {r['tbptt']} | {r['steps']} "
                      f"| {r['step_ms']:.1f} | {r['fetch_ms']:.2f} | {100 * r['share']:.2f}% | {100 * r['gap_share']:.2f}% "
                      f"| {100 * r['cpu_gap_share']:.2f}% |")
    except Exception as err:  # noqa: BLE001  # a benchmark that could not measure fails loudly
        print(f"bench_data: could not measure: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
