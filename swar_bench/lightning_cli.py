"""LightningCLI for swar_bench: ``swar-bench fit|validate|test|predict --config configs/....yaml``.

The config file is the experiment (``configs/quickstart.yaml``): ``model`` is a ``TBPTTModule``
whose ``mechanism`` is any ContextMechanism given by ``class_path`` (``--model.mechanism
GatedDeltaNet`` or ``--model.mechanism=swar_bench.mechanisms.GRU`` swaps it), ``data`` a
``PasskeySwarDataModule`` (``--data.task passkey_swar`` or ``mqar``). Always present
(configurable, not replaceable): a ``ModelCheckpoint`` with ``save_last=True``
(``--checkpoint.*``), the ``AnswerTypeAccuracy`` (``--accuracy.*``) and ``Calibration``
(``--calibration.*``) callbacks, which measure passkey_swar, ``MQARAccuracy``
(``--mqar_accuracy.*``), which measures MQAR, and a ``PredictionWriter``
(``--predictions.output_dir DIR`` saves ``predict`` outputs); the default logger is
TensorBoard under ``runs/``.

Each run has its own folder ``runs/<config>/<Mechanism>/version_N/`` (``swar_bench.harness.runs``):
logs, ``config.yaml``, ``checkpoints/`` and test reports. ``--ckpt_path last`` resumes the newest
run of that config and mechanism in its folder (without ``--checkpoint.dirpath``; with it, the
newest checkpoint of that folder). A mechanism name is resolved by
``swar_bench.mechanisms.registry`` (``--model.mechanism=GRU`` is GRU at its defaults), on the
command line and in a ``--config`` file alike (``SwarBenchCLI.init_parser``). With
``--trainer.logger=false`` the reports and LightningCLI's config go to ``runs/`` itself.
``fit --ckpt_path last`` with nothing to resume starts from scratch after one line saying so
(:func:`fresh_start_notice`), unless the folder it would write into already holds checkpoints
(a forced version, ``--checkpoint.dirpath``): a new run never writes over a run
(:func:`check_fresh_start`, one line naming the folder). A ``last.ckpt`` that cannot be read (cut
short by a kill or a full disk) is passed over for the newest checkpoint beside it that can, in
one line (:func:`readable_resume`), and so is a step checkpoint newer than ``last.ckpt`` (a kill between
the two saves), whose save is then completed (:func:`completed_resume`). A ``fit`` holds the folder it
resumes or is forced into for the whole run: a second one is refused, exit 1, in one line naming the
holder (:func:`holding_fit_folder`). A misspelt ``--config`` key is named with the file, every one at once,
each with a "did you mean" (``swar_bench.config_errors.unknown_config_keys``); a misspelt option on the
command line is refused before Lightning is imported (``swar_bench.harness.fast_options``). Checkpoints are read weights-only and written beside their
destination, then renamed (``swar_bench.runtime.checkpoint_io``); a full disk ends the run with exit code
1 and one line naming the run folder, the previous checkpoint intact; in a distributed run a
collective that waits longer than ``--collective_timeout`` seconds (a rank stopped or hung) ends
it with exit code 1 and one line, the launched ranks killed (:func:`collective_timed_out`); ``validate`` / ``test`` / ``predict`` without ``--ckpt_path`` warn
that the weights are untrained, and ``fit`` of a mechanism without trainable parameters is
refused (:func:`check_trainable`). The model summary shows the mechanism's forward FLOPs per
token (:class:`FlopsPerTokenSummary`).

Bad configs end with one line on stderr (exit code 2), e.g. an unknown mechanism class,
``tbptt_steps < 1``, an N outside the task's N set (32..16384), a ``--ckpt_path`` that does not exist or whose
weights do not fit the configured mechanism, a ``--ckpt_path`` (a path or a URL) that
``torch.load(weights_only=True)`` refuses (a pickled payload is never run;
``swar_bench.runtime.checkpoint_io``), an output folder that cannot be created, a mechanism
init arg of the wrong type (naming the option or the ``--config`` file that set it) or
``--trainer.accelerator=gpu`` on a machine without one, a mechanism whose parameters cannot fit in
memory (``swar_bench.runtime.memory``); they are found before anything is written. A non-finite training loss ends the run with one line (exit
code 1) and no checkpoint written after it.

Here: ``SwarBenchCLI``, ``run_cli`` and ``main``; the pieces are in ``swar_bench.harness`` (one module
an idea) and ``swar_bench.callbacks``, their names importable from here too (``__all__``).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import ModelCheckpoint, ModelSummary
from lightning.pytorch.cli import LightningCLI

from swar_bench.callbacks.distributed_stop import DistributedStop

# The names below keep importing from here (``from swar_bench.lightning_cli import ...``), where
# they were defined before the command line was split into swar_bench/harness/.
from swar_bench.callbacks.flops_summary import FlopsPerTokenSummary
from swar_bench.callbacks.prediction_writer import PredictionWriter
from swar_bench.callbacks.slurm_requeue import SlurmRequeue
from swar_bench.callbacks.stop_check import StopCheck
from swar_bench.config_errors import (  # FINITE_FLOAT_EXPECTED, mechanism_names: their old import path
    FINITE_FLOAT_EXPECTED,
    mechanism_names,
    parse_error_line,
)
from swar_bench.config_errors import one_line as _one_line
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.harness import stops
from swar_bench.harness.announce import Announce, describe_mechanism
from swar_bench.harness.checkpoints import (
    CKPT_PATH_KEYWORDS,
    RESUME_FIXED,
    checkpoint_mechanism,
    ckpt_path_keyword,
    mismatch_error,
    read_checkpoint,
    resumed_optimizer_changes,
    state_dict_mismatch,
)
from swar_bench.harness.checks import (
    check_accelerator,
    check_mechanism_class,
    check_model_fits,
    check_nested_options,
    check_output_folder,
    check_strategy,
    check_trainable,
    naming_the_option,
    nested_class_paths,
    resolve_mechanism_names,
)
from swar_bench.harness.checks import check_config_files as _check_config_files
from swar_bench.harness.checks import output_folders as _output_folders
from swar_bench.harness.defaults import (
    ARGS_WARNING,
    COLLECTIVE_TIMEOUT_S,
    TRAINER_DEFAULTS,
    progress_bar_default,
    save_config_kwargs,
    trainer_defaults,
)
from swar_bench.harness.device_checks import check_devices
from swar_bench.harness.errors import exit_status
from swar_bench.harness.run_folders import (
    check_fresh_start,
    completed_resume,
    discarding_empty_run,
    fit_lock_folders,
    fresh_checkpoint_folder,
    fresh_start_notice,
    holding_fit_folder,
    rank_zero,
    readable_resume,
    run_folder,
)
from swar_bench.harness.stops import (
    collective_timed_out,
    flag_sigint,
    resume_checkpoint,
    stop_other_ranks,
    stop_status,
)
from swar_bench.harness.values import check_trains, check_values, integer_batch_limits
from swar_bench.module import TBPTTModule, mechanism_class_path
from swar_bench.utils import interrupts
from swar_bench.utils.argparsing import check_no_dashes_value
from swar_bench.utils.help_format import retitle_groups
from swar_bench.utils.quiet import quiet_output

__all__ = [
    "ARGS_WARNING", "CKPT_PATH_KEYWORDS", "COLLECTIVE_TIMEOUT_S", "FINITE_FLOAT_EXPECTED", "RESUME_FIXED",
    "TRAINER_DEFAULTS", "Announce", "FlopsPerTokenSummary", "PredictionWriter", "StopCheck", "SwarBenchCLI",
    "check_accelerator", "check_fresh_start", "check_output_folder", "check_trainable", "checkpoint_mechanism",
    "collective_timed_out", "completed_resume", "describe_mechanism", "discarding_empty_run",
    "fit_lock_folders", "flag_sigint", "fresh_checkpoint_folder", "fresh_start_notice", "holding_fit_folder",
    "main", "mechanism_names", "nested_class_paths", "parse_error_line", "progress_bar_default",
    "readable_resume", "resolve_mechanism_names", "resume_checkpoint", "resumed_optimizer_changes", "run_cli",
    "run_folder", "save_config_kwargs", "state_dict_mismatch", "stop_other_ranks", "stop_status",
    "trainer_defaults",
]

class SwarBenchCLI(LightningCLI):
    """LightningCLI with the always-on checkpoint and metric callbacks of swar_bench.

    Checks what can be checked before anything is built or written: ``--ckpt_path`` exists and
    is a readable checkpoint, the output folders can be created, and (once the model is built,
    before the Trainer) the checkpoint's weights fit the configured mechanism. Raises ValueError
    (one line) otherwise.
    """

    _checkpoint: dict[str, Any] | None = None
    _checkpoint_path: str | None = None
    _held: contextlib.ExitStack | None = None
    _held_folders: frozenset[str] | set[str] = frozenset()
    _seed: int | None = None

    def init_parser(self, **kwargs: Any):
        # config files read mechanism names as the command line does (swar_bench.mechanisms.registry)
        from swar_bench.mechanisms.registry import config_parser_mode
        from swar_bench.utils.help_format import PlainHelpFormatter

        kwargs.setdefault("parser_mode", config_parser_mode(("model", "mechanism")))
        kwargs.setdefault("formatter_class", PlainHelpFormatter)  # docstrings' RST shown plain in --help
        return super().init_parser(**kwargs)

    _argv: list[str] = []  # noqa: RUF012 - replaced per instance by parse_arguments
    """The (resolved) command line, for naming where a refused value came from."""

    def parse_arguments(self, parser, args) -> None:
        self._argv = list(args or [])
        from jsonargparse import ArgumentError

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=ARGS_WARNING)
            try:
                super().parse_arguments(parser, args)
            except ArgumentError as err:
                line = self._unknown_config_keys(list(args or []))
                if line is None:
                    raise
                raise ValueError(line) from err
        line = self._unknown_config_keys(list(args or []))  # keys the parser passes on unchecked (data.mqar)
        if line is not None:
            raise ValueError(line)
        subcommand = self.config.get("subcommand")
        cfg = self.config[subcommand] if subcommand else self.config
        check_accelerator(cfg.get("trainer.accelerator"), list(args or []))
        check_strategy(cfg.get("trainer.strategy"), list(args or []))
        check_devices(cfg, list(args or []))  # a strategy or precision Lightning cannot build on this accelerator
        self._typed_args = list(args or [])  # as typed: integer_batch_limits reads them at the Trainer
        check_values(cfg, list(args or []), subcommand)  # values a library would refuse later, unnamed
        if subcommand == "fit":
            check_trains(cfg, list(args or []))  # max_steps=0 and the like: no step, an empty run folder
        self._configure_run_folder(cfg, subcommand)
        ckpt_path = cfg.get("ckpt_path") if subcommand else None
        if ckpt_path is not None and ckpt_path_keyword(str(ckpt_path), subcommand) is None:
            self._read_checkpoint(str(ckpt_path))  # local or a URL: weights only, a payload is refused
        if str(ckpt_path) == "last" and subcommand in ("fit", "validate", "test", "predict"):
            # `fit --ckpt_path last` with no checkpoint is a fresh start (a first SLURM run);
            # evaluating with none would silently score a randomly initialised model.
            dirpath = (cfg.get("checkpoint") or {}).get("dirpath") or os.path.join(str(cfg.get("trainer.default_root_dir")), "checkpoints")
            from swar_bench.runtime.slurm import resume_candidates

            self._lock_for_fit(subcommand, dirpath, dirpath)  # before its checkpoints are read
            # Lightning's "last": the newest last*.ckpt, else any checkpoint (a run killed between
            # its first step checkpoint and its first last.ckpt); readable_resume takes the most progress
            found = glob.glob(os.path.join(glob.escape(str(dirpath)), "last*.ckpt")) or resume_candidates(dirpath)
            if found:
                newest = max(found, key=os.path.getmtime)
                # a file: Lightning's "last" may differ
                cfg.ckpt_path = completed_resume(readable_resume(newest, subcommand), newest, cfg, subcommand)
                self._resolved_last = True
                self._read_checkpoint(cfg.ckpt_path)
            if not found and subcommand == "fit":
                cfg.ckpt_path = None
                check_fresh_start(cfg)  # before the notice: a refused fresh start says only why
                fresh_start_notice(dirpath)
            elif not found:
                raise ValueError(
                    f"--ckpt_path=last: no last*.ckpt in --checkpoint.dirpath={dirpath}; expected the folder of a "
                    "fit run, or a checkpoint file"
                )
        timeout = cfg.get("collective_timeout")
        if timeout is not None and not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"--collective_timeout={timeout} is invalid; expected a positive number of seconds")
        for flag, folder in _output_folders(cfg, subcommand):
            check_output_folder(folder, flag)
        if subcommand == "fit" and cfg.get("ckpt_path") in (None, ""):
            check_fresh_start(cfg)
        for folder in fit_lock_folders(cfg) if subcommand == "fit" else ():
            self._lock_for_fit(subcommand, folder, self._checkpoint_folder(cfg))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._held = contextlib.ExitStack()  # the folder locks of a fit (fit_lock_folders), for the whole run
        self._held_folders: set[str] = set()
        # TBPTTModule builds its own AdamW and warmup-cosine schedule (model.lr, model.weight_decay,
        # model.betas, model.warmup_steps, ...) and steps them itself (manual optimization, one step
        # per TBPTT chunk): LightningCLI's --optimizer / --lr_scheduler would be ignored or crash
        # that loop, so they are not options (refused as unknown, naming the model.* options)
        kwargs.setdefault("auto_configure_optimizers", False)
        with self._held:
            super().__init__(*args, **kwargs)

    def _parse_ckpt_path(self) -> None:
        """Lightning replaces the command line's model options by a checkpoint file's
        hyperparameters; ``--ckpt_path last`` resolved to a file here keeps the options as typed, as
        Lightning's own ``"last"`` does (a resumed run with another ``--model.weight_decay`` is then
        refused by the optimizer's state, not silently trained with the old one)."""
        if getattr(self, "_resolved_last", False):
            return
        super()._parse_ckpt_path()

    def _lock_for_fit(self, subcommand: str | None, folder: str | os.PathLike, checkpoint_folder: str | os.PathLike | None) -> None:
        """Hold ``folder`` for the rest of a ``fit`` (:func:`holding_fit_folder`), once; nothing for
        other subcommands (a ``test`` may read a run while it trains), a remote folder, or a rank
        other than global rank 0 (the launched ranks of a distributed run re-parse the command)."""
        text = os.fspath(folder)
        key = os.path.abspath(text)
        if self._held is None or subcommand != "fit" or "://" in text or key in self._held_folders or not rank_zero():
            return  # (no _held: not run by __init__, so nothing would hold the lock for the run)
        self._held.enter_context(holding_fit_folder(text, None if checkpoint_folder is None else os.fspath(checkpoint_folder)))
        self._held_folders.add(key)

    @staticmethod
    def _checkpoint_folder(cfg: Any) -> str | None:
        """The local folder the fit's ``ModelCheckpoint`` writes into, when fixed before the run."""
        where = fresh_checkpoint_folder(cfg)
        return where[1] if where is not None else None

    def _unknown_config_keys(self, args: list[str]) -> str | None:
        """One line naming every key of the ``--config`` files of ``args`` that names no option of
        the subcommand, by file, each with a "did you mean" (``config_errors.unknown_config_keys``);
        None when every key is an option (the parser's own message then stands)."""
        from swar_bench.config_errors import config_files_line
        from swar_bench.harness.fast_options import nested_fields

        command = args[0] if args else None
        subparser = getattr(self, "_subcommand_parsers", {}).get(command)
        if subparser is None:
            return None
        options = {a.dest for a in subparser._actions if isinstance(getattr(a, "dest", None), str)}
        groups = {a.dest for a in subparser._actions if type(a).__name__ == "_ActionConfigLoad"}  # --trainer FILE
        return config_files_line(args, options, command, groups, nested_fields)

    _ckpt_run_folder: str | None = None
    """The run folder ``--ckpt_path`` lies in, when the run logs into it (``_configure_run_folder``)."""

    def _configure_run_folder(self, cfg: Any, subcommand: str | None) -> None:
        """Name the run folder after the config and the mechanism (``swar_bench.harness.runs``): the
        TensorBoard/CSV logger's ``name`` becomes ``<name>/<Mechanism>``; ``--ckpt_path last``
        (without ``--checkpoint.dirpath``) becomes the newest ``last.ckpt`` of those runs and a
        checkpoint inside a run folder anywhere (``swar_bench.harness.runs.run_folder_of_checkpoint``: any
        ``save_dir``, name, version or nesting) puts the logger on that folder unless a version is
        forced, so a resumed fit and a validate / test log and report into the run they continue.
        A logger version that is not one folder name, or a name with ``..`` (outside
        ``save_dir``), raises ValueError (one line) before anything is created."""
        from swar_bench.harness import runs

        logger = cfg.get("trainer.logger")
        init_args = getattr(logger, "init_args", None)
        if init_args is not None and str(getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger")):
            # a name or version with '/' or '..' would put the run outside save_dir
            runs.check_path_component(init_args.get("version"), "--trainer.logger.init_args.version")
            runs.check_path_component(init_args.get("name"), "--trainer.logger.init_args.name", nested=True)
        class_paths = nested_class_paths(cfg.get("model.mechanism"))
        if not class_paths or init_args is None or not str(getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger")):
            return
        # a wrapper names its run after what it wraps too: ZoologyBackbone-CausalAttention
        label = "-".join(runs.mechanism_name(path) for path in class_paths)
        init_args.name = runs.run_name(init_args.get("name") or "", label)
        root = Path(str(init_args.get("save_dir") or ".")) / init_args.name
        if init_args.get("version") is not None:  # "0", 0 and "version_0" are one folder, version_0
            init_args.version = runs.logger_version(init_args.version)
        forced = init_args.get("version") is not None
        ckpt_path = cfg.get("ckpt_path") if subcommand else None
        if str(ckpt_path) == "last" and (cfg.get("checkpoint") or {}).get("dirpath") is None:
            skipped: list[str] = []
            if forced:  # locked before its checkpoints are read: another fit may be writing them
                version_dir = root / runs.version_folder(init_args.version)
                self._lock_for_fit(subcommand, version_dir, version_dir / "checkpoints")
            found = runs.last_checkpoint(root, init_args.get("version"), warn=skipped.append)
            if found is not None and not forced:
                self._lock_for_fit(subcommand, found[0].parent.parent, found[0].parent)
            if rank_zero():  # a forced version resumes its newest readable checkpoint: say what it skipped
                for line in skipped:
                    print(f"swar-bench {subcommand}: {line}; resuming from the newest readable checkpoint", file=sys.stderr, flush=True)
            if found is None and subcommand == "fit":
                cfg.ckpt_path = None  # nothing to resume: a fresh start (a first SLURM run)
                where = root / (runs.version_folder(init_args.version) if init_args.get("version") is not None else "*")
                check_fresh_start(cfg)  # before the notice: a refused fresh start says only why
                fresh_start_notice(where / "checkpoints")
            elif found is None:
                where = root / (runs.version_folder(init_args.version) if init_args.get("version") is not None else "*")
                raise ValueError(
                    f"--ckpt_path=last: no last.ckpt in {where}/checkpoints; expected a fit run of this config and "
                    "mechanism first, or a checkpoint file"
                )
            else:
                chosen = readable_resume(str(found[0]), subcommand)
                cfg.ckpt_path, init_args.version = completed_resume(chosen, str(found[0]), cfg, subcommand), found[1]
                self._resolved_last = True
        elif ckpt_path is not None and not forced and str(ckpt_path) not in CKPT_PATH_KEYWORDS and "://" not in str(ckpt_path):
            # a checkpoint inside a run folder, wherever it lies: log and report into that folder
            run = runs.run_folder_of_checkpoint(str(ckpt_path))
            if run is not None:
                init_args.save_dir, init_args.name, init_args.version = runs.logger_location(run, init_args.name)
                self._ckpt_run_folder = str(Path(init_args.save_dir, init_args.name, runs.version_folder(init_args.version)))
                self._lock_for_fit(subcommand, self._ckpt_run_folder, self._ckpt_checkpoint_dir())

    def _ckpt_checkpoint_dir(self) -> str | None:
        """``<run folder>/checkpoints`` as Lightning's ``ModelCheckpoint`` spells it for a run into
        the run folder of ``--ckpt_path`` (``os.path.join(save_dir, name, version,
        "checkpoints")``), else None."""
        if self._ckpt_run_folder is None:
            return None
        return os.path.join(self._ckpt_run_folder, "checkpoints")

    def _read_checkpoint(self, path: str) -> None:
        checkpoint = read_checkpoint(path, self.config.get("subcommand"))
        self._checkpoint_path = path
        if checkpoint is not None:
            self._checkpoint = checkpoint

    def _set_seed(self) -> None:
        # Seed silently here; the "Seed set to" line is logged once the run starts, so that a
        # one-line error about the configuration is not preceded by it.
        from lightning.fabric.utilities.seed import seed_everything

        config_seed = self._get(self.config, "seed_everything")
        if config_seed is False:
            return
        seed = seed_everything(None if config_seed is True else config_seed, workers=True, verbose=False)
        if self.subcommand:
            self.config[self.subcommand]["seed_everything"] = seed
        else:
            self.config["seed_everything"] = seed
        self._seed = seed

    def instantiate_classes(self) -> None:
        """LightningCLI's, with a constructor's one-line ValueError that names an argument by its
        short name (``d_model must be a positive integer, got -4``, ``lr=-1.0 is invalid; ...``)
        led by the option that set it (``--model.mechanism.init_args.d_model=-4: ...``, or the
        ``--config`` file it came from)."""
        self._check_model_fits()
        try:
            self.config_init = self.parser.instantiate_classes(self.config)
        except ValueError as err:
            raise ValueError(self._naming_the_option(_one_line(str(err)))) from None
        self.datamodule = self._get(self.config_init, "data")
        self.model = self._get(self.config_init, "model")
        self._add_configure_optimizers_method_to_model(self.subcommand)
        self.trainer = self.instantiate_trainer()

    def _check_model_fits(self) -> None:
        check_model_fits(self.config[self.subcommand] if self.subcommand else self.config, self.subcommand)

    def _naming_the_option(self, message: str) -> str:
        return naming_the_option(message, self.config[self.subcommand] if self.subcommand else self.config, self._argv)

    def instantiate_trainer(self, **kwargs: Any):
        from swar_bench.mechanisms.task_fit import check_task_fits
        from swar_bench.utils.quiet import silence_run_notices

        cfg = self.config[self.subcommand] if self.subcommand else self.config
        if isinstance(self.model, TBPTTModule):  # before the Trainer: nothing written yet
            check_task_fits(
                self.model.mechanism, getattr(self.datamodule, "params", None), getattr(self.datamodule, "mqar", None)
            )
            check_trainable(self.model, self.subcommand, cfg.get("ckpt_path"))
        self._check_checkpoint_fits()
        silence_run_notices(resuming=cfg.get("ckpt_path") not in (None, ""), checkpoint_dir=self._ckpt_checkpoint_dir(),
                            locked_folder=self._checkpoint_folder(cfg) if self.subcommand == "fit" else None)
        # --trainer.limit_val_batches=1 means one batch; jsonargparse hands Lightning 1.0 (every batch)
        trainer = super().instantiate_trainer(**{**integer_batch_limits(cfg, getattr(self, "_typed_args", [])), **kwargs})
        from swar_bench.runtime.checkpoint_io import SafeCheckpointIO

        # every checkpoint Lightning reads (--ckpt_path of any spelling, last, hpc) weights only;
        # every one it writes beside its destination, then renamed
        trainer.strategy.checkpoint_io = SafeCheckpointIO()
        timeout = cfg.get("collective_timeout")
        if timeout is not None and hasattr(trainer.strategy, "_timeout"):  # DDP, FSDP, ModelParallel: set up later
            from datetime import timedelta

            trainer.strategy._timeout = timedelta(seconds=float(timeout))
        trainer.callbacks.append(StopCheck())
        trainer.callbacks.append(DistributedStop())  # SIGTERM in a DDP / FSDP run: every rank stops at one batch
        if trainer.fast_dev_run:  # Lightning skips every save then, except save_last at train end
            for cb in trainer.checkpoint_callbacks:
                cb.save_last = False
        trainer.callbacks[:] = [FlopsPerTokenSummary.replacing(cb) if type(cb) is ModelSummary else cb for cb in trainer.callbacks]
        stops.set_run_trainer(trainer)
        return trainer

    def _mismatch_error(self, account: str, checkpoint: dict[str, Any] | None, path: str | None) -> ValueError:
        return mismatch_error(mechanism_class_path(self.model.mechanism), account, checkpoint, path)

    def _check_checkpoint_fits(self) -> None:
        model = getattr(self, "model", None)
        if self._checkpoint is None or not isinstance(model, TBPTTModule) or not model.strict_loading:
            return
        found = {k: tuple(v.shape) for k, v in self._checkpoint["state_dict"].items() if isinstance(v, torch.Tensor)}
        expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        account = state_dict_mismatch(expected, found)
        if account is not None:
            raise self._mismatch_error(account, self._checkpoint, self._checkpoint_path)
        if self.subcommand == "fit":
            changed = resumed_optimizer_changes(dict(model.hparams), self._checkpoint.get("hyper_parameters") or {})
            if changed:
                raise ValueError(
                    f"--ckpt_path={self._checkpoint_path}: a resumed fit keeps the checkpoint's optimizer and "
                    f"schedule, which differ from this command's: {changed}; expected the values the run was "
                    "trained with, or a new run without --ckpt_path"
                )

    def _prepare_subcommand_parser(self, klass: type, subcommand: str, **kwargs: Any):
        parser = super()._prepare_subcommand_parser(klass, subcommand, **kwargs)
        retitle_groups(parser, klass, subcommand)  # Lightning's docstrings' first lines, cut mid-sentence
        if subcommand in ("test", "validate"):
            # the per-N table (``_print_tables``) replaces Lightning's metric dump; --verbose true
            # brings the dump back
            parser.set_defaults(verbose=False)
        return parser

    def _print_tables(self, subcommand: str) -> None:
        """After ``test`` / ``validate`` (rank 0): the accuracy table per N x answer kind with 95%
        Wilson intervals, as ``demo`` prints it (MQAR runs: accuracy per query-gap band), the
        calibration table of a test, then ``wrote <path>`` for every report file."""
        if not self.trainer.is_global_zero:
            return
        from swar_bench.callbacks import (
            AnswerTypeAccuracy,
            Calibration,
            MQARAccuracy,
            calibration_table,
        )

        stage = "Test" if subcommand == "test" else "Validation"
        for callback in self.trainer.callbacks:
            if isinstance(callback, AnswerTypeAccuracy) and (callback.test_report or callback.val_report):
                print(f"\n{stage} accuracy per N x answer kind:\n")
                print(callback.table())
            elif isinstance(callback, MQARAccuracy) and (callback.test_report or callback.val_report) is not None:
                print(f"\n{stage} MQAR accuracy per query-gap band:\n")
                print(callback.table())
            elif isinstance(callback, Calibration) and subcommand == "test" and callback.test_report is not None:
                print("\nCalibration:\n")
                print(calibration_table(callback.test_report))
        for callback in self.trainer.callbacks:
            if isinstance(callback, (AnswerTypeAccuracy, Calibration, MQARAccuracy)):
                for path in callback.report_paths:
                    print(f"wrote {path}")

    def _run_subcommand(self, subcommand: str) -> None:
        if self._seed is not None:
            from lightning.fabric.utilities.rank_zero import _get_rank, rank_prefixed_message

            logging.getLogger("lightning.fabric.utilities.seed").info(rank_prefixed_message(f"Seed set to {self._seed}", _get_rank()))
        self.trainer.callbacks.append(Announce(subcommand))
        try:
            with discarding_empty_run(self.trainer):
                super()._run_subcommand(subcommand)
            if subcommand in ("test", "validate"):
                self._print_tables(subcommand)
        except RuntimeError as err:
            # a checkpoint Lightning resolved itself ("last", "best"): strict load_state_dict failed
            if not str(err).startswith("Error(s) in loading state_dict"):
                raise
            path = self.trainer.ckpt_path
            checkpoint, account = None, None
            if path and os.path.isfile(path):
                from swar_bench.runtime.checkpoint_io import load_checkpoint

                checkpoint = load_checkpoint(path, mmap=True)
                found = {k: tuple(v.shape) for k, v in checkpoint.get("state_dict", {}).items() if isinstance(v, torch.Tensor)}
                account = state_dict_mismatch({k: tuple(v.shape) for k, v in self.model.state_dict().items()}, found)
            raise self._mismatch_error(account or "a strict load_state_dict refused them", checkpoint, path) from None

    def add_arguments_to_parser(self, parser) -> None:
        from swar_bench.callbacks import AnswerTypeAccuracy, Calibration, MQARAccuracy

        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        # A resumed fit replaces its run's last.ckpt (no last-v1.ckpt beside it).
        # No dirpath: checkpoints go to <run folder>/checkpoints (swar_bench.harness.runs).
        parser.set_defaults({"checkpoint.save_last": True, "checkpoint.enable_version_counter": False})
        parser.add_lightning_class_args(AnswerTypeAccuracy, "accuracy")
        parser.add_lightning_class_args(Calibration, "calibration")
        parser.add_lightning_class_args(MQARAccuracy, "mqar_accuracy")  # measures only data.task=mqar
        parser.add_lightning_class_args(PredictionWriter, "predictions")
        parser.add_lightning_class_args(SlurmRequeue, "slurm_requeue")  # inactive outside a SLURM job
        parser.add_argument(
            "--collective_timeout", type=float, default=COLLECTIVE_TIMEOUT_S,
            help="seconds a collective of a distributed run (DDP, FSDP) waits for the other ranks before the run "
                 f"ends with one line, exit 1 (default {COLLECTIVE_TIMEOUT_S:g}; gloo's and NCCL's own is 30 min)",
        )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    0 on success; 2 for a bad command line / config (one line on stderr); 1 when training
    stopped on a non-finite loss, a data file is corrupt (``CorruptDataError``), the disk is
    full (ENOSPC, EDQUOT: one line naming the run folder) or another fit holds the run folder
    (``FolderLockedError``, one line naming it); 130 when stopped by Ctrl-C and 143 by
    SIGTERM (one line, from rank 0).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    given = list(argv)  # as typed, before mechanism names are resolved: errors name what the user wrote
    previous_sigint = flag_sigint()
    try:
        check_no_dashes_value(argv)
        check_mechanism_class(argv)  # torch.nn.GRU: no ContextMechanism, whatever its arguments
        check_nested_options(argv)  # --data.mqar.num_kv_pair: the data module would blame a --config file
        argv = resolve_mechanism_names(argv)
        _check_config_files(argv)
        with quiet_output():
            run_cli(argv)
        interrupts.complete()  # a stop recorded but swallowed is reported; a later one is ignored
    except BaseException as err:
        status = exit_status(err, given, argv)
        if status is None:
            raise
        return status
    finally:
        interrupts.restore(previous_sigint)
    return 0


def run_cli(argv: list[str]) -> None:
    """Build and run ``SwarBenchCLI`` on (resolved) ``argv``; errors propagate to ``main``."""
    SwarBenchCLI(
        TBPTTModule,
        PasskeySwarDataModule,
        args=argv,
        trainer_defaults=trainer_defaults(argv),
        save_config_kwargs=save_config_kwargs(argv),
        parser_kwargs={"exit_on_error": False},
    )


if __name__ == "__main__":
    sys.exit(main())
