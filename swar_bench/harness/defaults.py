"""The defaults of the Lightning command line: the Trainer's (a TensorBoard logger under
``runs/`` named after the first ``--config`` file, the progress bar only on a terminal), the
config file each subcommand saves, and the timeout of a distributed run's collectives."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

TRAINER_DEFAULTS = {
    "default_root_dir": "runs",
    "logger": {
        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
        "init_args": {"save_dir": "runs", "name": "swar_bench"},
    },
}


ARGS_WARNING = r"LightningCLI's args parameter is intended to run from within Python"
"""Start of Lightning's warning when ``args`` is passed while ``sys.argv`` also holds arguments:
swar-bench passes ``sys.argv[1:]`` (rewritten) as ``args`` on purpose."""

COLLECTIVE_TIMEOUT_S = 600.0
"""Default ``--collective_timeout``: a rank that stopped (SIGSTOP, a hung node) ends a
distributed run after 10 minutes, not after the 30 of torch.distributed's default process-group
timeout; a step or a checkpoint save slower than that needs a larger value."""


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
