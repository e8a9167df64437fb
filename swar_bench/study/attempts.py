"""The attempts of a study's fit: what lets a stopped fit resume instead of starting again.

Before it starts a fit, ``swar-bench study run`` writes ``<out>/<run>/attempt.json`` (atomically):

    {"command": "swar-bench fit --config ...", "fingerprint": "5bcec857e4759810",
     "config_files": {"configs/results_frontier.yaml": "3f1c0a9b2d4e5f60"},
     "attempts": [{"started": 1764770000.0, "wall_s": 812.4, "resumed_from_step": null},
                  {"started": 1764771000.0, "wall_s": 301.9, "resumed_from_step": 600}]}

``command`` is the fit's command as its record keeps it (without the resume option),
``fingerprint`` the training code that runs it (``swar_bench.study.provenance``),
``config_files`` what its config files said (``swar_bench.study.config_files``; absent from the
files of earlier versions), and each attempt its start (Unix time, seconds), its wall time
(seconds; null while it runs) and the global step it resumed from (null for the first). A later
``study run`` that finds the same command, the same fingerprint, the same config files (when the
file keeps them) and a readable checkpoint in ``<out>/<run>/checkpoints/`` resumes the fit from
the checkpoint with the most progress (:func:`plan_attempt`); anything else starts it afresh (the
run folder is emptied). An attempt that ended without notice (the machine stopped) has no wall time:
it counts until its checkpoint was written, the work after it being lost. A fit that fails (a
non-zero exit that is not a stop) forgets its attempts: the next ``run`` starts it afresh. A run
folder without a checkpoint after a failed or stopped attempt is removed (:func:`drop_unresumable`;
the fit's log, ``<out>/<run>.fit.log``, is beside it and stays).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ATTEMPT_FILE = "attempt.json"


def read_attempts(run_dir: Path) -> dict[str, Any] | None:
    """The attempt file of ``run_dir``; None when there is none or it cannot be read as one (a
    run of an earlier version, a file cut short: the fit then starts afresh)."""
    try:
        saved = json.loads((Path(run_dir) / ATTEMPT_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not (
        isinstance(saved, dict)
        and isinstance(saved.get("command"), str)
        and isinstance(saved.get("fingerprint"), str)
        and isinstance(saved.get("attempts"), list)
        and all(isinstance(a, dict) for a in saved["attempts"])
    ):
        return None
    return saved


@dataclass
class Attempts:
    """The attempts of one fit (module docstring) and, when this one resumes, its checkpoint.

    Attributes:
        run_dir: ``<out>/<run>``, the fit's run folder.
        command: the fit's command text, as its record keeps it.
        fingerprint: the training code's fingerprint (16 hex digits).
        history: the earlier attempts (``started``, ``wall_s``, ``resumed_from_step``).
        resume_from: ``(checkpoint path, global step)`` this attempt resumes from; None: a fresh start.
        config_files: ``{path: content hash}`` of the fit's config files
            (``swar_bench.study.config_files``); None: not kept.
    """

    run_dir: Path
    command: str
    fingerprint: str
    history: list[dict[str, Any]] = field(default_factory=list)
    resume_from: tuple[str, int] | None = None
    config_files: dict[str, Any] | None = None

    def _write(self) -> None:
        from swar_bench.utils.files import atomic_write_text

        atomic_write_text(
            self.run_dir / ATTEMPT_FILE,
            json.dumps(
                {
                    "command": self.command,
                    "fingerprint": self.fingerprint,
                    **({} if self.config_files is None else {"config_files": self.config_files}),
                    "attempts": self.history,
                },
                indent=1,
            )
            + "\n",
        )

    def begin(self) -> None:
        """Record this attempt's start (the fit is about to be launched)."""
        step = None if self.resume_from is None else int(self.resume_from[1])
        self.history.append(
            {"started": round(time.time(), 3), "wall_s": None, "resumed_from_step": step}
        )
        self._write()

    def end(self, seconds: float) -> None:
        """Record this attempt's wall time (seconds), however it ended."""
        if self.history:
            self.history[-1]["wall_s"] = round(float(seconds), 1)
            self._write()

    def forget(self) -> None:
        """No later ``run`` resumes this fit (it failed): the attempt file goes."""
        (self.run_dir / ATTEMPT_FILE).unlink(missing_ok=True)

    @property
    def wall_s(self) -> float:
        """Seconds of every attempt together (an attempt that ended without notice: 0 here; see
        :func:`plan_attempt`)."""
        return round(sum(float(a.get("wall_s") or 0.0) for a in self.history), 1)

    @property
    def resumed_from_steps(self) -> list[int]:
        """The global step each resumed attempt started from, in order (empty: never resumed)."""
        return [
            int(a["resumed_from_step"])
            for a in self.history
            if a.get("resumed_from_step") is not None
        ]


def plan_attempt(
    run_dir: Path, command: str, fingerprint: str, config_files: dict[str, Any] | None = None
) -> Attempts:
    """What the next attempt of the fit in ``run_dir`` does: resume (``resume_from`` set) when
    the attempt file holds the same ``command`` and ``fingerprint`` (and the same
    ``config_files``, when both it and ``config_files`` have them: an attempt file of an earlier
    version keeps none, and resumes as it did) and a checkpoint of the run
    can be read (``swar_bench.runtime.slurm.newest_checkpoint``: the most progress, ``last.ckpt``,
    a step checkpoint or a SLURM ``hpc_ckpt_<k>.ckpt``), else start afresh (no history). An earlier
    attempt without a wall time (ended without notice) gets the seconds from its start to that
    checkpoint's modification time."""
    from swar_bench.runtime.slurm import newest_checkpoint, resume_candidates

    run_dir = Path(run_dir)
    saved = read_attempts(run_dir)
    fresh = Attempts(run_dir, command, fingerprint, config_files=config_files)
    if saved is None or saved["command"] != command or saved["fingerprint"] != fingerprint:
        return fresh
    if config_files is not None and "config_files" in saved and saved["config_files"] != config_files:
        return fresh  # a config file changed since the stopped attempt read it
    newest = newest_checkpoint(resume_candidates(run_dir / "checkpoints"), warn=lambda line: None)
    if newest is None:
        return fresh
    history = [dict(a) for a in saved["attempts"]]
    written = os.path.getmtime(newest[0])
    for a in history:
        if a.get("wall_s") is None:
            started = a.get("started")
            a["wall_s"] = (
                round(max(0.0, written - float(started)), 1)
                if isinstance(started, (int, float))
                else 0.0
            )
            a["wall_s_until_checkpoint"] = True
    return Attempts(run_dir, command, fingerprint, history, newest, config_files)


def drop_unresumable(run_dir: Path) -> bool:
    """Remove ``run_dir`` (after a failed or stopped attempt) when it holds no checkpoint
    (``checkpoints/*.ckpt``): nothing in it could be resumed, and a folder holding only an
    attempt file or an empty log folder would mislead a reader. A folder with a checkpoint is
    kept for the resume. True when it was removed."""
    import shutil

    from swar_bench.runtime.slurm import resume_candidates

    run_dir = Path(run_dir)
    if not run_dir.is_dir() or resume_candidates(run_dir / "checkpoints"):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return not run_dir.exists()
