"""What an unfinished mechanism of a study's report still needs, in words (``report.md``'s "Still
running" and "Left out as stale", the site's pages): from the records alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swar_bench.utils.text import plural

if TYPE_CHECKING:
    from swar_bench.study.report import MechanismResult
    from swar_bench.study.spec import StudySpec


def stale_reason(record: dict[str, Any], config_changed: str | None) -> str:
    """Why a record is left out: ``"config file X changed"`` (``config_changed``), else
    ``"made by other code"``."""
    return config_changed or "made by other code"


def stale_text(spec: StudySpec, r: MechanismResult) -> str:
    """``"2 records left out as stale (config file base.yaml changed); expected `swar-bench study
    run S --only M --rerun-stale`"``: the records of ``r`` the report does not use, and why."""
    reasons = ", ".join(dict.fromkeys(r.stale))
    return (f"{plural(len(r.stale), 'record')} left out as stale ({reasons}); expected "
            f"`swar-bench study run {spec.path} --only {r.name} --rerun-stale`")


def progress_text(spec: StudySpec, r: MechanismResult) -> str:
    """What an unfinished mechanism still needs, in words: :func:`stale_text` when records of it
    were left out as stale (nothing runs), ``"waits for the learning rate of GatedDeltaNet"``,
    ``"not started (8 selection fits to do)"`` (no fit record of it at any rate), ``"choosing its
    learning rate (1 of 4 rates scored)"`` or ``"2 runs to do: fit X, test Y"`` (at most four
    runs named)."""
    if r.stale:
        return stale_text(spec, r)
    done = sum(1 for lr in r.grid if lr in r.scores)
    if r.spec.learning_rate_from and not r.grid:
        return f"waits for the learning rate of {r.spec.learning_rate_from}"
    if not r.scores and not any((Path(spec.records)).glob(f"{r.name}_lr*.fit.json")):
        return f"not started ({plural(len(r.grid) * spec.selection_seeds, 'selection fit')} to do)"
    if not r.complete:
        return f"choosing its learning rate ({done} of {plural(len(r.grid), 'rate')} scored)"
    return f"{plural(len(r.missing), 'run')} to do: {', '.join(r.missing[:4])}{' …' if len(r.missing) > 4 else ''}"
