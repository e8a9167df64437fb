"""`swar-bench data ...`: generate, inspect and check passkey_swar data.

    swar-bench data generate --out DIR [--configs n32,n64] [--splits validation,test] [--num-examples K]
    swar-bench data stats [--source generate|DIR|HUB_ID] [--configs ...] [--splits ...] [--num-examples K] [--report stats.md]
    swar-bench data verify SOURCE [--configs ...] [--splits ...] [--regenerate]
    swar-bench data check SOURCE [--configs ...] [--splits ...]
    swar-bench data show [--source generate|DIR|HUB_ID] --config n32 [--split validation] [--index 0]
    swar-bench data vocab --out vocab.json

Errors a user can cause are reported as one line on stderr (exit status 2; 1 when a check
finds a violation). ``verify`` and ``check`` of a local folder also exit 1, naming what is
missing, unless it is a complete release (``hub_io.release_problems``: README.md listing every
split file, each listed file, vocab.json, params.json, and their content: vocab.json the
vocabulary of the recorded parameters, params.json valid parameters), also when none of the
requested split files is left; a folder holding none of a release's files (``release_files``:
empty, only a README.md or dataset card) is no release, exit 2. ``generate`` lists its splits in
README.md before writing them and keeps finished ones, so rerunning a command that was cut short
completes the folder. A local folder is read with the generator parameters it records
(``params.json``); ``--params`` that differ from them are an error, and ``generate`` refuses to
add data of other parameters to a folder. Interrupted by Ctrl-C (SIGINT) or SIGTERM (``timeout``,
SLURM), a command removes its temporary files and exits with status 130 or 143 (128 + signal).
"""

from __future__ import annotations

import argparse
import errno
import glob
import os
import sys
from collections.abc import Iterator

from swar_bench.tasks.cli_options import (
    GENERATE,
    UsageError,
    card_config_option,
    check_out_file,
    check_out_folder,
    configs_option,
    num_examples_option,
    params_option,
    source_option,
    source_params,
    splits_option,
)
from swar_bench.tasks.hub_io import (
    CorruptDataError,
    DataSourceError,
    card_splits,
    check_disjoint,
    check_folder_params,
    iter_examples,
    load_split,
    parse_config,
    read_checksums,
    release_files,
    release_report,
    remove_stale_temp_files,
    train_configs_text,
    verify_dataset,
    write_dataset,
)
from swar_bench.tasks.oracle import OracleError, annotate
from swar_bench.tasks.passkey_swar import (
    SPLIT_SEEDS,
    SPLIT_SIZES,
    TRAIN_N,
    PasskeySwarParams,
    examples_per_chunk,
    generate_flat,
    split_seeds,
    vocab,
    write_vocab_json,
)
from swar_bench.tasks.stats import compute_stats, format_report, format_table
from swar_bench.utils import interrupts
from swar_bench.utils.argparsing import ArgumentParser, NumberArg, count_arg
from swar_bench.utils.files import (
    atomic_write_text,
)
from swar_bench.utils.locks import FolderLockedError
from swar_bench.utils.quiet import progress_bars_only_on_a_terminal
from swar_bench.utils.text import plural

NUM_EXAMPLES = NumberArg(int, "an integer in [1, 10**6)", lambda n: 1 <= n < 10**6)
"""``--num-examples``: examples per split (the range ``cli_options.num_examples_option`` holds too)."""


def _generated(split: str, n: int, num_examples: int, params: PasskeySwarParams) -> Iterator[dict]:
    seeds = split_seeds(split, n, num_examples)
    step = examples_per_chunk(n)
    for start in range(0, len(seeds), step):
        yield from generate_flat(seeds[start : start + step], n, params).examples()


def _examples(
    source: str, config: str, split: str, num_examples: int | None, params: PasskeySwarParams
) -> Iterator[dict]:
    if source == GENERATE:
        n = parse_config(config)
        yield from _generated(split, n, num_examples or SPLIT_SIZES[split], params)
        return
    ds = load_split(source, config, split)
    if num_examples is not None:
        ds = ds.select(range(min(num_examples, len(ds))))
    yield from iter_examples(ds)


def _pairs(
    configs: list[str],
    splits: list[str] | None,
    default: tuple[str, ...] | None = None,
    explicit: bool = False,
) -> list[tuple[str, str]]:
    """(config, split) pairs of the release: ``train`` only for n32..n256. Asking for ``train``
    skips the other configs when they were not named, and is an error when they were."""
    out = []
    for c in configs:
        n = parse_config(c)
        for s in splits or default or card_splits(n):
            if s not in card_splits(n):
                if explicit:
                    raise UsageError(
                        f"--splits={s}: config {c} has no {s} split; {train_configs_text()}"
                    )
                continue
            out.append((c, s))
    if not out:
        raise UsageError(
            f"--splits={','.join(splits or ())}: none of {', '.join(configs)} has it; {train_configs_text()}"
        )
    return out


def cmd_generate(args) -> int:
    """``data generate``: write the requested configs and splits as a Hub-layout release
    (README.md, vocab.json and params.json first); finished split files are kept. The folder is
    locked for the run (``swar_bench.utils.locks.folder_lock``): a second writer is refused, exit 1,
    naming this one. Exit 0, or 130/143 when stopped (the folder then lacks what was not written;
    ``verify`` names it); 1 for a full disk (ENOSPC)."""
    configs = configs_option(args.configs)
    splits = splits_option(args.splits)
    for c in configs if splits is not None and "train" in splits else ():
        if parse_config(c) not in TRAIN_N:
            raise UsageError(
                f"--splits=train: config {c} has no train split; {train_configs_text()}"
            )
    num_examples = num_examples_option(args.num_examples)
    params = params_option(args.params)
    check_out_folder("--out", args.out)
    check_folder_params(args.out, params, given=args.params is not None)
    from swar_bench.utils.locks import folder_lock

    # one writer per folder: a second one would remove this one's temporary files as stale
    with folder_lock(args.out, "swar-bench data generate"):
        for path in remove_stale_temp_files(args.out):
            print(f"removed {path}, left by an interrupted run", file=sys.stderr)
        kept: list[str] = []
        paths = write_dataset(
            args.out,
            configs=configs,
            splits=splits,
            num_examples=num_examples,
            params=params,
            progress=not args.no_progress,
            kept=kept,
        )
    written = len(paths) - len(kept)
    print(
        f"wrote {plural(written, 'parquet file')}"
        + (f" (kept {len(kept)} finished by an earlier run)" if kept else "")
        + f", README.md and vocab.json under {args.out}"
    )
    configs = sorted({os.path.basename(os.path.dirname(p)) for p in paths}, key=parse_config)
    report = check_disjoint(args.out, configs)
    interrupts.complete()  # written and checked: a signal from here on does not make it "interrupted"
    for config, pairs in report.items():
        for (a, b), n in pairs.items():
            print(f"{config}: {plural(n, 'example')} shared between {a} and {b}", file=sys.stderr)
    if report:
        return 1
    print(f"splits are disjoint (hash of input_ids) in {', '.join(configs)}")
    return 0


def cmd_stats(args) -> int:
    """``data stats``: the task's statistics table of a source (docs/TASK.md, "Statistics"),
    printed and optionally written as a report. Exit 0; 2 on a bad source or option."""
    args.source = source_option("--source", args.source)
    params = source_params(args.params, args.source)
    num = num_examples_option(args.num_examples)
    if args.report is not None:
        check_out_file("--report", args.report)
    stats = []
    for config, split in _pairs(
        configs_option(args.configs, args.source),
        splits_option(args.splits),
        default=("validation",),
        explicit=args.configs is not None,
    ):
        stats.append(
            compute_stats(_examples(args.source, config, split, num, params), config, split, params)
        )
    print(format_table(stats, compare_card=not args.no_compare), end="")
    if args.report is not None:
        atomic_write_text(args.report, format_report(stats, compare_card=not args.no_compare))
        print(f"report written to {args.report}")
    return 0


def _local_files(source: str, config: str, split: str) -> list[str]:
    return glob.glob(os.path.join(source, config, f"{split}-*.parquet"))


def _release_incomplete(source: str) -> bool:
    """For a local folder: name on stderr, in one line, what keeps it from being a complete
    release (:func:`release_report`: files missing, metadata files with a wrong content) and
    return True; False for a complete one or a Hub id."""
    if not os.path.isdir(source):
        return False
    report = release_report(source)
    if report:
        print(report, file=sys.stderr)
    return report is not None


def _unreadable_checksums(source: str) -> bool:
    """For a local folder whose ``checksums.json`` cannot be read (not valid JSON, not of its
    form): name it on stderr, in one line, and return True. Every split file's check would fail
    on it, so it is said once, before any split is read; False otherwise (a Hub id, no file)."""
    if not os.path.isdir(source):
        return False
    try:
        read_checksums(source)
    except CorruptDataError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return True
    return False


def _release_first(source: str, exc: DataSourceError) -> int:
    """Nothing of the request can be read from ``source``: a release folder with problems exits
    1 naming them (``README.md`` lists a split whose file is gone, a ``params.json`` that is not
    valid parameters); otherwise ``exc`` is the user's error (exit 2), also for a folder that holds
    none of a release's files (:func:`release_files`: empty, only a README.md or dataset card):
    no release there."""
    if source != GENERATE and os.path.isdir(source) and release_files(source) and _release_incomplete(source):
        return 1
    raise exc


def cmd_verify(args) -> int:
    """Verify every requested split; a failing split is reported and the others still checked."""
    args.source = source_option("source", args.source)
    try:
        params = source_params(args.params, args.source)
        configs = configs_option(args.configs, args.source)
    except DataSourceError as exc:
        return _release_first(args.source, exc)
    if _unreadable_checksums(args.source):
        return 1
    local = os.path.isdir(args.source)
    checked: list[str] = []
    failed: list[str] = []
    for config, split in _pairs(configs, splits_option(args.splits), explicit=args.configs is not None):
        if local and not _local_files(args.source, config, split):
            continue  # a local folder need not hold every config and split
        name = f"{config}/{split}"
        checked.append(name)
        try:
            ds = load_split(args.source, config, split)
        except DataSourceError as exc:
            if not local:
                raise  # the Hub or its cache cannot give it: not a verification failure
            failed.append(name)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            continue
        try:
            count = verify_dataset(ds, params, regenerate=args.regenerate)
        except (OracleError, DataSourceError) as exc:
            failed.append(name)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            continue
        print(
            f"{name}: {plural(count, 'example')} " + ("passes" if count == 1 else "pass") + " the oracle"
            + ((" and regenerates from its seed" if count == 1 else " and regenerate from their seeds") if args.regenerate else "")
        )
    if not checked:
        return _release_first(args.source, DataSourceError(
            f"no parquet file of the requested configs/splits under {args.source!r} to verify: "
            f"expected {args.source}/n{{N}}/{{split}}-00000-of-00001.parquet"
        ))
    incomplete = _release_incomplete(args.source)
    if failed:
        print(
            f"{len(failed)} of {len(checked)} split(s) FAILED: {', '.join(failed)}", file=sys.stderr
        )
    return 1 if failed or incomplete else 0


def cmd_check(args) -> int:
    """``data check``: the release is complete and its splits are pairwise disjoint (by example
    hash). Exit 0, 1 naming what is missing, shared or unreadable (a split file that is not
    parquet of the release's columns, as ``verify``), 2 on a bad source or option."""
    args.source = source_option("source", args.source)
    try:
        source_params(args.params, args.source)  # no use for them, but wrong ones are an error
        configs = configs_option(args.configs, args.source)
    except DataSourceError as exc:
        return _release_first(args.source, exc)
    if _unreadable_checksums(args.source):
        return 1
    if os.path.isdir(args.source):
        # a config folder counts only if it holds split files (an interrupted generate can leave
        # an empty one, or one with nothing but a temporary file)
        configs = [c for c in configs if any(glob.glob(os.path.join(glob.escape(args.source), c, f"{s}-*.parquet"))
                                             for s in SPLIT_SEEDS)]
        if not configs:
            return _release_first(args.source, DataSourceError(
                f"none of the requested configs under {args.source!r} holds a split file: expected the Hub layout "
                f"({args.source}/n{{N}}/{{split}}-00000-of-00001.parquet)"
            ))
        if args.splits is not None:  # a requested split no config holds would be "disjoint" unread
            held = [s for s in SPLIT_SEEDS if any(glob.glob(os.path.join(glob.escape(args.source), c, f"{s}-*.parquet"))
                                                  for c in configs)]
            absent = [s for s in splits_option(args.splits) if s not in held]
            if absent:
                return _release_first(args.source, DataSourceError(
                    f"--splits={args.splits}: no config under {args.source!r} holds {' or '.join(absent)} "
                    f"({', '.join(configs)} hold {', '.join(held)}); expected splits the folder holds"
                ))
    try:
        report = check_disjoint(args.source, configs, splits_option(args.splits))
    except DataSourceError as exc:
        if not os.path.isdir(args.source):
            raise  # the Hub or its cache cannot give it: not a fault of the release
        # a split file of the release is unreadable: a fault of the data, as in `verify` (exit 1)
        print(f"FAILED: {exc}", file=sys.stderr)
        _release_incomplete(args.source)
        return 1
    for config, pairs in report.items():
        for (a, b), n in pairs.items():
            print(f"{config}: {plural(n, 'example')} shared between {a} and {b}", file=sys.stderr)
    if not report:
        print(f"splits are disjoint in {len(configs)} config(s): {', '.join(configs)}")
    incomplete = _release_incomplete(args.source)
    return 1 if report or incomplete else 0


def _one_example(source: str, config: str, split: str, index: int, params) -> dict:
    """Example ``index`` of a split, after checking that the split has it."""
    n = parse_config(card_config_option(config, "--config", single=True))
    if source == GENERATE:
        if split not in card_splits(n):
            raise UsageError(
                f"--split={split}: config {config} has no {split} split; it has {', '.join(card_splits(n))}"
            )
        size, ds = SPLIT_SIZES[split], None
    else:
        ds = load_split(source, config, split)
        size = len(ds)
    if index >= size:
        span = f" (0..{size - 1})" if size else ""
        raise UsageError(f"--index={index}: out of range; the split has {size} examples{span}")
    if ds is None:
        seeds = split_seeds(split, n, 1, start=index)
        return next(iter(generate_flat(seeds, n, params).examples()))
    return next(iter(iter_examples(ds.select([index]))))


def cmd_show(args) -> int:
    """``data show``: one example of a config and split, decoded token by token. Exit 0; 2 on a
    bad source, config or index."""
    args.source = source_option("--source", args.source)
    params = source_params(args.params, args.source)
    ex = _one_example(args.source, args.config, args.split, args.index, params)
    voc = vocab(params)
    kind, age = annotate(ex["input_ids"], params)
    print(
        f"{args.config}/{args.split} index {args.index} seed {ex['seed']} n_writes {ex['n_writes']} tokens {len(ex['input_ids'])}"
    )
    print(voc.decode(ex["input_ids"]))
    ages = age[kind > 0]
    print(
        "answer_type:",
        " ".join(f"{t}@{a}" if a >= 0 else t for t, a in zip(ex["answer_type"], ages.tolist())),
    )
    return 0


def cmd_vocab(args) -> int:
    """``data vocab``: write vocab.json (token -> id) for the parameters. Exit 0; 2 on a bad
    output path."""
    params = params_option(args.params)
    check_out_file("--out", args.out)
    path = write_vocab_json(args.out, params)
    print(f"wrote {path} ({vocab(params).size} tokens)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``swar-bench data`` argument parser: one sub-command per ``cmd_*`` function."""
    parser = ArgumentParser(
        prog="swar-bench data", description="passkey_swar data: generate, stats, verify, check, show, vocab."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p, source: bool = False, positional_source: bool = False):
        p.add_argument(
            "--configs", help="comma-separated configs, e.g. n32,n64 (default: all of the release's, n32..n16384)"
        )
        every = "every split of train, validation, test that the source holds" if positional_source or source else (
            "train, validation and test")
        p.add_argument("--splits", help=f"comma-separated splits, e.g. validation,test (default: {every})")
        read = "the folder's params.json, else the release's" if positional_source or source else "the release's"
        p.add_argument("--params", help=f'generator parameters as JSON (default: {read}, docs/TASK.md "Generation")')
        if positional_source:
            p.add_argument("source", help="a local folder in the Hub layout or a Hub dataset id")
        elif source:
            p.add_argument(
                "--source",
                default=GENERATE,
                help="'generate' (default), a local folder or a Hub dataset id",
            )

    p = sub.add_parser("generate", help=(h := "write parquet in the Hub layout"), description=h)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--num-examples", type=NUM_EXAMPLES, help="examples per split (default: the release's: train 100,000, validation and test 1,000)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    common(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("stats", help=(h := 'print the statistics table (docs/TASK.md, "Statistics")'), description=h)
    p.add_argument(
        "--num-examples", type=NUM_EXAMPLES, help="examples per split (default: all / the release's sizes)"
    )
    p.add_argument("--report", help="also write a stats.md-style markdown report here")
    p.add_argument("--no-compare", action="store_true", help="do not show the released files' values (from the dataset card, README.md, of irodkin/passkey_swar)")
    common(p, source=True)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("verify", help=(h := "run the oracle on every example"), description=h)
    p.add_argument(
        "--regenerate",
        action="store_true",
        help="also check make_example(seed) reproduces each example",
    )
    common(p, positional_source=True)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("check", help=(h := "check that splits share no example"), description=h)
    common(p, positional_source=True)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("show", help=(h := "print one example, decoded"), description=h)
    p.add_argument("--config", required=True, help="the config of the example, e.g. n32")
    p.add_argument("--split", default="validation", choices=list(SPLIT_SEEDS), help="its split (default: validation)")
    p.add_argument("--index", type=count_arg(0), default=0, help="its row in the split, from 0 (default: 0)")
    p.add_argument(
        "--source",
        default=GENERATE,
        help="'generate' (default), a local folder or a Hub dataset id",
    )
    p.add_argument("--params", help='generator parameters as JSON (default: the release\'s, docs/TASK.md "Generation")')
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("vocab", help=(h := "write vocab.json"), description=h)
    p.add_argument("--out", default="vocab.json", help="the file to write (default: vocab.json)")
    p.add_argument("--params", help='generator parameters as JSON (default: the release\'s, docs/TASK.md "Generation")')
    p.set_defaults(func=cmd_vocab)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``swar-bench data``; returns the exit status (0; 1 a check failed; 2 a
    usage or data error; 130 SIGINT; 143 SIGTERM, each after removing temporary files)."""
    args = build_parser().parse_args(argv)
    return interrupts.command(f"swar-bench data {args.command}", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    """The sub-command of ``args``, run; its one-line refusals printed; the exit status."""
    try:
        with progress_bars_only_on_a_terminal():  # a pipe or a log gets no bars (datasets', the hub's, ours)
            return args.func(args)
    except BrokenPipeError:
        # the reader went away (`swar-bench data show ... | head -1`): the entry point ends quietly
        # with 141 (128 + SIGPIPE), as every command does (swar_bench.cli.READER_GONE)
        raise
    except CorruptDataError as exc:  # a fault of the data (a check failed), in every command: exit 1
        print(f"swar-bench data {args.command}: FAILED: {exc}", file=sys.stderr)
        return 1
    except FolderLockedError as exc:  # another writer holds the folder: not a wrong argument
        print(f"swar-bench data {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            print(f"swar-bench data {args.command}: error: {exc}", file=sys.stderr)
            return 2
        # a full disk is not a wrong argument either: exit 1 (the temporary file is gone)
        print(f"swar-bench data {args.command}: FAILED: {exc.strerror} writing {exc.filename}", file=sys.stderr)
        return 1
    except (DataSourceError, UsageError, OracleError, ValueError) as exc:
        print(f"swar-bench data {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
