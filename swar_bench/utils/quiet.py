"""Quiet, consistent output: library notices that say nothing about the run, silenced by message.

Each filter matches one message exactly (``warnings.filterwarnings`` / a ``logging.Filter`` on
the logger that emits it) and lives only inside :func:`quiet_output`, so nothing else a library
says is hidden:

- the litlogger / litmodels tips (``lightning.pytorch``, ``rank_zero_info``, on every fit);
- torch's ``LeafSpec`` FutureWarning raised by Lightning's own ``_pytree`` helper;
- Lightning's "The `srun` command is available on your system but is not used" hint
  (``SLURMEnvironment`` at every Trainer built on a machine with ``srun``), for every run our
  commands start, one process or DDP: docs/CLUSTER.md says how to launch with srun;
- "Checkpoint directory ... exists and is not empty" when a run resumes into its own run folder
  (``resuming=True``): writing there is the point of resuming; and when a new run's folder holds
  nothing but the run's own lock file (``silence_run_notices``);
- "The dirpath has changed from ... to '<run folder>/checkpoints'" when a run goes into the run
  folder of its ``--ckpt_path`` (``checkpoint_dir``) that the fit wrote under another spelling
  (relative, moved or copied): the checkpoints are where the run writes;
- Lightning's "Couldn't infer the batch indices fetched from your dataloader" of every
  ``predict``: the data module's dataloaders stream their examples (no index batch sampler to
  record), and ``PredictionWriter`` writes the predictions in order without ``batch_indices``;
- Lightning's "Detected KeyboardInterrupt, attempting graceful shutdown ..." (``rank_zero_info``):
  the command's own line says it was interrupted and how to resume;
- Lightning's "[rank: 0] Received SIGTERM: 15" and "Bypassing SIGTERM: 15" (its
  ``SignalConnector``, on the ``SIGNAL_LOGGER``): the command's own line says it was stopped by
  SIGTERM (and how to resume);
- ``messages``: further INFO lines to drop (the demo's validation-only correlation notice).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings
from collections.abc import Iterator, Sequence

TIP_RE = re.compile(r"💡 Tip: For seamless cloud (logging|uploads)")
LEAFSPEC_RE = r"`isinstance\(treespec, LeafSpec\)` is deprecated"
SRUN_RE = r"The `srun` command is available on your system but is not used"
CKPT_DIR_RE = r"Checkpoint directory .* exists and is not empty"
DIRPATH_CHANGED_RE = r"The dirpath has changed from .*"
BATCH_INDICES_RE = r"Couldn't infer the batch indices fetched from your dataloader"
INTERRUPT_RE = re.compile(r"Detected KeyboardInterrupt, attempting graceful shutdown")
SIGTERM_RE = re.compile(r"^(\[rank: \d+\] )?(Received|Bypassing) SIGTERM: \d+$")
SIGNAL_LOGGER = "lightning.pytorch.trainer.connectors.signal_connector"
"""The logger of Lightning's ``SignalConnector`` (its SIGTERM handler logs each signal at INFO)."""
RANK_ZERO_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")
"""The loggers Lightning's ``rank_zero_info`` writes through."""


class DropMessages(logging.Filter):
    """Drops log records whose message matches one of ``patterns`` (``re.search``)."""

    def __init__(self, patterns: Sequence[re.Pattern | str]) -> None:
        super().__init__()
        self.patterns = [re.compile(p) if isinstance(p, str) else p for p in patterns]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(p.search(message) for p in self.patterns)


def silence_run_notices(resuming: bool, checkpoint_dir: str | None = None, locked_folder: str | None = None) -> None:
    """Add the run-dependent warning filters (non-empty checkpoint folder on resume; the changed
    ``dirpath`` of a checkpoint whose run folder the run writes into, ``checkpoint_dir``) to the
    current ``warnings`` filters; call inside :func:`quiet_output` so it is undone.

    ``locked_folder``: the checkpoint folder a new run writes into (``--checkpoint.dirpath``),
    which the run's lock file (``swar_bench.utils.locks.LOCK_NAME``) is in by now: when the lock is
    all it holds, Lightning's "Checkpoint directory ... exists and is not empty" would be about
    our own file, and is dropped; a folder holding anything else keeps the warning."""
    from swar_bench.utils.locks import LOCK_NAME

    if resuming:
        warnings.filterwarnings("ignore", message=CKPT_DIR_RE)
    elif locked_folder is not None and "://" not in locked_folder and os.path.isdir(locked_folder) \
            and set(os.listdir(locked_folder)) <= {LOCK_NAME}:
        for spelled in dict.fromkeys((locked_folder, os.path.realpath(os.path.expanduser(locked_folder)))):
            warnings.filterwarnings("ignore", message=re.escape(f"Checkpoint directory {spelled} exists and is not empty"))
    if checkpoint_dir is not None:
        warnings.filterwarnings("ignore", message=DIRPATH_CHANGED_RE + re.escape(f" to {checkpoint_dir!r},"))


@contextlib.contextmanager
def quiet_output(resuming: bool = False, messages: Sequence[str] = ()) -> Iterator[None]:
    """Silence the notices of the module docstring while the block runs; restores the
    ``warnings`` filters and removes the logging filter afterwards."""
    drop = DropMessages([TIP_RE, INTERRUPT_RE, *(re.compile(m) for m in messages)])
    loggers = [logging.getLogger(name) for name in RANK_ZERO_LOGGERS]
    signals, drop_signals = logging.getLogger(SIGNAL_LOGGER), DropMessages([SIGTERM_RE])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=LEAFSPEC_RE, category=FutureWarning)
        warnings.filterwarnings("ignore", message=SRUN_RE)
        warnings.filterwarnings("ignore", message=BATCH_INDICES_RE)
        silence_run_notices(resuming)
        for logger in loggers:
            logger.addFilter(drop)
        signals.addFilter(drop_signals)
        try:
            yield
        finally:
            signals.removeFilter(drop_signals)
            for logger in loggers:
                logger.removeFilter(drop)


PROGRESS_BAR_LIBRARIES = (
    ("datasets", "HF_DATASETS_DISABLE_PROGRESS_BARS"),
    ("huggingface_hub", "HF_HUB_DISABLE_PROGRESS_BARS"),
)
"""The libraries whose tqdm bars a command may show (loading, downloading), each with the
environment variable it reads when imported; ``are_progress_bars_disabled`` /
``disable_progress_bars`` / ``enable_progress_bars`` in its ``utils`` switch them once imported."""


@contextlib.contextmanager
def progress_bars_only_on_a_terminal(stream=None) -> Iterator[bool]:
    """Inside: the progress bars of ``datasets`` and ``huggingface_hub`` off when ``stream``
    (default ``sys.stderr``, where tqdm draws) is not a terminal (a pipe, a log file), so that logs
    do not fill with bars; on a terminal nothing changes. Uses each library's own switch (its
    environment variable before it is imported, its ``disable_progress_bars`` after), leaves a
    variable the user set alone, and restores everything on exit. Yields whether bars may show;
    a command's own tqdm bar follows it (or tqdm's ``disable=None``, off on a non-terminal)."""
    import importlib
    import os
    import sys

    stream = sys.stderr if stream is None else stream
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        terminal = False
    if terminal:
        yield True
        return
    set_here, enable = [], []
    for module, variable in PROGRESS_BAR_LIBRARIES:
        if variable not in os.environ:
            os.environ[variable] = "1"
            set_here.append(variable)
        if module in sys.modules:
            utils = importlib.import_module(f"{module}.utils")
            if not utils.are_progress_bars_disabled():
                utils.disable_progress_bars()
                enable.append(utils.enable_progress_bars)
    try:
        yield False
    finally:
        for variable in set_here:
            os.environ.pop(variable, None)
        for switch_on in enable:
            switch_on()
