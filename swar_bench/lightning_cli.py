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
"""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import math
import os
import signal
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import (
    Callback,
    ModelCheckpoint,
    ModelSummary,
)
from lightning.pytorch.cli import LightningCLI

from swar_bench.callbacks.prediction_writer import PredictionWriter
from swar_bench.callbacks.slurm_requeue import SlurmRequeue
from swar_bench.config_errors import (  # noqa: F401 - FINITE_FLOAT_EXPECTED, mechanism_names: their old import path
    FINITE_FLOAT_EXPECTED,
    mechanism_names,
    parse_error_line,
)
from swar_bench.config_errors import one_line as _one_line
from swar_bench.config_errors import option_source as _option_source
from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.module import TBPTTModule, mechanism_class_path
from swar_bench.runtime.slurm import resume_hint
from swar_bench.utils import interrupts
from swar_bench.utils.argparsing import check_no_dashes_value, check_path_given
from swar_bench.utils.files import PROBE_PREFIX, name_limits, nearest_existing, probe_write
from swar_bench.utils.locks import FolderLockedError
from swar_bench.utils.quiet import quiet_output
from swar_bench.utils.text import yaml_problem

TRAINER_DEFAULTS = {
    "default_root_dir": "runs",
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"save_dir": "runs", "name": "swar_bench"},
    },
}


def resolve_mechanism_names(argv: list[str]) -> list[str]:
    """``--model.mechanism=GRU`` -> ``--model.mechanism=swar_bench.mechanisms.GRU`` (the one
    resolver of every command, ``swar_bench.mechanisms.registry``): zoo names first (``GRU`` is
    never ``torch.nn.GRU``), dotted class paths imported; ValueError (one line) otherwise."""
    from swar_bench.mechanisms.registry import replaced_init_args, rewrite_mechanism_args

    resolved = rewrite_mechanism_args(argv, "--model.mechanism")
    for line in replaced_init_args(argv, "--model.mechanism"):
        print(f"swar-bench: warning: {line}", file=sys.stderr)
    return resolved


ARGS_WARNING = r"LightningCLI's args parameter is intended to run from within Python"
"""Start of Lightning's warning when ``args`` is passed while ``sys.argv`` also holds arguments:
swar-bench passes ``sys.argv[1:]`` (rewritten) as ``args`` on purpose."""

COLLECTIVE_TIMEOUT_S = 600.0
"""Default ``--collective_timeout``: a rank that stopped (SIGSTOP, a hung node) ends a
distributed run after 10 minutes, not after the 30 of torch.distributed's default process-group
timeout; a step or a checkpoint save slower than that needs a larger value."""

CKPT_PATH_KEYWORDS = ("last", "best", "hpc", "registry")
"""``--ckpt_path`` values Lightning resolves itself (not files)."""


def checkpoint_mechanism(checkpoint: dict[str, Any]) -> str | None:
    """The mechanism class a checkpoint was trained with, when it records one: ``mechanism_class``
    (written by ``TBPTTModule.on_save_checkpoint``) or a ``mechanism`` entry of its
    ``hyper_parameters``; None otherwise."""
    name = checkpoint.get("mechanism_class")
    if isinstance(name, str):
        return name
    entry = (checkpoint.get("hyper_parameters") or {}).get("mechanism")
    if isinstance(entry, dict) and isinstance(entry.get("class_path"), str):
        return entry["class_path"]
    return entry if isinstance(entry, str) else None


def state_dict_mismatch(expected: dict[str, tuple[int, ...]], found: dict[str, tuple[int, ...]]) -> str | None:
    """Compare tensor shapes by state-dict key: None when they match (what a strict
    ``load_state_dict`` accepts), else a short account such as ``"3 missing, 2 unexpected and 1
    differently shaped tensor(s), e.g. missing 'mechanism.x'"``."""
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    shaped = [k for k in expected if k in found and tuple(expected[k]) != tuple(found[k])]
    if not (missing or unexpected or shaped):
        return None
    if missing:
        example = f"missing {missing[0]!r}"
    elif unexpected:
        example = f"unexpected {unexpected[0]!r}"
    else:
        k = shaped[0]
        example = f"{k!r} is {list(found[k])} in the checkpoint, {list(expected[k])} here"
    return (
        f"{len(missing)} missing, {len(unexpected)} unexpected and {len(shaped)} differently shaped "
        f"tensor(s), e.g. {example}"
    )


def nested_class_paths(node: Any) -> list[str]:
    """The class paths of a mechanism config and of the mechanisms it wraps (an init arg named
    ``mechanism`` holding a ``class_path``), outermost first; ``[]`` without a class path."""
    paths: list[str] = []
    while node is not None and len(paths) < 8:
        is_dict = isinstance(node, dict)
        class_path = node.get("class_path") if is_dict else getattr(node, "class_path", None)
        if not class_path:
            break
        paths.append(str(class_path))
        args = node.get("init_args") if is_dict else getattr(node, "init_args", None)
        node = args.get("mechanism") if args is not None and hasattr(args, "get") else None
    return paths


def check_output_folder(path: str | os.PathLike, flag: str) -> None:
    """Raise ValueError (one line naming ``flag`` and ``path``) unless the folder ``path`` exists
    and is writable or can be created; leaves nothing behind (it rehearses an atomic write,
    ``swar_bench.utils.files.probe_write``, in ``path`` or in its nearest existing parent). Remote paths (``scheme://``) are not checked."""
    text = os.fspath(path)
    check_path_given(flag, text, "a folder path")  # "" would be the current folder
    if "://" in text:
        return
    target = Path(os.path.abspath(text))
    probe = nearest_existing(target)
    if not probe.is_dir():
        raise ValueError(f"{flag}={text}: the folder cannot be created ({probe} is not a folder)")
    name_max = name_limits(probe)[0]
    too_long = [part for part in target.relative_to(probe).parts if len(os.fsencode(part)) > name_max]
    if too_long:
        raise ValueError(
            f"{flag}={text[:80]}... ({len(text)} characters): the folder cannot be created (a name of "
            f"{len(os.fsencode(too_long[0]))} bytes; the file system allows {name_max})"
        )
    try:
        probe_write(probe, prefix=PROBE_PREFIX)
    except OSError as err:
        verb = "written" if probe == target else "created"
        raise ValueError(f"{flag}={text}: the folder cannot be {verb} ({err.strerror or err})") from None


def check_accelerator(accelerator: Any, argv: list[str]) -> None:
    """Raise ValueError (one line naming the option, its value and where it was set: the command
    line or a ``--config`` file of ``argv``) when ``--trainer.accelerator`` asks for a GPU this
    machine lacks: ``gpu`` without CUDA or MPS, ``cuda`` without CUDA (``torch.cuda.is_available``).
    Lightning would otherwise stop with only "No supported gpu backend found!"."""
    if not isinstance(accelerator, str):
        return
    value = accelerator.strip().lower()
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if value not in ("gpu", "cuda") or torch.cuda.is_available() or (value == "gpu" and has_mps):
        return
    source = _option_source(argv, "trainer.accelerator", accelerator)
    where = f"{source}: trainer.accelerator={accelerator}" if source else f"--trainer.accelerator={accelerator}"
    raise ValueError(f"{where}: no CUDA device is available on this machine; expected cpu or auto")


def _output_folders(cfg: Any, subcommand: str | None) -> list[tuple[str, str]]:
    """``(flag, folder)`` of every local output folder a run of ``subcommand`` writes into."""

    def get(key: str) -> Any:
        try:
            return cfg.get(key) if hasattr(cfg, "get") else None
        except (KeyError, AttributeError):
            return None

    folders = [("--trainer.default_root_dir", get("trainer.default_root_dir"))]
    loggers = get("trainer.logger")
    for i, logger in enumerate(loggers if isinstance(loggers, list) else [loggers]):
        init_args = getattr(logger, "init_args", None) if logger is not None else None
        if init_args is None and isinstance(logger, dict):
            init_args = logger.get("init_args")
        save_dir = init_args.get("save_dir") if init_args is not None and hasattr(init_args, "get") else None
        flag = "--trainer.logger.init_args.save_dir" if not isinstance(loggers, list) else f"--trainer.logger[{i}].init_args.save_dir"
        folders.append((flag, save_dir))
    if subcommand in (None, "fit"):
        folders.append(("--checkpoint.dirpath", get("checkpoint.dirpath")))
    if subcommand in (None, "predict"):
        folders.append(("--predictions.output_dir", get("predictions.output_dir")))
    folders += [("--accuracy.out_dir", get("accuracy.out_dir")), ("--calibration.out_dir", get("calibration.out_dir"))]
    return [(flag, str(folder)) for flag, folder in folders if isinstance(folder, (str, os.PathLike))]


def progress_bar_default() -> bool:
    """Lightning's ``enable_progress_bar`` for our commands (``fit``, ``test``, ``demo``) unless a
    config or ``--trainer.enable_progress_bar`` sets it: on when stdout is a terminal, off when it
    is piped or redirected, where every refresh of the bar would be one more line of the log."""
    return sys.stdout.isatty()


def trainer_defaults(argv: list[str]) -> dict[str, Any]:
    """``TRAINER_DEFAULTS`` with the logger named after the first ``--config`` file (its stem), so
    that a config that sets no logger still gets its own run folder (``swar_bench.harness.runs``), and
    the progress bar only on a terminal (:func:`progress_bar_default`)."""
    configs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"]
    configs += [a.split("=", 1)[1] for a in argv if a.startswith("--config=")]
    first = next((c for c in configs if os.path.isfile(c)), None)
    defaults = {**TRAINER_DEFAULTS, "enable_progress_bar": progress_bar_default()}
    if first is None:
        return defaults
    logger = TRAINER_DEFAULTS["logger"]
    return {**defaults, "logger": {**logger, "init_args": {**logger["init_args"], "name": Path(first).stem}}}


def save_config_kwargs(argv: list[str]) -> dict[str, Any]:
    """LightningCLI's ``save_config_kwargs``: ``config.yaml`` for ``fit``, ``<command>_config.yaml``
    for the others, so a test written into a fit's run folder keeps the fit's config."""
    command = argv[0] if argv and argv[0] in ("validate", "test", "predict") else None
    return {"overwrite": True, **({"config_filename": f"{command}_config.yaml"} if command else {})}


def describe_mechanism(mechanism: Any) -> str:
    """``"GRU (swar_bench.mechanisms.recurrent.GRU): 120,896 params, state 512 bytes/sequence"``
    (state after 4,096 tokens for a growing state)."""
    from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at

    try:
        state = f"state {state_bytes_at(mechanism, 1, 4096):,} bytes/sequence" + ("" if is_fixed_size(mechanism) else " at T=4,096 (grows)")
    except Exception:  # noqa: BLE001 - a layer without state_bytes is still described
        state = "state bytes unknown"
    return f"{type(mechanism).__name__} ({mechanism_class_path(mechanism)}): {int(getattr(mechanism, 'n_params', 0)):,} params, {state}"


def _rank_zero() -> bool:
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    # the Trainer's global rank once it is set up, else RANK, LOCAL_RANK or SLURM_PROCID (srun)
    return int(getattr(rank_zero_only, "rank", 0) or 0) == 0


def fresh_start_notice(folder: str | os.PathLike) -> None:
    """One line on stderr (rank 0) when ``fit --ckpt_path last`` finds no checkpoint: the run
    starts from scratch, as Lightning's own ``ckpt_path="last"`` does ("not an error so it can be
    set and forget before the first fit run", ``_CheckpointConnector._parse_ckpt_path``): the
    first job of a SLURM array or a requeued sweep uses the same command as the ones that
    resume."""
    if _rank_zero():
        print(f"swar-bench fit: no checkpoint to resume in {folder}; starting from scratch", file=sys.stderr, flush=True)


def readable_resume(path: str, subcommand: str | None) -> str:
    """The checkpoint ``--ckpt_path last`` resumes: the checkpoint of ``path``'s folder with the
    most recorded progress (``swar_bench.runtime.slurm.newest_checkpoint``: global step, then batches;
    read weights only), ``path`` itself on a tie. Two faults leave ``path`` (a ``last.ckpt``) behind
    another checkpoint of its folder, and each is said in one line on stderr (rank 0) naming both:
    ``path`` cannot be read (cut short by a kill or a full disk), or a step checkpoint records more
    progress than ``path`` (a run killed between its two saves: Lightning's ``ModelCheckpoint``
    writes ``epoch=E-step=S.ckpt``, then ``last.ckpt``). Resuming from the newer one loses no
    steps, and its ``ModelCheckpoint`` state names it, so the resumed run's next save replaces it:
    no stray file is left.

    Raises:
        ValueError: ``path`` cannot be read and no checkpoint beside it can (one line)."""
    from swar_bench.runtime.slurm import checkpoint_progress, newest_checkpoint, resume_candidates

    folder = os.path.dirname(path) or "."
    others = [p for p in resume_candidates(folder) if os.path.abspath(p) != os.path.abspath(path)]
    newest = newest_checkpoint(others, warn=lambda line: None)
    try:
        progress = checkpoint_progress(path)
    except Exception as err:  # noqa: BLE001 - truncated, not a checkpoint, refused: fall back below
        reason = f"{type(err).__name__}: {_one_line(str(err))[:120]}"
        if newest is None:
            raise ValueError(
                f"--ckpt_path=last: {path} cannot be read ({reason}) and no other checkpoint beside it can; expected a "
                f"checkpoint file to resume from (--ckpt_path FILE), or a new run into another folder"
            ) from None
        if _rank_zero():
            print(f"swar-bench {subcommand}: {path} cannot be read ({reason}); resuming from {newest[0]} (global step "
                  f"{newest[1]}), the newest checkpoint beside it that can", file=sys.stderr, flush=True)
        return newest[0]
    if newest is None or checkpoint_progress(newest[0]) <= progress:
        return path
    if _rank_zero():
        print(f"swar-bench {subcommand}: {newest[0]} (global step {newest[1]}) is newer than {path} (global step "
              f"{progress[0]}), left by a run stopped between its two saves; resuming from {newest[0]}",
              file=sys.stderr, flush=True)
    return newest[0]


def completed_resume(chosen: str, found: str, cfg: Any, subcommand: str | None) -> str:
    """The file a ``fit --ckpt_path last`` resumes from once its folder is locked
    (:func:`holding_fit_folder`): when :func:`readable_resume` chose a step checkpoint over
    ``found`` (the folder's ``last.ckpt``, unreadable or behind it; or no ``last.ckpt`` at all),
    the save the kill interrupted is completed: ``chosen`` is copied over ``last.ckpt`` (beside it,
    then renamed) and the run resumes from ``last.ckpt``. Lightning never removes the checkpoint a
    run resumed from (``ModelCheckpoint._should_remove_checkpoint``), so resuming from the step
    checkpoint itself would leave it behind for good; resumed from ``last.ckpt``, the step
    checkpoint is managed as any other (replaced by the next save, or kept while in the top k).
    ``chosen`` unchanged for other commands (they write no checkpoint), global ranks other than 0,
    a SLURM ``hpc_ckpt_*`` (Lightning's own resume file), or a run without ``save_last``."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    from swar_bench.utils.files import atomic_path

    name = os.path.basename(chosen)
    if subcommand != "fit" or name.startswith((ModelCheckpoint.CHECKPOINT_NAME_LAST, "hpc_ckpt_")) or not _rank_zero():
        return chosen
    last = found if os.path.basename(found).startswith(ModelCheckpoint.CHECKPOINT_NAME_LAST) else None
    if last is None and (cfg.get("checkpoint") or {}).get("save_last"):
        last = os.path.join(os.path.dirname(chosen), ModelCheckpoint.CHECKPOINT_NAME_LAST + ModelCheckpoint.FILE_EXTENSION)
    if last is None:
        return chosen
    import shutil

    with atomic_path(last) as tmp:
        shutil.copyfile(chosen, tmp)
    return last


def fresh_checkpoint_folder(cfg: Any) -> tuple[str, str] | None:
    """``(option, folder)``: the checkpoint folder a ``fit`` of ``cfg`` writes into when it is
    fixed before the run starts, with the option that fixed it: ``--checkpoint.dirpath``, a
    forced logger version (``<save_dir>/<name>/<version>/checkpoints``, after
    ``_configure_run_folder``) or ``--trainer.logger=false`` (``<default_root_dir>/checkpoints``).
    None when the logger picks a new ``version_N`` (a new folder) or the folder is remote."""
    from swar_bench.harness import runs

    dirpath = (cfg.get("checkpoint") or {}).get("dirpath")
    if dirpath:
        folder, option = str(dirpath), f"--checkpoint.dirpath={dirpath}"
    else:
        logger = cfg.get("trainer.logger")
        init_args = getattr(logger, "init_args", None)
        if logger is None or logger is False:
            root = cfg.get("trainer.default_root_dir") or "."
            folder, option = os.path.join(str(root), "checkpoints"), "--trainer.logger=false"
        elif init_args is not None and init_args.get("version") is not None and str(
                getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger")):
            version = init_args.get("version")
            folder = os.path.join(str(init_args.get("save_dir") or "."), str(init_args.get("name") or ""),
                                  runs.version_folder(version), "checkpoints")
            option = f"--trainer.logger.init_args.version={version}"
        else:
            return None
    return None if "://" in folder else (option, folder)


def check_fresh_start(cfg: Any) -> None:
    """A ``fit`` without a checkpoint to resume never writes over the checkpoints of another run:
    ValueError (one line naming the folder, its checkpoints and ``--ckpt_path last``) when the
    checkpoint folder it would write into (:func:`fresh_checkpoint_folder`) already holds
    ``*.ckpt`` files. A resumed fit (``--ckpt_path``) continues the run whose checkpoints they are."""
    from swar_bench.harness import runs

    where = fresh_checkpoint_folder(cfg)
    if where is None:
        return
    option, folder = where
    found = runs.existing_checkpoints(folder)
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise ValueError(
            f"{option}: {folder} already holds the checkpoints of a run ({shown}); a new run never writes over them: "
            "expected --ckpt_path last to resume that run, or another folder for a new one"
        )


def fit_lock_folders(cfg: Any) -> list[str]:
    """The local folders a ``fit`` of ``cfg`` writes into that another fit may write into too,
    each locked for the whole run (:func:`holding_fit_folder`): the run folder
    ``<save_dir>/<name>/<version>`` once its version is fixed (a resumed run, a forced version;
    :meth:`SwarBenchCLI._configure_run_folder`), ``--checkpoint.dirpath``, and
    ``<default_root_dir>/checkpoints`` without a logger. A new run's ``version_N`` (picked by the
    logger, a new folder) is not among them; nor are remote folders."""
    from swar_bench.harness import runs

    folders = []
    where = fresh_checkpoint_folder(cfg)
    logger = cfg.get("trainer.logger")
    init_args = getattr(logger, "init_args", None)
    if where is not None and where[0].startswith("--trainer.logger.init_args.version"):
        folders.append(os.path.dirname(where[1]))  # the run folder: its logs, reports and checkpoints
    elif where is not None:
        folders.append(where[1])
    if (init_args is not None and init_args.get("version") is not None and where is not None
            and where[0].startswith("--checkpoint.dirpath")
            and str(getattr(logger, "class_path", "")).endswith(("TensorBoardLogger", "CSVLogger"))):
        folders.append(os.path.join(str(init_args.get("save_dir") or "."), str(init_args.get("name") or ""),
                                    runs.version_folder(init_args.get("version"))))
    return [f for f in dict.fromkeys(os.path.normpath(f) for f in folders) if "://" not in f]


@contextlib.contextmanager
def holding_fit_folder(folder: str, checkpoint_folder: str | None) -> Iterator[None]:
    """Hold ``folder``'s lock (``swar_bench.utils.locks.folder_lock``, ``DIR/.swar-bench.lock``) for the
    block: a second ``fit`` into it (two ``--ckpt_path last`` resuming one run) is refused in one
    line naming the holder (``FolderLockedError``, exit 1), before it reads or writes anything. A
    killed holder's lock goes with it (the kernel releases a ``flock``). Holding it, the temporary
    files ``.tmp-*.ckpt`` a killed save left in ``checkpoint_folder`` are removed (one line each):
    no other writer can own them. A folder the lock created and the run left empty is removed."""
    from swar_bench.utils.files import TEMP_PREFIX
    from swar_bench.utils.locks import LOCK_NAME, folder_lock

    created = runs_first_missing(folder)
    with folder_lock(folder, f"swar-bench fit into {folder}"):
        if checkpoint_folder is not None and os.path.isdir(checkpoint_folder):
            for path in sorted(glob.glob(os.path.join(glob.escape(checkpoint_folder), TEMP_PREFIX + "*.ckpt"))):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                    print(f"swar-bench fit: removed {path}, left by a run stopped while saving", file=sys.stderr, flush=True)
        yield
    if created is not None and os.path.isdir(folder) and os.listdir(folder) == [LOCK_NAME]:
        with contextlib.suppress(OSError):  # the run wrote nothing: leave no folder behind it
            os.unlink(os.path.join(folder, LOCK_NAME))
            absolute = Path(os.path.abspath(folder))
            for path in [absolute, *absolute.parents]:  # up to the outermost folder it created
                path.rmdir()
                if path == Path(created):
                    break


def runs_first_missing(folder: str) -> str | None:
    """The outermost missing folder of ``folder``'s path (``swar_bench.harness.runs.first_missing``), None when it exists."""
    from swar_bench.harness import runs

    missing = runs.first_missing(folder)
    return None if missing is None else str(missing)


def check_trainable(model: TBPTTModule, subcommand: str | None, ckpt_path: Any) -> None:
    """Before a run is built: ``fit`` of a mechanism without trainable parameters (the Oracle)
    raises ValueError (one line: nothing to train); ``validate`` / ``test`` / ``predict`` of a
    mechanism with trainable parameters and no ``--ckpt_path`` warns on stderr (rank 0) that the
    randomly initialised weights are evaluated, an untrained baseline and not a fit run."""
    mechanism = model.mechanism
    if subcommand == "fit" and not model.has_trainable_params:
        raise ValueError(
            f"--model.mechanism={mechanism_class_path(mechanism)} has no trainable parameters: nothing to train; "
            "expected a learned mechanism, or `swar-bench test` (e.g. --config configs/oracle.yaml) to evaluate it"
        )
    if subcommand in ("validate", "test", "predict") and ckpt_path in (None, "") and model.has_trainable_params and _rank_zero():
        print(
            f"swar-bench {subcommand}: warning: no --ckpt_path, so {type(mechanism).__name__}'s randomly initialised "
            "(untrained) weights are evaluated; pass --ckpt_path last or <run>/checkpoints/last.ckpt to "
            f"{subcommand} a fit run",
            file=sys.stderr,
            flush=True,
        )


@contextlib.contextmanager
def discarding_empty_run(trainer: Any) -> Iterator[None]:
    """Run the block (a ``trainer.fit`` / ``test``); when it ends with an exception (Ctrl-C,
    SIGTERM, Lightning's ``sys.exit`` after them, an error) remove the run folder if this run
    created it and it holds nothing the run produced (``swar_bench.harness.runs.discard_empty_run``): no
    checkpoint saved by any ``ModelCheckpoint`` of the trainer, no logged metric, no report. A
    folder that existed (``test --ckpt_path last``, a resumed fit) is put back as it was when the
    run produced nothing in it or in a ``--checkpoint.dirpath`` elsewhere
    (``swar_bench.harness.runs.discard_stopped_additions``). On global rank 0 only, and only for a
    logger's local folder; the exception is raised again."""
    from swar_bench.harness import runs

    folder = None
    if getattr(trainer, "logger", None) is not None and _rank_zero():
        folder = run_folder(trainer)
        folder = None if "://" in folder else folder
    created = runs.first_missing(folder) if folder is not None else None
    before = runs.snapshot(folder) if folder is not None and created is None else None
    # checkpoints written outside the run folder (--checkpoint.dirpath) count as produced too
    elsewhere = {
        path: runs.snapshot(path)
        for path in (str(getattr(cb, "dirpath", None) or "") for cb in getattr(trainer, "checkpoint_callbacks", None) or [])
        if path and "://" not in path and (folder is None or not Path(path).absolute().is_relative_to(Path(folder).absolute()))
    }
    try:
        yield
    except BaseException:
        if created is not None:
            saved = any(
                getattr(callback, "last_model_path", "") or getattr(callback, "best_model_path", "")
                for callback in getattr(trainer, "checkpoint_callbacks", None) or []
            )
            if not saved:
                runs.discard_empty_run(folder, created)
        elif before is not None and not any(runs.holds_results(path, since=snap) for path, snap in elsewhere.items()):
            runs.discard_stopped_additions(folder, before)
        raise


def run_folder(trainer: Any) -> str:
    """The folder a run writes into: its logger's ``log_dir`` (the Trainer's ``default_root_dir``
    without a logger). Read from the logger, not ``trainer.log_dir``, which is a collective."""
    logger = trainer.logger
    log_dir = getattr(logger, "log_dir", None) if logger is not None else None
    return str(log_dir if log_dir is not None else trainer.default_root_dir)


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

        kwargs.setdefault("parser_mode", config_parser_mode(("model", "mechanism")))
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
        subcommand = self.config.get("subcommand")
        cfg = self.config[subcommand] if subcommand else self.config
        check_accelerator(cfg.get("trainer.accelerator"), list(args or []))
        self._configure_run_folder(cfg, subcommand)
        ckpt_path = cfg.get("ckpt_path") if subcommand else None
        if ckpt_path is not None and str(ckpt_path) not in CKPT_PATH_KEYWORDS:
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
        interval = (cfg.get("trainer") or {}).get("val_check_interval")
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval <= 0:
            raise ValueError(
                f"--trainer.val_check_interval={interval} is invalid; expected training batches between validations "
                "(an integer >= 1) or a fraction of an epoch in (0, 1]"
            )
        for flag, folder in _output_folders(cfg, subcommand):
            check_output_folder(folder, flag)
        if subcommand == "fit" and cfg.get("ckpt_path") in (None, ""):
            check_fresh_start(cfg)
        for folder in fit_lock_folders(cfg) if subcommand == "fit" else ():
            self._lock_for_fit(subcommand, folder, self._checkpoint_folder(cfg))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._held = contextlib.ExitStack()  # the folder locks of a fit (fit_lock_folders), for the whole run
        self._held_folders: set[str] = set()
        with self._held:
            super().__init__(*args, **kwargs)

    def _lock_for_fit(self, subcommand: str | None, folder: str | os.PathLike, checkpoint_folder: str | os.PathLike | None) -> None:
        """Hold ``folder`` for the rest of a ``fit`` (:func:`holding_fit_folder`), once; nothing for
        other subcommands (a ``test`` may read a run while it trains), a remote folder, or a rank
        other than global rank 0 (the launched ranks of a distributed run re-parse the command)."""
        text = os.fspath(folder)
        key = os.path.abspath(text)
        if self._held is None or subcommand != "fit" or "://" in text or key in self._held_folders or not _rank_zero():
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
        import yaml

        from swar_bench.config_errors import unknown_config_keys, unknown_keys_line

        command = args[0] if args else None
        subparser = getattr(self, "_subcommand_parsers", {}).get(command)
        if subparser is None:
            return None
        options = {a.dest for a in subparser._actions if isinstance(getattr(a, "dest", None), str)}
        groups = {a.dest for a in subparser._actions if type(a).__name__ == "_ActionConfigLoad"}  # --trainer FILE
        lines = []
        for i, arg in enumerate(args):
            path = args[i + 1] if arg == "--config" and i + 1 < len(args) else arg.split("=", 1)[1] if arg.startswith("--config=") else None
            if path is None or not os.path.isfile(path):
                continue
            try:
                with open(path, encoding="utf-8") as handle:
                    unknown = unknown_config_keys(yaml.safe_load(handle), options, groups=groups)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if unknown:
                lines.append(unknown_keys_line(f"--config={os.path.abspath(path)}", unknown, command))
        return "; ".join(lines) if lines else None

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
            if _rank_zero():  # a forced version resumes its newest readable checkpoint: say what it skipped
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
        from swar_bench.runtime.checkpoint_io import (
            CheckpointRefusedError,
            is_remote,
            load_checkpoint,
        )

        check_path_given("--ckpt_path", path, f"a checkpoint file or one of {', '.join(CKPT_PATH_KEYWORDS)}")
        remote = is_remote(path)
        if not remote and not os.path.exists(path):
            raise ValueError(f"--ckpt_path={path}: no such file")
        self._checkpoint_path = path
        if not remote and os.path.isdir(path):  # a distributed checkpoint folder: Lightning's strategy reads it
            if not os.path.isfile(os.path.join(path, ".metadata")):
                raise ValueError(
                    f"--ckpt_path={path}: a folder, not a checkpoint; expected a .ckpt file written by swar-bench fit "
                    "(or a distributed checkpoint folder holding .metadata)"
                )
            return
        try:
            checkpoint = load_checkpoint(path, mmap=not remote)
        except CheckpointRefusedError as err:  # a pickled payload: never run, named in one line
            raise ValueError(
                f"--ckpt_path={path}: not a checkpoint file torch can read with weights_only=True, refused "
                f"({err.reason}); expected a .ckpt written by swar-bench fit"
            ) from None
        except FileNotFoundError:
            if remote:  # fsspec says "not found" for an unknown host or a refused connection too
                raise ValueError(
                    f"--ckpt_path={path}: not found, or the server cannot be reached; expected a URL that serves "
                    "a .ckpt written by swar-bench fit"
                ) from None
            raise ValueError(f"--ckpt_path={path}: no such file") from None
        except OSError as err:
            raise ValueError(f"--ckpt_path={path}: cannot be read ({err.strerror or type(err).__name__})") from None
        except Exception as err:  # noqa: BLE001 - any failure means "not a checkpoint we can read"
            raise ValueError(
                f"--ckpt_path={path}: not a checkpoint file torch can read ({type(err).__name__}); expected a .ckpt "
                "written by swar-bench fit"
            ) from None
        if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("state_dict"), dict):
            raise ValueError(f"--ckpt_path={path}: not a Lightning checkpoint (no state_dict)")  # noqa: TRY004 - bad user input
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
        """Before the mechanism is built: its parameters fit in memory (``swar_bench.runtime.memory``,
        counted on the meta device; ``fit`` holds weights, gradients and Adam's moments), else
        ValueError naming ``--model.mechanism.init_args``."""
        from swar_bench.mechanisms.registry import resolve_class
        from swar_bench.runtime.memory import check_fits

        cfg = self.config[self.subcommand] if self.subcommand else self.config
        mechanism = cfg.get("model.mechanism")
        class_path = getattr(mechanism, "class_path", None)
        init_args = getattr(mechanism, "init_args", None)
        if not class_path:
            return
        try:
            cls = resolve_class(str(class_path), "--model.mechanism")
        except ValueError:
            return  # named by the parser
        args = init_args.as_dict() if hasattr(init_args, "as_dict") else dict(init_args or {})
        accelerator = str(cfg.get("trainer.accelerator") or "cpu").lower()
        cuda = accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available()
        shown = ", ".join(f"{k}={v}" for k, v in args.items())
        check_fits(cls, args, f"--model.mechanism={class_path} ({shown})", copies=4 if self.subcommand == "fit" else 1,
                   cuda=cuda)

    def _naming_the_option(self, message: str) -> str:
        """``message`` led by the option of the argument it starts with (the mechanism's init args
        first, then the model's and the data module's), or unchanged when it starts with none."""
        import re

        first = re.match(r"(\w+)(=| )", message)
        if first is None:
            return message
        cfg = self.config[self.subcommand] if self.subcommand else self.config
        for group in ("model.mechanism.init_args", "model", "data"):
            values = cfg.get(group)
            if values is None or not hasattr(values, "keys") or first.group(1) not in values:
                continue
            option, value = f"{group}.{first.group(1)}", values.get(first.group(1))
            source = _option_source(self._argv, option, str(value))
            lead = f"{source}: {option}" if source is not None else f"--{option}"
            if first.group(2) == "=":  # "lr=-1.0 is invalid; ...": the option in place of the name
                return lead + message[len(first.group(1)):] if source is None else f"{lead}: {message}"
            return f"{lead}={value}: {message}" if source is None else f"{lead}: {message}"
        return message

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
        silence_run_notices(resuming=cfg.get("ckpt_path") not in (None, ""), checkpoint_dir=self._ckpt_checkpoint_dir())
        global _RUN_TRAINER
        trainer = super().instantiate_trainer(**kwargs)
        from swar_bench.runtime.checkpoint_io import SafeCheckpointIO

        # every checkpoint Lightning reads (--ckpt_path of any spelling, last, hpc) weights only;
        # every one it writes beside its destination, then renamed
        trainer.strategy.checkpoint_io = SafeCheckpointIO()
        timeout = cfg.get("collective_timeout")
        if timeout is not None and hasattr(trainer.strategy, "_timeout"):  # DDP, FSDP, ModelParallel: set up later
            from datetime import timedelta

            trainer.strategy._timeout = timedelta(seconds=float(timeout))
        trainer.callbacks.append(StopCheck())
        trainer.callbacks[:] = [FlopsPerTokenSummary.replacing(cb) if type(cb) is ModelSummary else cb for cb in trainer.callbacks]
        _RUN_TRAINER = trainer
        return trainer

    def _mismatch_error(self, account: str, checkpoint: dict[str, Any] | None, path: str | None) -> ValueError:
        configured = mechanism_class_path(self.model.mechanism)
        found = checkpoint_mechanism(checkpoint) if checkpoint else None
        held = f" (it was trained with {found})" if found else ""
        return ValueError(
            f"--ckpt_path={path}: the checkpoint's weights{held} do not fit the configured mechanism "
            f"{configured}: {account}; expected --model.mechanism and its init_args as in the run that wrote it"
        )

    def _check_checkpoint_fits(self) -> None:
        model = getattr(self, "model", None)
        if self._checkpoint is None or not isinstance(model, TBPTTModule) or not model.strict_loading:
            return
        found = {k: tuple(v.shape) for k, v in self._checkpoint["state_dict"].items() if isinstance(v, torch.Tensor)}
        expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        account = state_dict_mismatch(expected, found)
        if account is not None:
            raise self._mismatch_error(account, self._checkpoint, self._checkpoint_path)

    def _prepare_subcommand_parser(self, klass: type, subcommand: str, **kwargs: Any):
        parser = super()._prepare_subcommand_parser(klass, subcommand, **kwargs)
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


def _check_config_files(argv: list[str]) -> None:
    """Every ``--config FILE`` names a YAML file holding a mapping of options (ValueError otherwise):
    jsonargparse reports an empty file only as "Unexpected config:"."""
    import yaml

    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        else:
            continue
        check_path_given("--config", path, "the path of a YAML file of options such as configs/quickstart.yaml")
        if not os.path.isfile(path):
            continue  # jsonargparse names a missing file itself; an inline YAML string is allowed
        try:
            with open(path, encoding="utf-8") as handle:
                content = yaml.safe_load(handle)
        except (OSError, UnicodeDecodeError):
            continue  # jsonargparse reports unreadable files
        except yaml.YAMLError as err:  # jsonargparse's message names neither the file nor the line
            raise ValueError(
                f"--config={path}: not valid YAML ({yaml_problem(err)}); expected a YAML mapping of options "
                "such as configs/quickstart.yaml"
            ) from None
        if content is None:
            raise ValueError(f"--config={path}: the file is empty; expected a YAML mapping of options such as configs/quickstart.yaml")
        if not isinstance(content, dict):
            raise ValueError(  # noqa: TRY004 - bad user input: the CLI reports ValueError as one line
                f"--config={path}: holds a YAML {type(content).__name__}, not a mapping of options; expected e.g. "
                "configs/quickstart.yaml"
            )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    0 on success; 2 for a bad command line / config (one line on stderr); 1 when training
    stopped on a non-finite loss, a data file is corrupt (``CorruptDataError``), the disk is
    full (ENOSPC, EDQUOT: one line naming the run folder) or another fit holds the run folder
    (``FolderLockedError``, one line naming it); 130 when stopped by Ctrl-C and 143 by
    SIGTERM (one line, from rank 0).
    """
    from jsonargparse import ArgumentError
    from lightning.pytorch.utilities.exceptions import MisconfigurationException

    argv = list(sys.argv[1:] if argv is None else argv)
    given = list(argv)  # as typed, before mechanism names are resolved: errors name what the user wrote
    previous_sigint = flag_sigint()
    try:
        check_no_dashes_value(argv)
        argv = resolve_mechanism_names(argv)
        _check_config_files(argv)
        with quiet_output():
            run_cli(argv)
        interrupts.complete()  # a stop recorded but swallowed is reported; a later one is ignored
    except ArgumentError as err:
        print(f"swar-bench: error: {parse_error_line(str(err), given)}", file=sys.stderr)
        return 2
    except FloatingPointError as err:
        print(f"swar-bench: training stopped: {_one_line(str(err))}", file=sys.stderr)
        return 1
    except ValueError as err:
        message = _one_line(str(err))
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
    except FolderLockedError as err:  # another fit writes into the folder: not a wrong argument
        print(f"swar-bench: error: {_one_line(str(err))}", file=sys.stderr)
        return 1
    except RuntimeError as err:  # after ValueError: DataSourceError is both
        if not collective_timed_out(err):
            raise
        stop_other_ranks()
        print(f"swar-bench: FAILED: a collective of the distributed run timed out (another rank stopped, hung or "
              f"died?); raise --collective_timeout if a step is that slow ({_one_line(str(err))[:200]})", file=sys.stderr)
        return 1
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk is not a bad argument: exit 1
            folder = run_folder(_RUN_TRAINER) if _RUN_TRAINER is not None else os.path.dirname(err.filename or ".")
            print(f"swar-bench: FAILED: {err.strerror or os.strerror(err.errno)} writing {err.filename or 'a file'} "
                  f"(run folder {folder}); free space and resume with --ckpt_path last", file=sys.stderr)
            return 1
        if err.filename is None:
            raise
        print(f"swar-bench: error: {err.filename}: {err.strerror or err}", file=sys.stderr)
        return 2
    except MisconfigurationException as err:  # Lightning's own checks of --trainer.* values
        print(f"swar-bench: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before Lightning's own handling (parsing, set-up)
        print("swar-bench: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except interrupts.Terminated as exc:  # SIGTERM before Lightning's own handler exists
        return stop_status(exc, "swar-bench", argv[0] if argv else None)
    except SystemExit as exc:  # --help, --print_config; Lightning's exits after SIGTERM / Ctrl-C
        stopped = stop_status(exc, "swar-bench", argv[0] if argv else None)
        if stopped is not None:
            return stopped
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    finally:
        interrupts.restore(previous_sigint)
    return 0


def collective_timed_out(err: BaseException) -> bool:
    """``err`` is a torch.distributed collective that waited past its timeout (gloo: "Timed out
    waiting ... for recv", NCCL's watchdog: "Watchdog caught collective operation timeout")."""
    import torch.distributed as dist

    text = str(err).lower()
    return (isinstance(err, getattr(dist, "DistError", ())) or dist.is_available() and dist.is_initialized()) and (
        "timed out" in text or "timeout" in text)


def stop_other_ranks() -> None:
    """Kill the ranks this process launched (Lightning's subprocess launcher, rank 0) after a
    collective timed out: a stopped rank would otherwise outlive the run."""
    from lightning.pytorch.strategies.launchers.subprocess_script import _SubprocessScriptLauncher

    launcher = getattr(getattr(_RUN_TRAINER, "strategy", None), "launcher", None)
    if isinstance(launcher, _SubprocessScriptLauncher):
        launcher.kill(signal.SIGKILL)


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


_RUN_TRAINER: pl.Trainer | None = None
"""The Trainer of the run in progress (set when it is built), for the stop line's resume hint."""


class Announce(Callback):
    """One line on stdout (global rank 0) before a run: ``swar-bench <subcommand>: <the built
    model>; run folder <dir>``, printed once the inputs are validated. Lightning calls ``setup``
    after the datamodule's ``prepare_data`` (which opens every stored split the run reads, so a
    bad ``--data.source`` has ended the run by then) and before the logger creates the folder."""

    def __init__(self, subcommand: str) -> None:
        self.subcommand = subcommand
        self.done = False

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.done or not trainer.is_global_zero or not isinstance(pl_module, TBPTTModule):
            return
        self.done = True
        print(
            f"swar-bench {self.subcommand}: {describe_mechanism(pl_module.mechanism)}; "
            f"run folder {run_folder(trainer)}",
            flush=True,
        )


class FlopsPerTokenSummary(ModelSummary):
    """Lightning's model summary (``ModelSummary``, the table it prints when a fit starts) with
    the mechanism's forward FLOPs per token (the ``flops_per_token`` property of the ContextMechanism
    protocol, ``swar_bench/mechanisms/protocol.py``) in place of Lightning's FLOPs column and
    "Total Flops" line: Lightning counts FLOPs only by running ``example_input_array`` through
    ``forward`` (``torch.utils.flop_counter.FlopCounterMode``), which a TBPTT module streaming a
    state has not got, so they read 0. The line is left out for a mechanism without
    ``flops_per_token``. The CLI's Trainer gets it in place of the default ``ModelSummary``
    (``enable_model_summary``)."""

    FLOPS_LABEL = "Forward FLOPs per token (flops_per_token)"

    def __init__(self, max_depth: int = 1, **summarize_kwargs: Any) -> None:
        super().__init__(max_depth, **summarize_kwargs)
        self.flops_per_token: float | None = None

    @classmethod
    def replacing(cls, summary: ModelSummary) -> FlopsPerTokenSummary:
        """This summary with the depth and options of Lightning's ``summary``."""
        return cls(summary._max_depth, **summary._summarize_kwargs)

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        count = getattr(getattr(pl_module, "mechanism", None), "flops_per_token", None)  # a property of the protocol
        self.flops_per_token = float(count) if isinstance(count, (int, float)) else None
        super().on_fit_start(trainer, pl_module)

    def summarize(self, summary_data: list[tuple[str, list[str]]], total_parameters: int, trainable_parameters: int,
                  model_size: float, total_training_modes: dict[str, int], total_flops: int, **summarize_kwargs: Any) -> None:
        from lightning.pytorch.utilities.model_summary.model_summary import (
            _format_summary_table,
            get_human_readable_count,
        )

        columns = [column for column in summary_data if column[0] != "FLOPs"]
        table = _format_summary_table(total_parameters, trainable_parameters, model_size, total_training_modes, 0, *columns)
        lines = table.splitlines()
        if lines and lines[-1].endswith("Total Flops"):
            lines.pop()
        if self.flops_per_token is not None:
            lines.append(f"{get_human_readable_count(int(self.flops_per_token)):<10}{self.FLOPS_LABEL}")
        logging.getLogger(ModelSummary.__module__).info("\n" + "\n".join(lines))


class StopCheck(Callback):
    """Raises a recorded Ctrl-C again at every batch boundary (``swar_bench.utils.interrupts``): a
    ``KeyboardInterrupt`` lost inside a finalizer or a library's broad ``except`` would otherwise
    let training go on. Lightning then shuts down as for any Ctrl-C."""

    def on_train_batch_start(self, *args: Any, **kwargs: Any) -> None:
        interrupts.raise_if_stopped()

    on_train_batch_end = on_validation_batch_end = on_test_batch_end = on_predict_batch_end = on_train_batch_start


def flag_sigint() -> dict[int, Any]:
    """Install the recording Ctrl-C and SIGTERM handlers (``swar_bench.utils.interrupts``: Ctrl-C is
    Python's own ``KeyboardInterrupt``, remembered, since Lightning turns it into ``sys.exit(1)``,
    the exit code a non-finite loss also has; SIGTERM before Lightning's own handler exists,
    during the seconds of set-up, raises ``interrupts.Terminated``); returns the previous
    handlers for ``interrupts.restore``."""
    global _RUN_TRAINER
    _RUN_TRAINER = None
    return interrupts.install(sigterm=True)


def resume_checkpoint(trainer: pl.Trainer | None) -> str | None:
    """The checkpoint ``fit --ckpt_path last`` would resume from: the newest ``last*.ckpt`` of
    the trainer's ``ModelCheckpoint`` callbacks (their ``last_model_path`` and ``dirpath``, the
    files Lightning looks for with ``ckpt_path="last"``); None when none was written."""
    found = set()
    for callback in getattr(trainer, "checkpoint_callbacks", None) or []:
        if getattr(callback, "last_model_path", ""):
            found.add(callback.last_model_path)
        dirpath = getattr(callback, "dirpath", None)
        if dirpath and "://" not in str(dirpath):
            name = f"{callback.CHECKPOINT_NAME_LAST or 'last'}*{callback.FILE_EXTENSION}"
            found.update(glob.glob(os.path.join(glob.escape(str(dirpath)), name)))
    found = {path for path in found if os.path.isfile(path)}
    return max(found, key=os.path.getmtime) if found else None


def stop_status(exc: BaseException, prog: str, subcommand: str | None) -> int | None:
    """The exit status of a run Lightning ended because of a signal, after one line on stderr
    (from rank 0 only): 143 for SIGTERM (Lightning's ``SIGTERMException``, a ``SystemExit``
    with code None that would read as success; or ``interrupts.Terminated`` before Lightning's
    handler existed), 130 for Ctrl-C. None for any other exit. For fit and demo the line names
    the checkpoint ``fit --ckpt_path last`` would resume from, when one exists
    (``resume_checkpoint``); in a SLURM job with requeue, the one the requeued job resumes from
    (``swar_bench.runtime.slurm.resume_hint``)."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    if isinstance(exc, (SIGTERMException, interrupts.Terminated)):
        status, what = 128 + signal.SIGTERM, "stopped by SIGTERM"
    elif interrupts.stopped() is KeyboardInterrupt:
        status, what = 128 + signal.SIGINT, "interrupted"
    else:
        return None
    if subcommand in ("fit", "demo"):
        hint = resume_hint()  # in a SLURM job with requeue: what the requeued job resumes from
        checkpoint = None if hint else resume_checkpoint(_RUN_TRAINER)
        if checkpoint is not None:  # no hint when nothing was saved: a new fit would start from scratch
            hint = f"fit --ckpt_path last resumes from {checkpoint}"
        what += f" ({hint})" if hint else ""
    from lightning.pytorch.utilities.rank_zero import rank_zero_only

    # the Trainer's global rank once it is set up, else RANK, LOCAL_RANK or SLURM_PROCID (srun)
    if int(getattr(rank_zero_only, "rank", 0) or 0) == 0:
        print(f"{prog}: {what}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
