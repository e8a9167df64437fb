"""The error lines of the Lightning command line: how ``swar_bench.lightning_cli.main`` ends on
each failure it knows, one line on stderr and an exit status (``exit_status``). 2 for a bad
command line or config, 1 for a run that failed (a non-finite loss, corrupt data, a full disk,
a folder another fit holds, a collective that timed out), 130 / 143 for Ctrl-C / SIGTERM
(``swar_bench.harness.stops``)."""

from __future__ import annotations

import errno
import os
import signal
import sys

from jsonargparse import ArgumentError
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from swar_bench.config_errors import one_line as _one_line
from swar_bench.config_errors import parse_error_line
from swar_bench.harness import stops
from swar_bench.harness.run_folders import run_folder
from swar_bench.utils import interrupts
from swar_bench.utils.locks import FolderLockedError
from swar_bench.utils.ranks import launched_rank


def exit_status(err: BaseException, given: list[str], argv: list[str]) -> int | None:
    """The exit status of a run of ``main`` that raised ``err`` (``given``: the command line as
    typed, named in the error lines; ``argv``: as resolved), after its one line on stderr.
    None for an error it does not know, which ``main`` raises again. The order of the checks is that of the rules: a
    ``DataSourceError`` is a ValueError before it is a RuntimeError; any error after a recorded Ctrl-C or
    SIGTERM is that stop (``stops.recorded_stop_status``)."""
    stopped = stops.recorded_stop_status(err, "swar-bench", argv[0] if argv else None)
    if stopped is not None:
        return stopped
    if isinstance(err, ArgumentError):
        import functools

        from swar_bench.harness.values import expected_tail

        expected = functools.partial(expected_tail, subcommand=given[0] if given else None)
        print(f"swar-bench: error: {parse_error_line(str(err), given, expected)}", file=sys.stderr)
        return 2
    if isinstance(err, FloatingPointError):
        if launched_rank():  # every rank stops with the same line (TBPTTModule.training_step): rank 0 prints it
            return 1
        print(f"swar-bench: training stopped: {_one_line(str(err))}", file=sys.stderr)
        return 1
    if isinstance(err, ValueError):
        from swar_bench.harness.values import option_line

        message = option_line(_one_line(str(err)), given)  # the option as typed, or the --config file that set it
        from swar_bench.harness.checkpoints import hpc_missing_line

        trainer = stops.run_trainer()
        message = hpc_missing_line(message, str(trainer.default_root_dir) if trainer is not None else None) or message
        if "parameter group" in message or "size of optimizer's group" in message:  # torch's Optimizer.load_state_dict
            message = (
                f"--ckpt_path: the checkpoint's optimizer state does not fit this run's optimizer ({message}); expected "
                "the --model.weight_decay and trainable parameters of the run that wrote it, or a new run without --ckpt_path"
            )
        from swar_bench.tasks.hub_io import CorruptDataError

        if isinstance(err, CorruptDataError):  # a fault of the data, not of the command line
            print(f"swar-bench: FAILED: {message}", file=sys.stderr)
            return 1
        print(f"swar-bench: error: {message}", file=sys.stderr)
        return 2
    if isinstance(err, FolderLockedError):  # another fit writes into the folder: not a wrong argument
        print(f"swar-bench: error: {_one_line(str(err))}", file=sys.stderr)
        return 1
    from swar_bench.harness.monitors import monitor_line

    monitored = monitor_line(err, given)  # a callback's monitor naming no logged metric (found mid-run)
    if monitored is not None:
        print(f"swar-bench: error: {monitored}", file=sys.stderr)
        return 2
    import torch.distributed as dist

    if isinstance(err, getattr(dist, "DistError", ())) and launched_rank():  # rank 0 says why the run ended
        return 128 + signal.SIGTERM
    if isinstance(err, RuntimeError) and launched_rank() and stops.peer_gone(err):
        return 128 + signal.SIGTERM  # gloo: rank 0 ended (and says why) while this rank waited in a collective
    if isinstance(err, RuntimeError):  # after ValueError: DataSourceError is both
        if not stops.collective_timed_out(err):
            return None
        stops.stop_other_ranks()
        print(f"swar-bench: FAILED: a collective of the distributed run timed out (another rank stopped, hung or "
              f"died?); raise --collective_timeout if a step is that slow ({_one_line(str(err))[:200]})", file=sys.stderr)
        return 1
    if isinstance(err, OSError):
        if err.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk is not a bad argument: exit 1
            folder = run_folder(stops.run_trainer()) if stops.run_trainer() is not None else os.path.dirname(err.filename or ".")
            print(f"swar-bench: FAILED: {err.strerror or os.strerror(err.errno)} writing {err.filename or 'a file'} "
                  f"(run folder {folder}); free space and resume with --ckpt_path last", file=sys.stderr)
            return 1
        if err.filename is None:
            return None
        print(f"swar-bench: error: {err.filename}: {err.strerror or err}", file=sys.stderr)
        return 2
    if isinstance(err, MisconfigurationException):  # Lightning's own checks of --trainer.* values
        print(f"swar-bench: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    if isinstance(err, KeyboardInterrupt):  # Ctrl-C before Lightning's own handling (parsing, set-up)
        return interrupts.report_stop("swar-bench", err)
    if isinstance(err, interrupts.Terminated):  # SIGTERM before Lightning's own handler exists
        return stops.stop_status(err, "swar-bench", argv[0] if argv else None)
    if isinstance(err, SystemExit):  # --help, --print_config; Lightning's exits after SIGTERM / Ctrl-C
        stopped = stops.stop_status(err, "swar-bench", argv[0] if argv else None)
        if stopped is not None:
            return stopped
        return int(err.code or 0) if not isinstance(err.code, str) else 2
    return None
