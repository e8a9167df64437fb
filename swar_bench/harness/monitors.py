"""A callback's ``monitor`` that names no metric the run logs: Lightning finds out only at the
first validation (``EarlyStopping``: ``RuntimeError: Early stopping conditioned on metric `x`
which is not available ...``; ``ModelCheckpoint``: ``could not find the monitored key in the
returned metrics: [...]``), mid-run, leaving a run folder with no checkpoint. :func:`monitor_line`
turns either into one line naming the value and the metrics the run logs; the run folder is then
removed (``swar_bench.harness.run_folders.discarding_empty_run``), its few logged values being of
no use without a checkpoint."""

from __future__ import annotations

import re

PATTERNS = (
    ("EarlyStopping", re.compile(r"Early stopping conditioned on metric `(.*?)` which is not available\..*?"
                                 r"use any of the following: (.*)$", re.DOTALL)),
    ("ModelCheckpoint", re.compile(r"`ModelCheckpoint\(monitor='(.*?)'\)` could not find the monitored key in the "
                                   r"returned metrics: \[(.*?)\]\.", re.DOTALL)),
)
"""(callback, pattern of Lightning's refusal: group 1 the monitor, group 2 the metrics logged)."""


def monitor_refusal(err: BaseException) -> tuple[str, str, list[str]] | None:
    """``(callback, monitor, metrics logged)`` when ``err`` is Lightning's refusal of a monitor that
    names no logged metric, else None."""
    for callback, pattern in PATTERNS:
        found = pattern.search(str(err))
        if found is not None:
            metrics = [m.strip().strip("`'\"") for m in found.group(2).split(",")]
            return callback, found.group(1), [m for m in metrics if m]
    return None


def monitor_line(err: BaseException, argv: list[str]) -> str | None:
    """``--trainer.callbacks.monitor=x: EarlyStopping monitors a metric this run does not log;
    expected one of the metrics it logs: train/loss, val/loss, ...`` (the option as typed in
    ``argv``, else ``EarlyStopping(monitor='x')``), or None for another error."""
    refused = monitor_refusal(err)
    if refused is None:
        return None
    callback, monitor, metrics = refused
    typed = [a for a in argv if re.fullmatch(r"--trainer\.callbacks\.(init_args\.)?monitor=.*", a)
             and a.partition("=")[2] == monitor]
    where = typed[-1] if typed else f"{callback}(monitor={monitor!r})"
    return (f"{where}: {callback} monitors a metric this run does not log; expected one of the metrics it logs: "
            f"{', '.join(metrics)}")
