"""swar-bench study run|status|report|site STUDY.yaml: a fair comparison of mechanisms from a study file.

    swar-bench study run configs/studies/frontier.yaml --jobs 2        # train and test what is missing
    swar-bench study run configs/studies/frontier.yaml --only GatedDeltaNet
    swar-bench study run configs/studies/frontier.yaml --launcher slurm   # one job-array task per fit and test
    swar-bench study status configs/studies/frontier.yaml              # done / running / failed / to do
    swar-bench study report configs/studies/frontier.yaml --out docs   # tables and figures from the records
    swar-bench study site configs/studies/frontier.yaml --out site     # static HTML pages from the records

Exit status: 0 done, 1 a run failed or another `run` of the study holds its folders, 2 a bad study file or
option (one line), 130 / 143 stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from swar_bench.study.paths import holding_study, out_problem, shown, study_file_problem
from swar_bench.study.records import CorruptRecord
from swar_bench.study.spec import StudyError, load_study
from swar_bench.utils.argparsing import ArgumentParser, count_arg
from swar_bench.utils.locks import FolderLockedError


def _parser() -> argparse.ArgumentParser:
    # --init_args (also --init-args, as check-mechanism), named as typed in its refusals
    from swar_bench.mechanisms.check_cli import INIT_ARGS
    from swar_bench.utils.argparsing import SpelledAs

    p = ArgumentParser(prog="swar-bench study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help=(h := "train and test every missing run of the study (resumable from its records)"),
                         description=h)
    run.add_argument("study", help="the study file (YAML), e.g. configs/studies/frontier.yaml")
    run.add_argument("--jobs", type=count_arg(1), default=2, help="processes at once (default: 2)")
    run.add_argument("--threads", type=count_arg(1), default=1, help="torch threads per process (default: 1)")
    run.add_argument(
        "--only", default=None, help="comma-separated mechanism names of the study to run"
    )
    run.add_argument(
        "--rerun-stale",
        action="store_true",
        help="run again the runs whose records were made by other (incompatible) code",
    )
    run.add_argument("--add", default=None, metavar="CLASS_PATH",
                     help="put an outside layer (module.Class, importable) on the study: check it, then train and "
                          "test only it, beside the baselines' committed records")
    run.add_argument(*INIT_ARGS, dest="init_args", action=SpelledAs, default=None, metavar="JSON",
                     help='constructor arguments of the --add layer, e.g. \'{"vocab_size": 40, "d_model": 64}\'')
    run.add_argument("--name", default=None, help="the --add layer's name in tables (default: its class name)")
    from swar_bench.study.launchers import add_arguments

    add_arguments(run)
    report = sub.add_parser("report", help=(h := "tables and figures from the records"), description=h)
    report.add_argument("study", help="the study file (YAML), e.g. configs/studies/frontier.yaml")
    report.add_argument("--out", default=None,
                        help="folder of the tables and figures (default: the study's records folder)")
    site = sub.add_parser("site", help=(h := "static HTML pages from the records (open site/index.html)"), description=h)
    site.add_argument("study", help="the study file (YAML), e.g. configs/studies/frontier.yaml")
    site.add_argument("--out", default="site",
                      help="folder of the site (default: site); replaced whole when it is an earlier site")
    status = sub.add_parser("status", help=(h := "one line per run: done / running / failed / to do"), description=h)
    status.add_argument("study", help="the study file (YAML), e.g. configs/studies/frontier.yaml")
    return p


def only_names(text: str, names: list[str], what: str = "mechanism") -> list[str]:
    """The names ``--only`` chooses, in order: ``"A, B"`` -> ``["A", "B"]``.

    An ``--only`` that names nothing (``''``, ``' , '``) is refused, not read as "everything": a
    whole study must not start because a shell variable was empty.

    Raises:
        StudyError: no name in ``text``, or a name not among ``names`` (one line, with the closest
            name and the study's names)."""
    from swar_bench.utils.text import did_you_mean

    chosen = [x.strip() for x in text.split(",") if x.strip()]
    example = ",".join(names[:2])
    if not chosen:
        raise StudyError(f"--only={text!r}: expected a comma-separated list of {what} names (e.g. {example})")
    for name in chosen:
        if name not in names:
            raise StudyError(
                f"--only: no {what} {name!r} in the study{did_you_mean(name, names)}; expected some of "
                f"{', '.join(names)}"
            )
    return chosen


def add_layer(spec, class_path: str, init_args_text: str | None, name: str | None):
    """Check an outside layer and add it to the study: ``(spec with the layer, [its name])``.

    The layer must pass ``swar-bench check-mechanism`` (refused before any training, naming the
    first failed check) and every baseline record must be of compatible code (else one line names
    the stale baselines and what to run). The entry is kept in ``<records>/added/<name>.json`` so
    ``status`` and ``report`` place the layer beside the baselines.

    Raises:
        StudyError: one line, for each refusal above or a bad class path / init args / name.
    """
    import dataclasses
    import json

    from swar_bench.mechanisms.check_cli import device_problem, parse_init_args, unknown_init_args
    from swar_bench.mechanisms.conformance import check_mechanism, passed
    from swar_bench.mechanisms.registry import resolve_class, resolve_class_path
    from swar_bench.study.spec import ADDED, NAME, MechanismSpec
    from swar_bench.study.status import stale_runs
    from swar_bench.utils.argparsing import spelling
    from swar_bench.utils.files import atomic_write_text
    from swar_bench.utils.text import plural

    try:
        init_args = parse_init_args(init_args_text)
        cls = resolve_class(class_path, "--add")
        full_path = resolve_class_path(class_path, "--add")
    except ValueError as err:
        raise StudyError(str(err)) from None
    option = spelling(init_args_text, "--init_args")
    unknown = unknown_init_args(cls, full_path, init_args, init_args, option, None)
    if unknown is not None:  # checked before the layer is built, as fit and check-mechanism check it
        raise StudyError(unknown)
    given_name, name = name, name or full_path.rsplit(".", 1)[-1]
    if not NAME.match(name):
        raise StudyError(f"--name={name!r} is invalid; expected letters, digits, '_', '.', '-'")
    layer = MechanismSpec(name=name, class_path=full_path, init_args=init_args, added=True)
    for m in spec.mechanisms:
        if m.name == name and not (m.added and m.class_path == full_path and m.init_args == init_args):
            taken = f"--name={name!r}" if given_name is not None else f"--add: its class name {name!r}"
            raise StudyError(f"{taken} is taken by another mechanism of the study; expected another name "
                             f"(e.g. --name {name}_2)")
    try:
        model = cls(**init_args)
    except (TypeError, ValueError) as err:
        raise StudyError(f"--add {full_path}(**{init_args}) failed: {err}") from None
    problem = device_problem(model)
    if problem is not None:
        raise StudyError(f"--add {full_path}: {problem}; the study's checks run on the CPU")
    results = check_mechanism(lambda: cls(**init_args))
    if not passed(results):
        bad = next((r for r in results if not r.passed), None)
        row = f"{bad.name}: {bad.detail}" if bad else f"only {len(results)} checks ran"
        raise StudyError(
            f"--add {full_path} fails check-mechanism ({row}); expected every check to pass "
            f"(swar-bench check-mechanism {full_path} shows the table)"
        )
    baselines = dataclasses.replace(spec, mechanisms=tuple(m for m in spec.mechanisms if not m.added))
    stale = stale_runs(baselines)
    if stale:
        names = sorted({m for m, _ in stale})
        raise StudyError(
            f"stale baseline records (of other code, or of a config file changed since): {', '.join(names)} "
            f"({plural(len(stale), 'run')}); expected "
            f"`swar-bench study run {spec.path} --only {','.join(names)} --rerun-stale` first, or their commit "
            "in the study's compatible_code"
        )
    entry = {"name": name, "class_path": full_path, "init_args": init_args}
    path = Path(spec.records) / ADDED / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(entry, indent=1, sort_keys=True) + "\n")
    mechanisms = tuple(m for m in spec.mechanisms if m.name != name) + (layer,)
    return dataclasses.replace(spec, mechanisms=mechanisms), [name]


def check_pin(study: str, pinned: str | None, records: str) -> None:
    """Refuse ``study run`` from a checkout whose training code is not the study's pin
    (``code_fingerprint``): the new runs would not be comparable with the records.

    Raises:
        StudyError: one line naming both fingerprints and, when a record knows it, the commit to
            check out (``swar_bench.study.provenance.pin_refusal``)."""
    from swar_bench.study.provenance import pin_refusal

    refusal = pin_refusal(study, pinned, records)
    if refusal is not None:
        raise StudyError(refusal)


def mqar_main(args: argparse.Namespace) -> int:
    """``run`` / ``status`` / ``report`` of a study file with ``task: mqar`` (swar_bench.study.mqar);
    ``run``'s lines as ``run_study``'s: progress on stdout, failures, refusals and the stop on stderr.

    Raises:
        StudyError: a bad file, an option the MQAR study has no use for (one line)."""
    from swar_bench.study.mqar import MQARRunner, load_mqar_study
    from swar_bench.study.mqar_report import status_lines, write_mqar_report
    from swar_bench.study.runner import say, say_error

    study = load_mqar_study(args.study)
    if args.command == "run":
        from swar_bench.utils.argparsing import spelling

        for flag, value in (("--add", args.add), (spelling(args.init_args, "--init_args"), args.init_args),
                            ("--name", args.name)):
            if value is not None:
                raise StudyError(f"{flag}: an MQAR study runs its own entries; expected --only ENTRY[,ENTRY]")
        if args.launcher != "local":
            raise StudyError(f"--launcher {args.launcher}: an MQAR study runs locally; expected --launcher local")
        names = [e.name for e in study.entries]
        only = None if args.only is None else only_names(args.only, names, "entry")  # a typo first: any checkout has it
        check_pin(study.name, study.code_fingerprint, study.records)
        runner = MQARRunner(study, jobs=args.jobs, threads=args.threads, rerun_stale=args.rerun_stale,
                            only=only, log=say, log_error=say_error)
        try:
            with holding_study([study.out, study.records], f"swar-bench study run {study.path}"):
                return runner.run()
        except KeyboardInterrupt:
            return 130
    if args.command == "report":
        out = Path(study.records) if args.out is None else args.out
        problem = out_problem(out, "the tables and figures")
        if problem is not None:
            raise StudyError(problem)
        for path in write_mqar_report(study, Path(out)):
            print(f"study: wrote {path}")
        return 0
    if args.command == "site":
        raise StudyError("site: an MQAR study has no site; expected `swar-bench study report`")
    for line in status_lines(study):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``swar-bench study COMMAND STUDY``; the exit status. Ctrl-C and SIGTERM end every command
    with one line, exit 130 or 143: ``status``, ``report`` and ``site`` (a report or site stopped
    mid-way leaves the earlier files as they were, ``paths.write_whole``), and ``run`` from its
    first line (once its runner has started, the runner stops its fits first and then says so:
    ``runner.Runner``, ``mqar.MQARRunner``)."""
    from swar_bench.utils import interrupts

    args = _parser().parse_args(argv)
    return interrupts.command(f"swar-bench study {args.command}", lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    """The study command ``args`` names, its one-line refusals printed; the exit status."""
    try:
        from swar_bench.study.mqar import is_mqar_study, task_problem

        problem = study_file_problem(args.study) or task_problem(args.study)
        if problem is not None:
            raise StudyError(problem)
        if is_mqar_study(args.study):
            return mqar_main(args)
        spec = load_study(args.study)
        if args.command == "run":
            from swar_bench.study.launchers import check_launcher

            only = None
            if args.only is not None and args.add is not None:
                raise StudyError("--only and --add both choose what runs; expected one of them")
            if args.add is None and (args.init_args is not None or args.name is not None):
                from swar_bench.utils.argparsing import spelling

                given = [f for f, v in ((spelling(args.init_args, "--init_args"), args.init_args), ("--name", args.name))
                         if v is not None]
                raise StudyError(f"{' and '.join(given)} describe{'s' if len(given) == 1 else ''} an --add layer; "
                                 f"expected --add CLASS_PATH with {'it' if len(given) == 1 else 'them'}")
            if args.only is not None:
                only = only_names(args.only, [m.name for m in spec.mechanisms])
            # the command line's own faults first (any checkout has them), then where it runs
            check_pin(spec.name, spec.code_fingerprint, spec.records)  # new runs only by the pinned code
            check_launcher(args)  # a SLURM launcher this machine cannot use: one line, nothing submitted
            # one `study run` of a study at a time: a second is refused (exit 1) before it reads or removes anything
            with holding_study([spec.out, spec.records], f"swar-bench study run {spec.path}"):
                return run_study(spec, args, only)
        if args.command == "report":
            from swar_bench.study.report import write_report

            out = Path(spec.records) if args.out is None else args.out
            try:  # every file or none (swar_bench.study.paths.write_whole)
                written = write_report(spec, out)
            except OSError as err:
                raise StudyError(f"--out {shown(out)}: cannot write the report ({err.strerror or err}); "
                                 "expected a writable folder for the tables and figures") from None
            for path in written:
                print(f"study: wrote {path}")
            return 0
        if args.command == "site":
            from swar_bench.study.site import write_site

            problem = out_problem(args.out, "the site")
            if problem is not None:
                raise StudyError(problem)
            try:
                index = write_site(spec, Path(args.out))
            except OSError as err:
                raise StudyError(f"--out {shown(args.out)}: cannot write the site ({err.strerror or err}); "
                                 "expected a writable folder for the site") from None
            print(f"study: wrote {index} (open it in a browser)")
            return 0
        from swar_bench.study.status import print_status

        return print_status(spec)
    except StudyError as err:  # named by its command, as the parser's own errors are
        print(f"swar-bench study {args.command}: error: {err}", file=sys.stderr)
        return 2
    except FolderLockedError as err:  # another `study run` of the study: not a wrong argument
        print(f"swar-bench study {args.command}: error: {err}", file=sys.stderr)
        return 1
    except CorruptRecord as err:  # a fault of the records, not of the command line
        print(f"swar-bench study {args.command}: FAILED: {err}", file=sys.stderr)
        return 1


def run_study(spec, args: argparse.Namespace, only: list[str] | None) -> int:
    """``study run`` once the study's folders are locked: add the ``--add`` layer, then run
    with the chosen launcher; the exit status. Progress (``study: fit X ...``) goes to stdout,
    every line of a failed, refused or stopped run and the study's stop to stderr
    (``runner.say`` / ``runner.say_error``).

    Raises:
        StudyError: a refused ``--add`` layer, a stale record, a bad SLURM option (one line)."""
    from swar_bench.study.runner import say, say_error

    if args.add is not None:
        spec, only = add_layer(spec, args.add, args.init_args, args.name)
    if args.launcher == "slurm":
        from swar_bench.study.launchers import POLL_S, SlurmLauncher, slurm_options

        return SlurmLauncher(spec, slurm_options(spec, args), only=only, rerun_stale=args.rerun_stale,
                             wait=not args.no_wait, poll_s=POLL_S if args.poll_s is None else args.poll_s,
                             log=say, log_error=say_error).run()
    from swar_bench.study.runner import Runner

    runner = Runner(spec, jobs=args.jobs, threads=args.threads, rerun_stale=args.rerun_stale, only=only,
                    log=say, log_error=say_error)
    return runner.run()


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.exit(main())
