"""Checkpoint checks of the Lightning command line, before anything is built: ``--ckpt_path`` is
a checkpoint torch reads weights-only (``read_checkpoint``), and its weights fit the configured
mechanism (``state_dict_mismatch``, ``mismatch_error``), each refusal one line (ValueError)."""

from __future__ import annotations

import os
import re
from typing import Any

from swar_bench.utils.argparsing import check_path_given

CKPT_PATH_KEYWORDS = ("last", "best", "hpc", "registry")
"""``--ckpt_path`` values Lightning resolves itself (not files); which of them a command takes is
:func:`ckpt_path_keywords`."""

CKPT_PATH_ACCEPTED = {
    "fit": ("last", "hpc"),
    "validate": ("last", "hpc"),
    "test": ("last", "hpc"),
    "predict": ("last", "hpc"),
}
"""The ``CKPT_PATH_KEYWORDS`` each subcommand takes from the command line, the one source of every
``--ckpt_path`` message (what it lists, what it suggests). ``last``: the newest run's
``last.ckpt`` (``fit`` starts afresh when there is none); ``hpc``: Lightning's SLURM checkpoint
(``hpc_ckpt_<k>.ckpt`` in ``--trainer.default_root_dir``). Never ``best``: Lightning's best is the
best checkpoint of a fit earlier in the same process, and each command starts a new one. Lightning's
``registry`` (``registry:NAME``) is added when its ``litmodels`` package is installed."""


def litmodels_installed() -> bool:
    """Whether Lightning's model registry (``--ckpt_path registry``) can be used: its ``litmodels``
    package is installed (found without importing it)."""
    import importlib.util

    return importlib.util.find_spec("litmodels") is not None


def ckpt_path_keywords(subcommand: str | None) -> tuple[str, ...]:
    """The ``--ckpt_path`` keywords ``swar-bench <subcommand>`` takes (``CKPT_PATH_ACCEPTED``; None:
    ``fit``), ``registry`` last when ``litmodels`` is installed: ``("last", "hpc")``."""
    accepted = CKPT_PATH_ACCEPTED.get(subcommand or "fit", CKPT_PATH_ACCEPTED["fit"])
    return (*accepted, "registry") if litmodels_installed() else accepted


def ckpt_path_expected(subcommand: str | None) -> str:
    """What ``--ckpt_path`` of ``subcommand`` takes, as every refusal of it ends: ``a checkpoint file
    written by swar-bench fit (e.g. <run>/checkpoints/last.ckpt), last or hpc``."""
    keywords = ckpt_path_keywords(subcommand)
    listed = ", ".join(keywords[:-1]) + f" or {keywords[-1]}" if len(keywords) > 1 else keywords[0]
    return f"a checkpoint file written by swar-bench fit (e.g. <run>/checkpoints/last.ckpt), {listed}"


def _registry(path: str) -> bool:
    """Whether Lightning reads ``path`` as its model registry (``registry``, ``registry:NAME``)."""
    return path.lower() == "registry" or path.lower().startswith("registry:")


def ckpt_path_keyword(path: str, subcommand: str | None) -> str | None:
    """``path`` when it is a keyword of :func:`ckpt_path_keywords` that Lightning resolves (not a
    file), else None (a file or a URL, read by :func:`read_checkpoint`).

    Raises:
        ValueError: one line saying what works instead (:func:`ckpt_path_expected`) for ``best``
            (Lightning's "best" is the ``best_model_path`` of a ``ModelCheckpoint`` that saved
            during this process, so a command started from the command line has none) and for
            ``registry`` without ``litmodels``.
    """
    expected = ckpt_path_expected(subcommand)
    if path == "best":
        raise ValueError(
            f"--ckpt_path=best: Lightning's best is the best checkpoint of a fit earlier in the same process, and "
            f"swar-bench {subcommand or 'fit'} starts a new one; expected {expected}"
        )
    if _registry(path):
        if "registry" in ckpt_path_keywords(subcommand):
            return path
        raise ValueError(
            f"--ckpt_path={path}: Lightning's model registry needs the litmodels package, which is not installed; "
            f"expected {expected}"
        )
    return path if path in ckpt_path_keywords(subcommand) else None


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


def mismatch_error(configured: str, account: str, checkpoint: dict[str, Any] | None, path: str | None) -> ValueError:
    """The one-line ValueError of ``--ckpt_path=path`` whose weights do not fit the ``configured``
    mechanism class, with the ``account`` of :func:`state_dict_mismatch` and the class the
    checkpoint was trained with, when it records one (:func:`checkpoint_mechanism`)."""
    found = checkpoint_mechanism(checkpoint) if checkpoint else None
    held = f" (it was trained with {found})" if found else ""
    return ValueError(
        f"--ckpt_path={path}: the checkpoint's weights{held} do not fit the configured mechanism "
        f"{configured}: {account}; expected --model.mechanism and its init_args as in the run that wrote it"
    )


def _no_such_file(path: str, subcommand: str | None) -> ValueError:
    """``--ckpt_path=lastt: no such file (did you mean last?); expected ...``: a missing file, with
    the keyword of ``subcommand`` it is a misspelling of, when it is close to one
    (:func:`ckpt_path_keywords`: never one the command would then refuse)."""
    from swar_bench.utils.text import did_you_mean

    suggestion = did_you_mean(path, ckpt_path_keywords(subcommand))
    return ValueError(f"--ckpt_path={path}: no such file{suggestion}; expected {ckpt_path_expected(subcommand)}")


def read_checkpoint(path: str, subcommand: str | None = None) -> dict[str, Any] | None:
    """The checkpoint ``--ckpt_path=path`` names, read weights-only (``swar_bench.runtime.checkpoint_io``,
    a pickled payload is never run); None for a distributed checkpoint folder (Lightning's
    strategy reads it). ValueError (one line naming ``path``) for a missing file, an unreadable
    or refused one, a folder that is no distributed checkpoint, or no Lightning checkpoint; an
    empty or missing one says what ``subcommand`` (None: ``fit``) takes (:func:`ckpt_path_expected`)."""
    from swar_bench.runtime.checkpoint_io import (
        CheckpointRefusedError,
        is_remote,
        load_checkpoint,
    )

    check_path_given("--ckpt_path", path, ckpt_path_expected(subcommand))
    remote = is_remote(path)
    if not remote and not os.path.exists(path):
        raise _no_such_file(path, subcommand)
    if not remote and os.path.isdir(path):  # a distributed checkpoint folder: Lightning's strategy reads it
        if not os.path.isfile(os.path.join(path, ".metadata")):
            raise ValueError(
                f"--ckpt_path={path}: a folder, not a checkpoint; expected a .ckpt file written by swar-bench fit "
                "(or a distributed checkpoint folder holding .metadata)"
            )
        return None
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
        raise _no_such_file(path, subcommand) from None
    except OSError as err:  # a truncated or partly copied file: EINVAL from torch's zip reader
        raise ValueError(
            f"--ckpt_path={path}: cannot be read ({err.strerror or type(err).__name__}); expected a complete .ckpt "
            "written by swar-bench fit (a truncated or partly copied file cannot be read)"
        ) from None
    except Exception as err:  # noqa: BLE001 - any failure means "not a checkpoint we can read"
        raise ValueError(
            f"--ckpt_path={path}: not a checkpoint file torch can read ({type(err).__name__}); expected a .ckpt "
            "written by swar-bench fit"
        ) from None
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("state_dict"), dict):
        raise ValueError(f"--ckpt_path={path}: not a Lightning checkpoint (no state_dict)")  # noqa: TRY004 - bad user input
    return checkpoint


RESUME_FIXED = ("lr", "weight_decay", "betas", "warmup_steps", "max_steps", "min_lr_ratio")
"""``TBPTTModule`` options a resumed fit cannot change: the optimizer's and the schedule's state
restored from the checkpoint carries the old values (and the run's hparams would record the new)."""


def resumed_optimizer_changes(now: dict[str, Any], saved: dict[str, Any]) -> str | None:
    """``"--model.lr=0.5 (trained with 0.003), ..."`` for every ``RESUME_FIXED`` option whose
    value in ``now`` (this command's module hparams) differs from ``saved`` (the checkpoint's);
    None when all agree or the checkpoint does not record them."""

    def norm(value: Any) -> Any:
        return [float(v) for v in value] if isinstance(value, (list, tuple)) else value

    diffs = [
        f"--model.{key}={now[key]} (trained with {saved[key]})"
        for key in RESUME_FIXED
        if key in now and key in saved and norm(now[key]) != norm(saved[key])
    ]
    return ", ".join(diffs) or None


def hpc_missing_line(message: str, folder: str | None) -> str | None:
    """``--ckpt_path=hpc: no HPC checkpoint (hpc_ckpt_<N>.ckpt, saved when SLURM stops a run) in
    --trainer.default_root_dir=<folder>; expected ...`` in place of Lightning's ``.test(ckpt_path="hpc")
    is set but no HPC checkpoint was found ...`` (``folder``: the Trainer's ``default_root_dir``,
    where Lightning looks), as ``--ckpt_path=last`` without a ``last.ckpt`` is refused. None for
    another message."""
    found = re.search(r"`\.(fit|validate|test|predict)\(ckpt_path=\"hpc\"\)` is set but no HPC checkpoint was found", message)
    if found is None:
        return None
    where = f" in --trainer.default_root_dir={folder}" if folder else ""
    return (f"--ckpt_path=hpc: no HPC checkpoint (hpc_ckpt_<N>.ckpt, saved when SLURM stops a run){where}; expected "
            f"{ckpt_path_expected(found.group(1))}")
