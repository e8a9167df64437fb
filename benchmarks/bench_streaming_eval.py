"""Streaming evaluation: peak memory and time per token of ``swar-bench test`` as N grows.

Each measurement is one fresh ``swar-bench test`` process (the product's CLI, ``python -m
swar_bench.cli test``) on ``configs/quickstart.yaml`` (the quickstart Gated DeltaNet, random
init: memory and speed do not depend on the weights), with ``--data.test_configs=[N]``,
``--data.eval_batch_size=B`` and ``--data.eval_examples=E``. TBPTTModule streams each test
sequence chunk by chunk (``tbptt_steps`` tokens) under ``no_grad``, so memory should not grow
with N.

- Peak memory: the child's peak resident set (``ru_maxrss`` from ``os.wait4``: the whole
  process, Python + torch + Lightning included) and, from a callback inside the child, the
  growth of ``ru_maxrss`` during the test loop (peak at ``on_test_end`` minus peak at
  ``on_test_start``: memory the loop needed beyond anything reached before it). Rows
  ``B`` examples at N=256 and at N=16384 (one batch each), ratio 16384 / 256 (target <= 1.2x).
- Time per token: the same callback sums ``on_test_batch_start`` .. ``on_test_batch_end`` wall
  time and the streamed tokens (``input_ids.numel()``) over all batches; each N gets about the
  same number of tokens (``E = B * 16384 / N`` examples), so every row streams about 4 * 61k
  tokens (wall time and, less sensitive to other jobs on the machine, CPU time of the process).
  Per-batch work outside the step (example generation) is not in this time. The N
  take turns for ``--repeats`` rounds and the least time per token of each N is kept.

The child runs with ``OMP_WAIT_POLICY=PASSIVE`` and ``--threads`` torch threads. Prints markdown
tables; exits 1 when a run failed or could not be measured.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/bench_streaming_eval.py [--n-writes 256,1024,4096,16384]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import datetime
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lightning.pytorch as pl

REPO = Path(__file__).resolve().parent.parent
MEMORY_N = (256, 16384)


class EvalClock(pl.Callback):
    """Records, in the test process, the test loop's step time, streamed tokens and peak RSS.

    Writes ``{"seconds", "cpu_seconds", "tokens", "batches", "maxrss_start_kib", "maxrss_end_kib"}`` as JSON to
    ``out`` at ``on_test_end`` (atomically: temp file + rename). Seconds: wall time summed over
    ``on_test_batch_start`` .. ``on_test_batch_end`` (``cpu_seconds``: the same spans in CPU time
    of the process, all threads, ``time.process_time``); tokens: ``input_ids.numel()`` summed over
    batches (padding included: every position is streamed); RSS in KiB (``ru_maxrss``, Linux).
    """

    def __init__(self, out: str) -> None:
        self.out = out
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self._c0 = 0.0
        self.tokens = 0
        self.batches = 0
        self._t0 = 0.0
        self.maxrss_start = 0

    def on_test_start(self, trainer, pl_module) -> None:
        self.maxrss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.seconds += time.perf_counter() - self._t0
        self.cpu_seconds += time.process_time() - self._c0
        self.tokens += int(batch.input_ids.numel())
        self.batches += 1

    def on_test_end(self, trainer, pl_module) -> None:
        record = {
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "tokens": self.tokens,
            "batches": self.batches,
            "maxrss_start_kib": self.maxrss_start,
            "maxrss_end_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }
        tmp = f"{self.out}.tmp"
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, self.out)


def examples_for(n_writes: int, batch_size: int, top_n: int = 16384) -> int:
    """Examples at N so every N streams about as many tokens as ``batch_size`` examples at
    ``top_n`` (T grows linearly in N): ``batch_size * top_n // n_writes``, at least ``batch_size``."""
    return max(batch_size, batch_size * top_n // n_writes)


def run_test(n_writes: int, examples: int, batch_size: int, threads: int, work: Path, config: str) -> dict:
    """One ``swar-bench test`` process; returns the callback's record plus the child's peak RSS
    (``child_maxrss_kib``, from ``os.wait4``) and its wall seconds. Raises RuntimeError when the
    child fails or wrote no record."""
    out = work / f"clock_n{n_writes}_e{examples}.json"
    callback = json.dumps({"class_path": "bench_streaming_eval.EvalClock", "init_args": {"out": str(out)}})
    cmd = [
        sys.executable, "-m", "swar_bench.cli", "test", "--config", config,
        f"--data.test_configs=[{n_writes}]",
        f"--data.eval_examples={examples}",
        f"--data.eval_batch_size={batch_size}",
        "--trainer.logger=false",
        "--trainer.enable_progress_bar=false",
        f"--checkpoint.dirpath={work / 'ckpt'}",
        f"--trainer.callbacks+={callback}",
    ]
    env = dict(os.environ)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent), env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    with open(work / f"log_n{n_writes}_e{examples}.txt", "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.exists():
        tail = (work / f"log_n{n_writes}_e{examples}.txt").read_text().strip().splitlines()[-5:]
        raise RuntimeError(f"swar-bench test at N={n_writes} exited {proc.returncode}: {' | '.join(tail)}")
    record = json.loads(out.read_text())
    if record["tokens"] <= 0 or record["seconds"] <= 0:
        raise RuntimeError(f"N={n_writes}: no timed test tokens ({record})")
    record.update(child_maxrss_kib=usage.ru_maxrss, wall_s=wall, n_writes=n_writes, examples=examples)
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-writes", default="256,1024,4096,16384", help="N values of the time-per-token table")
    p.add_argument("--batch-size", type=int, default=4, help="eval batch size (and examples of the memory rows)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2, help="rounds of the timing runs (N in turn); least time kept")
    p.add_argument("--config", default="configs/quickstart.yaml")
    args = p.parse_args(argv)
    try:
        n_values = [int(x) for x in args.n_writes.split(",") if x.strip()]
    except ValueError:
        print(f"bench_streaming_eval: --n-writes={args.n_writes!r}: expected comma-separated integers", file=sys.stderr)
        return 2
    print(f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{args.threads} threads, eval batch {args.batch_size}, {args.config}\n")
    work = Path(tempfile.mkdtemp(prefix="bench_streaming_eval_"))
    try:
        memory = {n: run_test(n, args.batch_size, args.batch_size, args.threads, work, args.config) for n in MEMORY_N}
        timing: dict[int, dict] = {}
        for _ in range(args.repeats):  # N in turn each round: a load spike does not favour one N
            for n in n_values:
                r = run_test(n, examples_for(n, args.batch_size), args.batch_size, args.threads, work, args.config)
                best = timing.setdefault(n, dict(r))
                for key in ("seconds", "cpu_seconds"):  # least time per token of each clock
                    best[key] = min(best[key] / best["tokens"], r[key] / r["tokens"]) * best["tokens"]
    except Exception as err:  # noqa: BLE001  # a benchmark that could not measure fails loudly
        print(f"bench_streaming_eval: could not measure: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)

    lo, hi = memory[MEMORY_N[0]], memory[MEMORY_N[1]]
    print(f"Peak memory, {args.batch_size} examples in one batch (MiB)\n")
    print("| N | tokens streamed | peak RSS (process) | test-loop growth of peak RSS |")
    print("|---:|---:|---:|---:|")
    for r in (lo, hi):
        growth = (r["maxrss_end_kib"] - r["maxrss_start_kib"]) / 1024
        print(f"| {r['n_writes']} | {r['tokens']:,} | {r['child_maxrss_kib'] / 1024:,.1f} | {growth:,.1f} |")
    print(f"| ratio {MEMORY_N[1]} / {MEMORY_N[0]} | {hi['tokens'] / lo['tokens']:.0f}x "
          f"| {hi['child_maxrss_kib'] / lo['child_maxrss_kib']:.3f}x | |\n")
    print(f"Time per token (test loop, about equal tokens per N, least of {args.repeats})\n")
    print("| N | examples | batches | tokens | wall s | wall us / token | relative | CPU us / token | relative |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = cbase = None
    for n in n_values:
        r = timing[n]
        us, cpu = 1e6 * r["seconds"] / r["tokens"], 1e6 * r["cpu_seconds"] / r["tokens"]
        base, cbase = base or us, cbase or cpu
        print(f"| {n} | {r['examples']} | {r['batches']} | {r['tokens']:,} | {r['seconds']:.2f} | {us:.2f} "
              f"| {us / base:.2f} | {cpu:.2f} | {cpu / cbase:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
