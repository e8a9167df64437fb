"""Run folders: one per run, named after its config and mechanism, so that runs never clobber each other.

    <save_dir>/<name>/<Mechanism>/<version>/
        config.yaml            the fit command's full config (test_config.yaml etc. for the others)
        events.out.tfevents.*  TensorBoard
        hparams.yaml
        checkpoints/last.ckpt  (and the monitored ones)
        answer_type_accuracy.md / .csv / .png, calibration.md / .csv ...   (test reports)

``save_dir`` and ``name`` are the logger's (``configs/quickstart.yaml``: ``runs`` and
``quickstart``; the first ``--config`` file's stem when a config sets none), ``Mechanism`` the
class name of ``--model.mechanism`` (a ``name`` that already contains it is kept as is), and
``version`` is ``version_N`` (the next free N) unless forced with
``--trainer.logger.init_args.version=NAME`` (e.g. ``slurm_$SLURM_JOB_ID``: a requeued job then
logs into the same folder). ``--ckpt_path last`` picks the newest ``checkpoints/last*.ckpt`` of
the runs of this config and mechanism (of the forced version, when one is given) and continues
that run's folder; ``test --ckpt_path <run>/checkpoints/last.ckpt`` writes its reports into
``<run>``.
"""

from __future__ import annotations

import re
from pathlib import Path

VERSION_RE = re.compile(r"version_(\d+)")


def mechanism_name(class_path: str) -> str:
    """``"swar_bench.mechanisms.GRU"`` -> ``"GRU"``."""
    return str(class_path).rsplit(".", 1)[-1]


def run_name(name: str, mechanism: str) -> str:
    """The logger name of a run: ``<name>/<mechanism>``, or ``name`` itself when one of its path
    parts already contains the mechanism's name (``quickstart/GRU``, ``GRU_lr0.003``)."""
    text = str(name).strip("/")
    if any(mechanism in part for part in Path(text).parts):
        return text
    return f"{text}/{mechanism}" if text else mechanism


def version_folder(version: int | str) -> str:
    """The folder of a logger version: ``version_N`` for an int N, the string itself otherwise."""
    return version if isinstance(version, str) else f"version_{int(version)}"


def parse_version(folder: str) -> int | str:
    """Inverse of :func:`version_folder`: ``"version_3"`` -> 3, any other name -> itself."""
    match = VERSION_RE.fullmatch(folder)
    return int(match.group(1)) if match else folder


def last_checkpoint(root: str | Path, version: int | str | None = None) -> tuple[Path, int | str] | None:
    """The checkpoint ``--ckpt_path last`` resumes and its version. Without ``version``: the
    newest ``<root>/*/checkpoints/last*.ckpt`` by modification time (the latest run). With
    ``version`` (a job that continues one run, e.g. ``slurm_<job id>``): the checkpoint of
    ``<root>/<version>/checkpoints/`` with the largest recorded global step, ``hpc_ckpt_<k>.ckpt``
    of a SLURM requeue among them (``swar_bench.slurm.newest_checkpoint``), so a resume never goes
    back to an older one. None when there is none."""
    from swar_bench.slurm import newest_checkpoint, resume_candidates

    root = Path(root)
    if version is not None:
        newest = newest_checkpoint(resume_candidates(root / version_folder(version) / "checkpoints"))
        return None if newest is None else (Path(newest[0]), version)
    folders = [p for p in root.glob("*") if p.is_dir()]
    found = [(ckpt.stat().st_mtime, ckpt) for folder in folders for ckpt in (folder / "checkpoints").glob("last*.ckpt")]
    if not found:
        return None
    ckpt = max(found)[1]
    return ckpt, parse_version(ckpt.parent.parent.name)


def run_of_checkpoint(root: str | Path, ckpt_path: str | Path) -> int | str | None:
    """The version of the run under ``root`` that ``ckpt_path`` belongs to
    (``<root>/<version>/checkpoints/<file>``), else None."""
    path = Path(ckpt_path).absolute()
    if path.parent.name != "checkpoints" or path.parent.parent.parent != Path(root).absolute():
        return None
    return parse_version(path.parent.parent.name)
