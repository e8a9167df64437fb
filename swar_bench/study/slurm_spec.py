"""The ``slurm:`` section of a study file: the resources of each task of ``swar-bench study run
--launcher slurm`` (``swar_bench.study.launchers``), checked as the rest of the file is."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from swar_bench.study.fields import StudyError, _count, _unknown, number


@dataclass(frozen=True)
class SlurmSpec:
    """The resources of each task of ``swar-bench study run --launcher slurm`` (the study file's
    ``slurm:`` section; the command line overrides each). Every fit and test is one task of a job
    array with one node and one process (``swar_bench.study.launchers``).

    Attributes:
        partition: ``sbatch --partition`` (None: the cluster's default partition).
        time_min: ``--time`` in minutes, per task (a fit that reaches it is requeued and resumes).
        cpus_per_task: ``--cpus-per-task``; also the torch threads of the run.
        gpus_per_task: ``--gpus-per-task`` (0: none asked for).
        mem_gb: ``--mem`` in GB (None: the partition's default).
        signal_delay_s: seconds before the time limit at which SLURM sends SIGUSR1 (``--signal``):
            the fit saves a checkpoint at a batch boundary and requeues its task
            (``swar_bench.callbacks.slurm_requeue``).
        array_parallelism: at most this many tasks of one array run at once (``--array=...%N``).
        additional_parameters: other ``sbatch`` options, without the leading ``--`` (``account``,
            ``qos``, ``constraint``, ...); a value ``true`` is a flag.
    """

    partition: str | None = None
    time_min: int = 60
    cpus_per_task: int = 1
    gpus_per_task: int = 0
    mem_gb: float | None = None
    signal_delay_s: int = 90
    array_parallelism: int = 256
    additional_parameters: dict[str, Any] = field(default_factory=dict)


SLURM_KEYS = {f.name for f in dataclasses.fields(SlurmSpec)}
RESERVED_SBATCH = {"array", "signal", "requeue", "no-requeue", "output", "error", "open-mode", "wrap"}
"""``sbatch`` options the launcher sets itself (the array, the SIGUSR1 requeue path, the logs)."""


def slurm_spec(raw: Any, where: str, base: SlurmSpec | None = None) -> SlurmSpec:
    """A checked ``slurm:`` section (or command-line overrides) on top of ``base`` (the defaults).

    Raises:
        StudyError: not a mapping, an unknown key (named, with the closest known key), a value of
            the wrong type or range, an ``additional_parameters`` key the launcher sets itself; one
            line each.
    """
    if not isinstance(raw, dict):
        raise StudyError(f"{where}={raw!r} is invalid; expected a mapping of {', '.join(sorted(SLURM_KEYS))}")
    _unknown(set(raw), SLURM_KEYS, where)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        if key == "partition":
            if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
                raise StudyError(f"{where}: partition={value!r} is invalid; expected a partition name")
        elif key == "mem_gb":
            gb = number(value)
            if gb is None or gb <= 0:
                raise StudyError(f"{where}: mem_gb={value!r} is invalid; expected a positive number of GB")
            value = gb
        elif key == "additional_parameters":
            if not isinstance(value, dict):
                raise StudyError(
                    f"{where}: additional_parameters={value!r} is invalid; expected a mapping of sbatch options"
                )
            for option, setting in value.items():
                flag = str(option).replace("_", "-")
                if not isinstance(option, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", option):
                    raise StudyError(
                        f"{where}: additional_parameters key {option!r} is invalid; expected an sbatch option "
                        "name without '--' (e.g. account, qos, constraint)"
                    )
                if flag in RESERVED_SBATCH:
                    raise StudyError(
                        f"{where}: additional_parameters.{option} is set by the launcher; expected none of "
                        f"{', '.join(sorted(RESERVED_SBATCH))} (signal_delay_s sets the SIGUSR1 time)"
                    )
                if not isinstance(setting, (str, int, float)) or setting is False:
                    raise StudyError(
                        f"{where}: additional_parameters.{option}={setting!r} is invalid; expected a string, "
                        "a number or true"
                    )
            value = {**(base.additional_parameters if base else {}), **value}
        else:
            value = _count(value, f"{where}: {key}", 0 if key == "gpus_per_task" else 1)
        values[key] = value
    spec = dataclasses.replace(base or SlurmSpec(), **values)
    if spec.signal_delay_s >= spec.time_min * 60:
        raise StudyError(
            f"{where}: signal_delay_s={spec.signal_delay_s} is not below time_min={spec.time_min} minutes; "
            "expected the requeue signal before the time limit"
        )
    return spec
