"""Train the quickstart model on n32, then test it per N (`make demo` = `swar-bench demo`).

Trains ``configs/quickstart.yaml`` (a small Gated DeltaNet) on generated passkey_swar for at most
``--max-minutes`` (10) minutes on ``--threads`` (2) CPU threads, stopping early once validation
at n32 reaches ``--target`` (0.9) on ar_valid, ar_expired and passkey; then tests it on
N in {32, 64, 128, 256, 512, 1024}, prints the per-N x answer-kind accuracy table and the
calibration table, and writes the tables and figures (the ``AnswerTypeAccuracy`` and
``Calibration`` callbacks) into the run's folder ``runs/quickstart/GatedDeltaNet/version_N/``.

Exit code: 0 when the run finished and the target was met on the n32 validation, 3 when it
finished without meeting it, 2 for bad arguments, 1 when training stopped on a non-finite
loss, 130 when stopped by Ctrl-C and 143 by SIGTERM (each with one line on stderr).
"""

from __future__ import annotations

import os

# On a shared or small machine, OpenMP threads that spin while waiting for work slow every step
# down by 10x or more once other processes compete for the cores; sleeping waiters do not.
# Only effective when set before torch starts its thread pool, hence before importing torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import sys
import time
from pathlib import Path

import lightning.pytorch as pl
import torch

from swar_bench.harness.fast_options import unknown_options
from swar_bench.utils.argparsing import (
    ArgumentParser,
    NumberArg,
    PathArg,
    closest_option,
    count_arg,
    unknown_options_message,
)

TARGET_KINDS = ("ar_valid", "ar_expired", "passkey")
TARGET_N = 32
EXIT_CODES = """exit codes:
  0    finished; n32 validation reached --target on ar_valid, ar_expired and passkey
  3    finished (tested, tables written) without reaching --target
       (prints "demo: target ... NOT reached ...")
  2    bad arguments or config (one line on stderr)
  1    training stopped on a non-finite loss
  130  stopped by Ctrl-C
  143  terminated (SIGTERM)"""


def default_config() -> Path:
    """``configs/quickstart.yaml`` of the source tree (falls back to the working directory)."""
    here = Path(__file__).resolve().parent.parent / "configs" / "quickstart.yaml"
    return here if here.exists() else Path("configs") / "quickstart.yaml"


class StopAtTarget(pl.Callback):
    """Stops training once every ``val/acc/<kind>/n<N>`` of ``kinds`` is >= ``target``.

    Reads the metrics logged by ``AnswerTypeAccuracy`` at the end of each validation; records
    the first optimizer step and wall time (seconds since fit start) at which they were met.
    """

    def __init__(self, target: float = 0.9, kinds: tuple[str, ...] = TARGET_KINDS, n_writes: int = TARGET_N) -> None:
        self.target = target
        self.keys = [f"val/acc/{k}/n{n_writes}" for k in kinds]
        self.reached_at: tuple[int, float] | None = None
        self.history: list[tuple[int, float, dict[str, float]]] = []
        self._t0 = time.monotonic()

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._t0 = time.monotonic()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        values = {k: float(trainer.callback_metrics[k]) for k in self.keys if k in trainer.callback_metrics}
        elapsed = time.monotonic() - self._t0
        self.history.append((trainer.global_step, elapsed, values))
        if trainer.is_global_zero:
            shown = "  ".join(f"{k.split('/')[2]}={v:.3f}" for k, v in values.items())
            loss = getattr(pl_module, "last_train_loss", float("nan"))
            print(f"demo: step {trainer.global_step:5d}  {elapsed:5.0f}s  train loss {loss:.3f}  n{TARGET_N} val  {shown}", flush=True)
        if len(values) == len(self.keys) and all(v >= self.target for v in values.values()):
            if self.reached_at is None:
                self.reached_at = (trainer.global_step, elapsed)
            trainer.should_stop = True


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(
        prog="swar-bench demo", description=__doc__.splitlines()[0], epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [-h] [--config CONFIG] [--max-minutes M] [--threads T] [--target A] [LightningCLI options, e.g. --trainer.max_steps=200]",
    )
    p.add_argument("--config", type=PathArg("the path of a LightningCLI config file", Path), default=None, help="LightningCLI config (default: configs/quickstart.yaml)")
    p.add_argument("--max-minutes", type=NumberArg(float, "a positive number of minutes (at most 1e6)",
                                                   lambda value: 0 < value <= 1e6),  # also refuses nan and inf
                   default=10.0, metavar="M", help="training wall-clock budget in minutes (default: 10)")
    p.add_argument("--threads", type=count_arg(1), default=2, metavar="T", help="torch CPU threads (default: 2)")
    p.add_argument("--target", type=NumberArg(float, "a value in (0, 1]", lambda value: 0 < value <= 1), default=0.9,
                   metavar="A", help="n32 validation accuracy that ends training early (default: 0.9)")
    args, extra = p.parse_known_args(argv)  # the rest, in order, are LightningCLI's: --trainer.max_steps=200
    args.overrides = extra
    close = dict(unknown_options(["fit", *extra]))
    if close:  # a misspelt option of the demo or of LightningCLI: refused before Lightning's parser
        suggestions = {f: closest_option(f, [*p.long_options(), close[f] or ""]) for f in close}
        hint = "" if all(suggestions.values()) else "; expected options of swar-bench demo or of swar-bench fit (swar-bench demo --help)"
        p.error(unknown_options_message(list(close), suggestions) + hint)
    return args


def _max_time(minutes: float) -> str:
    """Lightning's ``max_time`` string ``DD:HH:MM:SS`` for a budget in minutes."""
    seconds = round(minutes * 60)
    days, rest = divmod(seconds, 86400)
    return f"{days:02d}:{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; see the module docstring for the exit codes."""
    from lightning.pytorch.utilities.exceptions import MisconfigurationException

    from swar_bench.harness.stops import recorded_stop_status
    from swar_bench.lightning_cli import flag_sigint, stop_status
    from swar_bench.utils import interrupts
    from swar_bench.utils.quiet import quiet_output

    previous_sigint = flag_sigint()  # before parsing: cli.main put SIGTERM back to its default for the command
    try:
        args = _parse(list(sys.argv[1:] if argv is None else argv))
        # The demo validates at n32 only, so the validation correlation across N is undefined by
        # design; the test's correlation is printed with the tables.
        with quiet_output(messages=(r"^val/self_knowledge_correlation is NaN: ",)):
            status = _run(args)
        interrupts.complete()  # a stop recorded but swallowed is reported; a later one is ignored
        return status
    except MisconfigurationException as err:  # Lightning's own checks of --trainer.* values
        print(f"swar-bench demo: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        return interrupts.report_stop("swar-bench demo", stop)
    except (SystemExit, interrupts.Terminated) as exc:  # Lightning's exits after SIGTERM / Ctrl-C
        stopped = stop_status(exc, "swar-bench demo", "demo")
        if stopped is None:
            raise
        return stopped
    except Exception as exc:  # another error after a Ctrl-C or SIGTERM was recorded: that stop
        stopped = recorded_stop_status(exc, "swar-bench demo", "demo")
        if stopped is None:
            raise
        return stopped
    finally:
        interrupts.restore(previous_sigint)


def _run(args: argparse.Namespace) -> int:
    """Train, test and report (the demo itself); ``main`` turns signals and Lightning's checks
    into exit codes."""
    from jsonargparse import ArgumentError

    from swar_bench.callbacks import AnswerTypeAccuracy, Calibration
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.lightning_cli import (
        TRAINER_DEFAULTS,
        SwarBenchCLI,
        _check_config_files,
        check_trainable,
        discarding_empty_run,
        parse_error_line,
        progress_bar_default,
        resolve_mechanism_names,
    )
    from swar_bench.module import TBPTTModule

    config = args.config or default_config()
    torch.set_num_threads(args.threads)
    stopper = StopAtTarget(args.target)
    cli_args = ["--config", str(config), f"--trainer.max_time={_max_time(args.max_minutes)}", *args.overrides]
    try:
        _check_config_files(cli_args)  # missing, unreadable, not UTF-8, not a YAML mapping: one line naming the file
        cli_args = resolve_mechanism_names(cli_args)
        cli = SwarBenchCLI(
            TBPTTModule, PasskeySwarDataModule, args=cli_args, run=False,
            trainer_defaults={**TRAINER_DEFAULTS, "enable_progress_bar": progress_bar_default(), "callbacks": [stopper]},
            save_config_kwargs={"overwrite": True}, parser_kwargs={"exit_on_error": False},
        )
        check_trainable(cli.model, "fit", None)  # the demo trains: a parameter-free mechanism has nothing to train
        if cli.datamodule.task != "passkey_swar":  # its tables and target are the passkey task's answer kinds
            raise ValueError(f"--config={config}: data.task={cli.datamodule.task}; the demo trains and tests the "
                             "passkey_swar task (its answer-kind tables, its n32 target); expected a passkey_swar "
                             f"config such as configs/quickstart.yaml, or swar-bench fit --config {config} for "
                             f"{cli.datamodule.task}")
    except ArgumentError as err:
        print(f"swar-bench demo: error: {parse_error_line(str(err))}", file=sys.stderr)
        return 2
    except ValueError as err:
        from swar_bench.harness.values import option_line

        print(f"swar-bench demo: error: {option_line(str(err).splitlines()[0], cli_args)}", file=sys.stderr)
        return 2
    from swar_bench.harness.announce import run_seq_len, state_size

    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    mech = model.mechanism
    print(
        f"demo: training {type(mech).__name__} ({mech.n_params:,} params, {state_size(mech, run_seq_len(data))}) "
        f"on train N={list(data.train_configs)} for at most {args.max_minutes:g} min on {args.threads} threads",
        flush=True,
    )
    t0 = time.monotonic()
    try:
        with discarding_empty_run(trainer):  # stopped before it produced anything: no run folder left
            trainer.fit(model, datamodule=data)
            train_s = time.monotonic() - t0
            t1 = time.monotonic()
            trainer.test(model, datamodule=data, verbose=False)
            test_s = time.monotonic() - t1
    except FloatingPointError as err:  # raised by fit: a non-finite training loss
        print(f"swar-bench demo: training stopped: {str(err).splitlines()[0]}", file=sys.stderr)
        return 1
    accuracy = next(cb for cb in trainer.callbacks if isinstance(cb, AnswerTypeAccuracy))
    calibration = next(cb for cb in trainer.callbacks if isinstance(cb, Calibration))
    print("\nTest accuracy per N x answer kind:\n")
    print(accuracy.table())
    if calibration.test_report is not None:
        from swar_bench.callbacks import calibration_table

        print("\nCalibration:\n")
        print(calibration_table(calibration.test_report))
    for path in [*accuracy.report_paths, *calibration.report_paths]:
        print(f"wrote {path}")
    reached = stopper.reached_at
    last = stopper.history[-1][2] if stopper.history else {}
    if reached is not None:
        print(
            f"\ndemo: target {args.target} on {', '.join(TARGET_KINDS)} at n{TARGET_N} validation reached at optimizer step "
            f"{reached[0]} after {reached[1]:.0f}s; training {train_s:.0f}s, test {test_s:.0f}s"
        )
        return 0
    shown = ", ".join(f"{k.split('/')[2]}={v:.3f}" for k, v in last.items()) or "no validation ran"
    print(
        f"\ndemo: target {args.target} NOT reached at n{TARGET_N} validation ({shown}); "
        f"training {train_s:.0f}s, test {test_s:.0f}s"
    )
    return 3


if __name__ == "__main__":
    sys.exit(main())
