"""``swar-bench study run|status|report STUDY.yaml``: a fair comparison as a product command.

    swar-bench study run configs/studies/frontier.yaml --jobs 2        # train and test what is missing
    swar-bench study run configs/studies/frontier.yaml --only GatedDeltaNet
    swar-bench study status configs/studies/frontier.yaml              # done / running / failed / to do
    swar-bench study report configs/studies/frontier.yaml --out docs   # tables and figures from the records

Exit status: 0 done, 1 a run failed, 2 a bad study file or option (one line), 130 / 143 stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from swar_bench.study.spec import StudyError, load_study


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="swar-bench study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="train and test every missing run of the study (resumable from its records)"
    )
    run.add_argument("study", help="the study file (YAML), e.g. configs/studies/frontier.yaml")
    run.add_argument("--jobs", type=int, default=2, help="processes at once")
    run.add_argument("--threads", type=int, default=1, help="torch threads per process")
    run.add_argument(
        "--only", default=None, help="comma-separated mechanism names of the study to run"
    )
    run.add_argument(
        "--rerun-stale",
        action="store_true",
        help="run again the runs whose records were made by other (incompatible) code",
    )
    report = sub.add_parser("report", help="tables and figures from the records")
    report.add_argument("study")
    report.add_argument("--out", default=None,
                        help="folder of the tables and figures (default: the study's records folder)")
    status = sub.add_parser("status", help="one line per run: done / running / failed / to do")
    status.add_argument("study")
    return p


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    try:
        spec = load_study(args.study)
        if args.command == "run":
            for flag, value in (("--jobs", args.jobs), ("--threads", args.threads)):
                if value < 1:
                    raise StudyError(f"{flag}={value} is invalid; expected an integer >= 1")
            only = None
            if args.only is not None:
                only = [x.strip() for x in args.only.split(",") if x.strip()]
                for name in only:
                    spec.mechanism(name)
            from swar_bench.study.runner import Runner

            runner = Runner(
                spec,
                jobs=args.jobs,
                threads=args.threads,
                rerun_stale=args.rerun_stale,
                only=only,
                log=lambda line: print(line, flush=True),
            )
            return runner.run()
        if args.command == "report":
            from swar_bench.study.report import write_report

            for path in write_report(spec, Path(args.out) if args.out else Path(spec.records)):
                print(f"study: wrote {path}")
            return 0
        from swar_bench.study.status import print_status

        return print_status(spec)
    except StudyError as err:
        print(f"swar-bench study: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.exit(main())
