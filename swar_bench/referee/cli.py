"""``swar-bench referee``: run ``evaluate`` from a config, or compare saved results.

    swar-bench referee --config configs/referee/quick.yaml [--out DIR] [--device cuda] [--seed N ...]
    swar-bench referee compare A.json B.json [--names a b] [--plot curve.png] [--flops-tolerance 0.05]
    swar-bench referee verdict --baseline A.json --challenger B.json [--alpha 0.05] [--json V.json]

The config is a jsonargparse file: ``mechanism`` as ``class_path`` / ``init_args`` plus every
keyword argument of ``evaluate``; ``--out`` is the folder that receives ``result.json`` and
``forgetting_curve.png`` (both written atomically); it, and ``compare --plot``, are checked before
any work by creating the folder and rehearsing the write (a folder created for a run that is then
rejected is removed again). An empty or non-mapping ``--config`` file is named in a one-line
error. The table is printed
to stdout. ``--threads`` sets torch's CPU threads (default: ``OMP_NUM_THREADS`` if set, else
min(4, available cores)); the package sets ``OMP_WAIT_POLICY=PASSIVE`` unless already set. The mechanism
is built after ``torch.manual_seed(init_seed)`` (default: ``seed``), so a config names one result.
A result file given to ``compare`` that lacks a field the table shows is named in a one-line error.
Stopped by SIGINT or SIGTERM, the command prints one line, removes the folders it created that are
still empty, and exits with 130 or 143.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path

import torch

from swar_bench.config_errors import joined
from swar_bench.mechanisms.registry import check_mechanism_class
from swar_bench.referee.evaluate import check_init_seed, check_seed, evaluate
from swar_bench.referee.option_lines import (
    config_mapping,
    config_problem,
    last_setting,
    option_line,
)
from swar_bench.referee.outputs import (
    RESULT_FILES,
    prepare_out_dir,
    prepare_output,
    prepare_plot_path,
    remove_created,
)
from swar_bench.referee.report import plot_forgetting_curve, read_json, write_json
from swar_bench.referee.settings import EXPECTED, device_problem, expected_tail
from swar_bench.referee.table import (
    FLOPS_TOLERANCE,
    FLOPS_TOLERANCE_EXPECTED,
    check_flops_tolerance,
    check_result,
    comparison_table,
)
from swar_bench.referee.verdict import ALPHA, ALPHA_EXPECTED, check_alpha, verdict, verdict_table
from swar_bench.utils import interrupts
from swar_bench.utils.argparsing import ArgumentParser, PathArg, check_no_dashes_value
from swar_bench.utils.text import plural, unknown_name_line

PROG = "swar-bench referee"


def build_parser():
    """The jsonargparse parser of ``swar-bench referee`` (config file, mechanism, evaluate's arguments)."""
    from jsonargparse import ActionConfigFile
    from jsonargparse import ArgumentParser as JsonArgumentParser

    from swar_bench.mechanisms.registry import config_parser_mode
    from swar_bench.utils.help_format import PlainHelpFormatter

    parser = JsonArgumentParser(
        prog=PROG,
        description="Long-context referee: train-then-probe at every range.",
        epilog=(
            "subcommands: `swar-bench referee compare A.json B.json [--names a b] [--plot curve.png]` "
            "puts saved results side by side (refused when run on different terms); "
            "`swar-bench referee verdict --baseline A.json --challenger B.json [--alpha 0.05]` tests "
            "whether the challenger beats the baseline (paired tests per cell). "
            "Each has its own --help (docs/REFEREE.md)."
        ),
        exit_on_error=False,
        formatter_class=PlainHelpFormatter,  # the docstrings' reStructuredText shown plain
        parser_mode=config_parser_mode(("mechanism",)),  # config files read names as the command line does
    )
    parser.add_argument(
        "--config", action=ActionConfigFile, help="YAML config (mechanism + evaluate arguments)."
    )
    parser.add_argument(
        "--mechanism",
        type=torch.nn.Module,
        required=True,
        help="The mechanism: a zoo name (GRU) or class_path (my_layer.MyModel) and init_args.",
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


RESULT_FILE = PathArg("the path of a referee result JSON (result.json)")
"""The ``type=`` of the result files ``compare`` and ``verdict`` read."""

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


def _config_values(argv: list[str]) -> list[str]:
    """The values given to ``--config`` in ``argv`` (``--config X`` or ``--config=X``), in order."""
    values = []
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith("--config="):
            values.append(arg[len("--config=") :])
    return values


def _typed(value: str) -> str:
    """An option's value as the user typed it (``0``, ``-1``), quoted only when blank space would
    hide it (``''``, ``' 1'``)."""
    return value if value and value == value.strip() else repr(value)


def _error(message: object, limit: int | None = 400, prog: str = PROG) -> int:
    """Print ``message`` as one line, ``PROG: error: MESSAGE`` (its lines joined, cut at
    ``limit`` characters); return 2. ``prog``: the sub-command's (``swar-bench referee compare``),
    as its parser's own refusals say it.

    The limit is for library messages that can run long; messages naming a path the user gave
    pass ``limit=None`` so the path and what was expected are shown whole.
    """
    line = joined(str(message))  # its lines joined; a value's own spaces kept as typed
    if limit is not None and len(line) > limit:
        line = line[: limit - 3] + "..."
    print(f"{prog}: error: {line}", file=sys.stderr)
    return 2


def _expected(given: list[str]):
    """The referee's ``utils.type_lines.Expected`` for the command line ``given``: the least distance of
    ``ranges`` follows the ``hops`` it sets (an option, or a ``--config`` file), else 3."""
    where = last_setting(given, "hops")
    hops = None
    if where is not None and where[0] == "--hops":
        hops = where[1]
    elif where is not None:
        mapping = config_mapping(where[1])
        hops = mapping.get("hops") if isinstance(mapping, dict) else None
    try:
        hops = int(hops) if hops is not None else 3
    except (TypeError, ValueError):
        hops = 3
    return functools.partial(expected_tail, hops=hops)


def _init_arg_line(line: str, reason: str, cfg, given: list[str]) -> str:
    """``line`` led by the init arg of the mechanism its ``reason`` starts with (``d_model must be
    ...``), where ``given`` set it: ``--mechanism.init_args.d_model=-8: ...`` (as typed) or
    ``--config=/abs/run.yaml: mechanism.init_args.d_model=-8: ...``; unchanged for another reason."""
    import re

    from swar_bench.config_errors import option_source, typed_value

    first = re.match(r"(\w+)\b", reason)
    init_args = getattr(cfg.mechanism, "init_args", None) or {}
    if first is None or first.group(1) not in init_args:
        return line
    option, value = f"mechanism.init_args.{first.group(1)}", init_args[first.group(1)]
    source = option_source(given, option, str(value))
    if source is not None:
        return f"{source}: {option}={value}: {line}"
    return f"--{option}={typed_value(given, option, '') or value}: {line}"


def _run(argv: list[str]) -> int:
    from swar_bench.mechanisms.registry import (
        MechanismNameError,
        replaced_init_args,
        rewrite_mechanism_args,
    )

    given = list(argv)  # as typed: an error names the option or the --config file that set the value
    try:
        resolved = rewrite_mechanism_args(argv, "--mechanism")
    except ValueError as e:
        return _error(e, limit=None)
    for line in replaced_init_args(argv, "--mechanism"):
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    argv = resolved
    try:
        check_no_dashes_value(argv)
    except ValueError as e:
        return _error(e, limit=None)
    for value in _config_values(argv):
        problem = config_problem(value)
        if problem:
            return _error(problem, limit=None)
    try:  # torch.nn.GRU: said before its arguments are asked for (as fit says it)
        check_mechanism_class(given, "mechanism")
    except ValueError as e:
        return _error(e, limit=None)
    parser = build_parser()
    try:
        cfg = parser.parse_args(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except MechanismNameError as e:  # a name in a --config file: the resolver's line, whole
        return _error(e, limit=None)
    except Exception as e:  # noqa: BLE001 - any bad config is reported as one line
        from swar_bench.config_errors import config_files_line, parse_error_line
        from swar_bench.utils.argparsing import unrecognized_line

        dests = {a.dest for a in parser._actions if isinstance(getattr(a, "dest", None), str)}
        misspelt = config_files_line(argv, dests, "referee", named=str)  # every unknown key, by file as typed
        if misspelt is not None:
            return _error(misspelt, limit=None)
        options = [s for action in parser._actions for s in action.option_strings]
        return _error(unrecognized_line(str(e), options, PROG) or parse_error_line(str(e), argv, _expected(given)))
    created: list[Path] = []  # filled as the folders are made: a stop at any point finds them
    rc = 1
    try:
        try:
            prepare_out_dir(cfg.out, created)
        except ValueError as e:  # "--out=...: ...", or the --config file and key that set it
            where = last_setting(given, "out")
            return _error(f"--config={where[1]}: {str(e)[2:]}" if where and where[0] == "--config" else e, limit=None)
        rc = _evaluate_and_write(parser, cfg, given)
    finally:
        if rc != 0:  # rejected after the check, or stopped: leave no empty folder of ours behind
            remove_created(created)
    return rc


def _evaluate_and_write(parser, cfg, given: list[str]) -> int:
    """Build the mechanism, run ``evaluate``, write into the (checked) ``--out``, print the table.

    A refused setting is named as ``given`` (the command line as typed) set it: the option and
    its value, or the ``--config`` file and its key (``option_lines.option_line``)."""
    import inspect

    keys = {*inspect.signature(evaluate).parameters, "init_seed", "threads", "device"}

    def refused(e: object) -> int:
        return _error(option_line(" ".join(str(e).split()), given, keys))

    threads = default_threads() if cfg.threads is None else cfg.threads
    if threads < 1:
        return refused(f"threads={threads}{EXPECTED['threads']}")
    torch.set_num_threads(threads)
    logging.basicConfig(level=logging.INFO, format="referee: %(message)s", stream=sys.stderr)
    try:
        seed = check_seed(cfg.seed)
        init_seed = seed if cfg.init_seed is None else check_init_seed(cfg.init_seed)
    except ValueError as e:
        return refused(e)
    torch.manual_seed(init_seed)
    try:
        instantiate = getattr(parser, "instantiate", None) or parser.instantiate_classes
        mechanism = instantiate(cfg).mechanism
    except Exception as e:  # noqa: BLE001 - whatever the mechanism's constructor raises
        return _error(_init_arg_line(f"could not build the mechanism {cfg.mechanism.class_path}: {e}", str(e), cfg, given))
    try:
        mechanism = mechanism.to(torch.device(cfg.device))
    except (RuntimeError, AssertionError) as e:
        return refused(device_problem(str(cfg.device), e))
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
        return refused(e)
    out = Path(cfg.out)
    name = cfg.name or type(mechanism).__name__
    result_name, plot_name = RESULT_FILES
    try:
        result_path = write_json(result, out / result_name)
        plot_path = plot_forgetting_curve({name: result}, out / plot_name)
    except OSError as e:  # the folder changed during the run
        return _error(f"could not write into --out={cfg.out!r}: {e}", limit=None)
    print(comparison_table({name: result}))
    print(f"\nwrote {result_path} and {plot_path}")
    return 0


def _compare(argv: list[str]) -> int:
    parser = ArgumentParser(
        prog=f"{PROG} compare", description="Compare saved referee results."
    )
    error = functools.partial(_error, prog=parser.prog)
    parser.add_argument(
        "results", nargs="+", type=RESULT_FILE, help="result.json files written by `swar-bench referee`."
    )
    parser.add_argument(
        "--names", nargs="+", default=None, help="One name per result (default: file's folder)."
    )
    parser.add_argument(
        "--plot", default=None, help="Also draw the forgetting curves into this figure (.png, .pdf or .svg, by suffix)."
    )
    parser.add_argument(
        "--flops-tolerance",
        default=str(FLOPS_TOLERANCE),
        help="Largest relative difference of two results' training FLOPs per cell "
        f"(default {FLOPS_TOLERANCE}; inf compares whatever the FLOPs).",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        args.flops_tolerance = check_flops_tolerance(args.flops_tolerance)
    except ValueError:
        return error(f"--flops-tolerance={_typed(args.flops_tolerance)}: expected {FLOPS_TOLERANCE_EXPECTED}")
    if args.names is not None and len(args.names) != len(args.results):
        return error(
            f"--names {_shown(args.names)}: {plural(len(args.names), 'name')} for "
            f"{plural(len(args.results), 'result')}; expected one name per result"
        )
    created: list[Path] = []  # filled as the folders are made: a stop at any point finds them
    rc = 1
    try:
        if args.plot is not None:
            try:
                prepare_plot_path(args.plot, created)
            except ValueError as e:
                return error(e, limit=None)
        try:  # the inputs before the names derived from their paths: a missing file is the error
            results = read_results(args.results)
        except ValueError as e:
            return error(e, limit=None)
        twice = same_file_problem(args.results, ["results"] * len(args.results))
        if twice:
            return error(twice, limit=None)
        names = args.names or [Path(p).parent.name or Path(p).stem for p in args.results]
        repeated = _names_problem(names, args.names is not None, "one distinct name per result")
        if repeated:
            return error(repeated, limit=None)
        rc = _compare_checked(args, dict(zip(names, results)))
    finally:
        if rc != 0:
            remove_created(created)
    return rc


def _shown(names: list[str]) -> str:
    """``names`` as a shell would take them back, on one line: a name with a line break or another
    control character is shown as Python writes it (``'a\\nb'``)."""
    from swar_bench.utils.argparsing import quoted

    return " ".join(quoted(n) for n in names)


def _names_problem(names: list[str], given: bool, expected: str) -> str | None:
    """The one line refusing ``names``, else None. Names the user gave (``--names``) must each be
    visible text on one line, as they label the table's rows and the figure's curves: ``--names ''
    GDN: '' is blank; expected ...``, ``... 'a\\nb' holds a line break or control character;
    expected ...``. Repeated names: ``--names A A: A named more than once; expected EXPECTED``,
    and for names derived from the results' folders the line that says to give ``--names``."""
    if given:
        for name in names:
            if not name.strip() or not name.isprintable():
                what = "is blank" if name.isprintable() else "holds a line break or control character"
                return (f"--names {_shown(names)}: {name!r} {what}; expected {expected}, each visible text "
                        "on one line")
    repeated = [n for i, n in enumerate(names) if names.count(n) > 1 and names.index(n) == i]
    if not repeated:
        return None
    twice = f"{', '.join(repeated)} named more than once"
    if given:
        return f"--names {_shown(names)}: {twice}; expected {expected}"
    return (f"names from the results' folders ({_shown(names)}): {twice}; expected distinct names "
            "(pass --names with one name per result)")


def read_results(paths: list[str]) -> list[dict]:
    """The referee results of ``paths``, each read and checked (``check_result``: a file missing a
    field is named here, not mid-table), in order.

    Raises:
        ValueError: the first path that is missing, unreadable or not a referee result (one line
            naming it)."""
    results = []
    for path in paths:
        result = read_json(path)
        check_result(result, path)
        results.append(result)
    return results


def same_file_problem(paths: list[str], options: list[str]) -> str | None:
    """The refusal of a result given twice among ``paths`` (read already: each exists), the same
    file under one spelling or two (``a/result.json``, ``./a/../a/result.json``, a link), else
    None. ``options`` name where each came from (``--baseline``, ``--challenger``; or ``result`` for
    compare's arguments): a result set against itself is no comparison (verdict: every cell
    tied). ``results/GRU/result.json given 2 times (as --baseline and --challenger); expected
    distinct result files``."""
    for i, path in enumerate(paths):
        twins = [j for j in range(len(paths)) if os.path.samefile(paths[j], path)]
        if len(twins) > 1 and twins[0] == i:
            where = list(dict.fromkeys(options[j] for j in twins))  # in the order typed
            spelled = list(dict.fromkeys(paths[j] for j in twins))
            names = f" (as {' and '.join(where)})" if len(where) > 1 else ""
            also = f", spelled {' and '.join(spelled)}" if len(spelled) > 1 else ""
            return f"{path} given {len(twins)} times{names}{also}; expected distinct result files"
    return None


def _compare_checked(args, named: dict[str, dict]) -> int:
    """Print the table of the ``named`` results and draw ``--plot`` (already checked) if given."""
    error = functools.partial(_error, prog=f"{PROG} compare")
    try:
        table = comparison_table(named, flops_tolerance=args.flops_tolerance)
    except ValueError as e:  # our own one-line messages, naming the path: shown whole
        return error(e, limit=None)
    print(table)
    if args.plot is not None:
        try:
            plot_path = plot_forgetting_curve(named, args.plot)
        except OSError as e:  # the folder changed meanwhile
            return error(f"could not write --plot={args.plot!r}: {e}", limit=None)
        print(f"\nwrote {plot_path}")
    return 0


def _verdict(argv: list[str]) -> int:
    parser = ArgumentParser(
        prog=f"{PROG} verdict",
        description="Does the challenger beat the baseline? A paired test per suite and range.",
    )
    error = functools.partial(_error, prog=parser.prog)
    parser.add_argument("--baseline", required=True, type=RESULT_FILE, help="result.json of the baseline.")
    parser.add_argument("--challenger", required=True, type=RESULT_FILE, help="result.json of the challenger.")
    parser.add_argument(
        "--names", nargs=2, default=None, help="Names of baseline and challenger (default: folders)."
    )
    parser.add_argument(
        "--alpha", default=str(ALPHA), help=f"Significance level per cell (default {ALPHA})."
    )
    parser.add_argument(
        "--flops-tolerance",
        default=str(FLOPS_TOLERANCE),
        help=f"Largest relative difference of training FLOPs per cell (default {FLOPS_TOLERANCE}).",
    )
    parser.add_argument(
        "--json", default=None, type=PathArg("a JSON file path"), help="Also write the verdict as JSON here."
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    paths = (args.baseline, args.challenger)
    try:
        alpha = check_alpha(args.alpha)
    except ValueError:
        return error(f"--alpha={_typed(args.alpha)}: expected {ALPHA_EXPECTED}")
    try:
        tolerance = check_flops_tolerance(args.flops_tolerance)
    except ValueError:
        return error(f"--flops-tolerance={_typed(args.flops_tolerance)}: expected {FLOPS_TOLERANCE_EXPECTED}")
    created: list[Path] = []  # filled as the folders are made: a stop at any point finds them
    rc = 1
    try:
        if args.json is not None:
            try:
                prepare_output(
                    "--json",
                    args.json,
                    Path(args.json).parent,
                    (Path(args.json).name,),
                    "a JSON file path in a folder this user can write to",
                    created,
                )
            except ValueError as e:
                return error(e, limit=None)
        try:
            results = read_results(list(paths))  # before the names derived from their paths
            twice = same_file_problem(list(paths), ["--baseline", "--challenger"])
            if twice:
                rc = error(twice, limit=None)
                return rc
            if args.names is not None:
                repeated = _names_problem(args.names, True, "distinct names of the baseline and the challenger")
                if repeated:
                    rc = error(repeated, limit=None)
                    return rc
            names = tuple(args.names or [Path(p).parent.name or Path(p).stem for p in paths])
            if names[0] == names[1]:  # the same folder name: the roles name them
                names = ("baseline", "challenger")
            v = verdict(
                *results, alpha=alpha, flops_tolerance=tolerance, names=(names[0], names[1])
            )
        except ValueError as e:
            rc = error(e, limit=None)
            return rc
        print(verdict_table(v))
        if args.json is not None:
            try:
                print(f"\nwrote {write_json(v, args.json)}")
            except OSError as e:
                rc = error(f"could not write --json={args.json!r}: {e}", limit=None)
                return rc
        rc = 0
        return rc
    finally:
        if rc != 0:
            remove_created(created)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``swar-bench referee``; returns the exit status.

    0 ok; 2 bad input (one line); 130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM (``timeout``,
    SLURM), i.e. 128 + the signal, each after one line on stderr and after removing the folders
    this run created that are still empty. Results are written atomically, so an interrupted run
    leaves no half-written file. The SIGINT and SIGTERM handlers (``swar_bench.utils.interrupts``: a
    stop is recorded, so one whose first delivery was lost is raised again at the next chunk)
    are installed only when called from the main thread (Python allows no other) and the
    previous handlers are restored on return.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    return interrupts.command(PROG, lambda: _subcommand(argv))


def _subcommand(argv: list[str]) -> int:
    """The sub-command ``argv`` names (compare, verdict, else a run), run; its exit status."""
    if argv and argv[0] == "compare":
        return _compare(argv[1:])
    if argv and argv[0] == "verdict":
        return _verdict(argv[1:])
    if argv and not argv[0].startswith("-"):  # a run takes no positional: a mistyped subcommand
        return _error(unknown_name_line("subcommand", argv[0], ("compare", "verdict"), f" or a run's options ({PROG} --help)"))
    return _run(argv)


if __name__ == "__main__":
    sys.exit(main())
