"""`swar-bench` entry point: `data ...`, `referee ...`, `demo`, `check-mechanism`, else LightningCLI (fit/validate/test/predict)."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable

USAGE = """usage: swar-bench COMMAND [options]

passkey_swar: a referee for fixed-size-state sequence models.

commands:
  fit | validate | test | predict   LightningCLI: train / evaluate any mechanism (--config configs/...yaml)
  data                              passkey_swar data: generate, stats, verify, check, show, vocab
  referee                           the long-context referee (--config configs/referee/...yaml); referee compare, referee verdict
  demo                              train the quickstart model on n32, test it per N (exit 3: target not reached)
  check-mechanism                   check a mechanism against the protocol before training it (CLASS_PATH)
  study                             a fair comparison from a study file: study run | status | report | site STUDY.yaml

`swar-bench COMMAND --help` describes each command; `swar-bench --version` prints the version."""


LIGHTNING_COMMANDS = ("fit", "validate", "test", "predict")


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default ``sys.argv[1:]``) to a command; returns its exit code.

    Ctrl-C and SIGTERM are handled from the first line on (``swar_bench.utils.interrupts``), during
    the seconds of imports a command needs: stopped there, it prints one line and exits 130 or
    143 (128 + the signal), as each command does once running. The command then installs its
    own handlers (Lightning its SIGTERM / SLURM ones).
    """
    from swar_bench.utils import interrupts

    argv = list(sys.argv[1:] if argv is None else argv)
    previous = interrupts.install(sigterm=True)
    try:
        try:
            command, args = _command(argv)
            interrupts.raise_if_stopped()  # a stop held back while the command's modules were imported
        finally:
            # SIGTERM back to what it was before the command runs (the command installs its own)
            interrupts.restore({k: v for k, v in previous.items() if k == signal.SIGTERM})
        try:
            status = command(args)
        except BrokenPipeError:  # stdout's reader has gone (`swar-bench ... | head -1`)
            _finish_stdout()
            return READER_GONE
        except SystemExit:  # --help and argparse's exits: their output is flushed here, not at exit
            if not _finish_stdout():
                return READER_GONE
            raise
        return status if _finish_stdout() else READER_GONE
    except (KeyboardInterrupt, interrupts.Terminated) as stop:
        from swar_bench.utils.ranks import launched_rank

        if launched_rank():  # rank 0 speaks for a DDP run's other ranks
            return interrupts.stop_status(stop)
        return interrupts.report_stop("swar-bench", stop)
    finally:
        interrupts.restore({k: v for k, v in previous.items() if k == signal.SIGINT})


READER_GONE = 128 + 13
"""The exit status when stdout's reader closed the pipe early (128 + SIGPIPE, as a shell tool
killed by SIGPIPE reports it); nothing is printed: the reader took what it wanted."""


def _finish_stdout() -> bool:
    """Flush stdout; False when its reader has gone (a closed pipe), after pointing stdout at
    ``os.devnull`` so that the interpreter's own flush at exit does not fail with a traceback."""
    try:
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return False


def _usage(argv: list[str]) -> int:
    print(USAGE, file=sys.stdout if argv else sys.stderr)
    return 0 if argv else 2


def _version(argv: list[str]) -> int:
    from swar_bench import __version__

    print(f"swar-bench {__version__}")
    return 0


def _unknown(argv: list[str]) -> int:
    from swar_bench.utils.text import unknown_name_line

    commands = (*LIGHTNING_COMMANDS, "data", "referee", "demo", "check-mechanism", "study")
    print(f"swar-bench: error: {unknown_name_line('command', argv[0], commands, ' (swar-bench --help)')}", file=sys.stderr)
    return 2


def _leading_option_line(word: str) -> str:
    """The refusal of an option given before any command: ``unknown option --versio (did you mean
    --version?); expected a command first: swar-bench COMMAND [options] (swar-bench --help)``,
    said at once, before Lightning is imported for a command that is not there."""
    from swar_bench.utils.argparsing import closest_option, unknown_options_message

    flag = word.partition("=")[0]
    if flag in ("-h", "--help", "--version"):
        return f"{word}: {flag} takes no value; expected {flag} alone (swar-bench --help)"
    line = unknown_options_message([flag], {flag: closest_option(flag, ["--help", "--version"])})
    commands = ", ".join((*LIGHTNING_COMMANDS, "data", "referee", "demo", "check-mechanism", "study"))
    return f"{line}; expected a command first ({commands}) or --help, --version (swar-bench --help)"


def _refuse(line: str, argv: list[str]) -> int:
    print(f"swar-bench: error: {line}", file=sys.stderr)
    return 2


def _command(argv: list[str]) -> tuple[Callable[[list[str]], int], list[str]]:
    """The main function of ``argv``'s command (imported here: the slow part) and its arguments."""
    # OpenMP threads that spin while waiting slow every step down 5-10x once other processes
    # share the cores; sleeping waiters do not. Only effective before torch starts its pool.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if not argv or argv[0] in ("-h", "--help"):
        return _usage, argv
    if argv[0] == "--version":  # answered before any heavy import (LightningCLI's parser knows no --version)
        return _version, argv
    if argv[0] == "data":
        from swar_bench.tasks.cli import main as data_main

        return data_main, argv[1:]
    if argv[0] == "referee":
        from swar_bench.referee.cli import main as referee_main

        return referee_main, argv[1:]
    if argv[0] == "demo":
        from swar_bench.demo import main as demo_main

        return demo_main, argv[1:]
    if argv[0] == "study":
        from swar_bench.study.cli import main as study_main

        return study_main, argv[1:]
    if argv[0] == "check-mechanism":
        from swar_bench.mechanisms.check_cli import main as check_main

        return check_main, argv[1:]
    if not argv[0].startswith("-") and argv[0] not in LIGHTNING_COMMANDS:
        return _unknown, argv
    if argv[0].startswith("-"):  # before a command only --help and --version mean something
        return functools.partial(_refuse, _leading_option_line(argv[0])), argv
    if argv[0] in LIGHTNING_COMMANDS:
        from swar_bench.utils.ranks import guard_rank

        guard_rank()  # a rank of a DDP run ends with the process that started it (rank 0)
        # an unknown option is refused here, in well under a second, not after the 5-35 s of
        # importing Lightning that building its parser needs (swar_bench.harness.fast_options)
        from swar_bench.harness.fast_options import unknown_options_line

        line = unknown_options_line(argv)
        if line is not None:
            return functools.partial(_refuse, line), argv
    from swar_bench.lightning_cli import main as lightning_main

    return lightning_main, argv


if __name__ == "__main__":
    sys.exit(main())
