"""``swar-bench referee``: run ``evaluate`` from a config, or compare saved results.

    swar-bench referee --config configs/referee/quick.yaml [--out DIR] [--device cuda] [--seed N ...]
    swar-bench referee compare A.json B.json [--names a b] [--plot curve.png]

The config is a jsonargparse file: ``mechanism`` as ``class_path`` / ``init_args`` plus every
keyword argument of ``evaluate``; ``--out`` is the folder that receives ``result.json`` and
``forgetting_curve.png`` (both written atomically), checked before any work. The table is printed
to stdout. ``--threads`` sets torch's CPU threads (default: ``OMP_NUM_THREADS`` if set, else
min(4, available cores)); the package sets ``OMP_WAIT_POLICY=PASSIVE`` unless already set. The mechanism
is built after ``torch.manual_seed(init_seed)`` (default: ``seed``), so a config names one result.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import torch

from swar_bench.referee.evaluate import evaluate
from swar_bench.referee.report import plot_forgetting_curve, read_json, write_json
from swar_bench.referee.table import comparison_table

PROG = "swar-bench referee"


def build_parser():
    """The jsonargparse parser of ``swar-bench referee`` (config file, mechanism, evaluate's arguments)."""
    from jsonargparse import ActionConfigFile, ArgumentParser

    parser = ArgumentParser(
        prog=PROG,
        description="E7 long-context referee: train-then-probe at every range.",
        exit_on_error=False,
    )
    parser.add_argument(
        "--config", action=ActionConfigFile, help="YAML config (mechanism + evaluate arguments)."
    )
    parser.add_argument(
        "--mechanism",
        type=torch.nn.Module,
        required=True,
        help="The mechanism: class_path (e.g. swar_bench.mechanisms.GRU) and init_args.",
    )
    parser.add_function_arguments(evaluate, skip={"mechanism"})
    parser.add_argument(
        "--device",
        type=str,
        default="cpu",
        help="torch device the mechanism runs on (e.g. cpu, cuda, cuda:1).",
    )
    parser.add_argument(
        "--init_seed",
        type=int | None,
        default=None,
        help="torch.manual_seed before building the mechanism (default: seed).",
    )
    parser.add_argument(
        "--out", type=str, default="runs/referee", help="Output folder for result.json and the PNG."
    )
    parser.add_argument(
        "--name", type=str | None, default=None, help="Name of the mechanism in the table."
    )
    parser.add_argument(
        "--threads",
        type=int | None,
        default=None,
        help="torch CPU threads (default: OMP_NUM_THREADS if set, else min(4, available cores)).",
    )
    return parser


def check_out_dir(out: str | os.PathLike) -> str | None:
    """Why ``out`` cannot receive the results, or None when it is (or can be created as) a writable folder.

    Checked before any work, so that a bad ``--out`` fails at once rather than after the evaluation.
    Nothing is created here.
    """
    path = Path(out).absolute()
    if path.exists():
        if not path.is_dir():
            return f"--out={str(out)!r} exists and is not a folder; expected a folder (new or existing)"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"--out={str(out)!r} is not writable; expected a folder this user can write to"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return (
            f"--out={str(out)!r} cannot be created: {str(parent)!r} is not a folder; "
            "expected a folder (new or existing)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"--out={str(out)!r} cannot be created: {str(parent)!r} is not writable; "
            "expected a folder this user can write to"
        )
    return None


def default_threads() -> int:
    """torch CPU threads when ``--threads`` is not given: ``OMP_NUM_THREADS`` if set, else min(4, cores).

    Tiny mechanisms gain nothing from more threads, and on a shared machine extra threads only
    compete for the cores (torch's own default is every physical core).
    """
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def _error(message: object, limit: int = 400) -> int:
    """Print ``message`` as one line (whitespace collapsed, cut at ``limit`` characters); return 2."""
    line = " ".join(str(message).split()) or "invalid arguments"
    if len(line) > limit:
        line = line[: limit - 3] + "..."
    print(f"{PROG}: error: {line}", file=sys.stderr)
    return 2


def _run(argv: list[str]) -> int:
    parser = build_parser()
    try:
        cfg = parser.parse_args(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except Exception as e:  # noqa: BLE001 - any bad config is reported as one line
        return _error(e)
    problem = check_out_dir(cfg.out)
    if problem:
        return _error(problem)
    threads = default_threads() if cfg.threads is None else cfg.threads
    if threads < 1:
        return _error(f"--threads={threads}: expected a number of CPU threads >= 1")
    torch.set_num_threads(threads)
    logging.basicConfig(level=logging.INFO, format="referee: %(message)s", stream=sys.stderr)
    seed = cfg.seed
    torch.manual_seed(cfg.init_seed if cfg.init_seed is not None else seed)
    try:
        instantiate = getattr(parser, "instantiate", None) or parser.instantiate_classes
        mechanism = instantiate(cfg).mechanism
    except Exception as e:  # noqa: BLE001 - whatever the mechanism's constructor raises
        return _error(f"could not build the mechanism {cfg.mechanism.class_path}: {e}")
    try:
        mechanism = mechanism.to(torch.device(cfg.device))
    except (RuntimeError, AssertionError) as e:
        return _error(f"device={cfg.device!r} is not usable here ({e}); expected e.g. cpu or cuda")
    kwargs = {
        k: v
        for k, v in vars(cfg).items()
        if k
        not in ("config", "mechanism", "device", "init_seed", "out", "name", "threads", "__path__")
    }
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kwargs.items()}
    try:
        result = evaluate(mechanism, **kwargs)
    except ValueError as e:
        return _error(e)
    out = Path(cfg.out)
    name = cfg.name or type(mechanism).__name__
    try:
        result_path = write_json(result, out / "result.json")
        plot_path = plot_forgetting_curve({name: result}, out / "forgetting_curve.png")
    except OSError as e:  # the folder changed during the run
        return _error(f"could not write into --out={cfg.out!r}: {e}")
    print(comparison_table({name: result}))
    print(f"\nwrote {result_path} and {plot_path}")
    return 0


def _compare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} compare", description="Compare saved referee results."
    )
    parser.add_argument(
        "results", nargs="+", help="result.json files written by `swar-bench referee`."
    )
    parser.add_argument(
        "--names", nargs="+", default=None, help="One name per result (default: file's folder)."
    )
    parser.add_argument(
        "--plot", default=None, help="Also draw the forgetting curves into this PNG."
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    names = args.names or [Path(p).parent.name or Path(p).stem for p in args.results]
    if len(names) != len(args.results):
        return _error(
            f"--names has {len(names)} entries: expected one per result ({len(args.results)})"
        )
    if len(set(names)) != len(names):
        return _error(f"names {names}: expected distinct names (pass --names)")
    try:
        named = {n: read_json(p) for n, p in zip(names, args.results)}
        table = comparison_table(named)
    except ValueError as e:
        return _error(e)
    print(table)
    if args.plot:
        print(f"\nwrote {plot_forgetting_curve(named, args.plot)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``swar-bench referee``; returns the exit status (0 ok, 2 bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        return _compare(argv[1:])
    return _run(argv)


if __name__ == "__main__":
    sys.exit(main())
