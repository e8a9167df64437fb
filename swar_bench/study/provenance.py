"""What produced a record: the code version, package versions, the device.

``code_version()`` gives the git commit and whether the tree was dirty, and a *fingerprint*: the
SHA-256 of the source files that decide what a fit or test computes (``FINGERPRINTED``: the
mechanisms, the module and its TBPTT loop, the data path from the task to the batch, the
accuracy callback), not of the command-line glue, file checks or reports around them. Two records
with the same fingerprint were made by the same training code, whatever their commits; a study may
also declare other commits compatible (``compatible_code``), saying why in the study file, and
pin its training code (``code_fingerprint``): its records are then judged against the pin, not
against the checkout, and new runs are refused from a checkout of other code (:func:`pin_refusal`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent
FINGERPRINTED = (
    "mechanisms/",
    "module.py",
    "tbptt.py",
    "datamodules/",
    "tasks/passkey_swar/",
    "tasks/oracle.py",
    "tasks/mqar.py",
    "callbacks/mqar_accuracy.py",
    "callbacks/answer_type_accuracy.py",
    "callbacks/eval_hooks.py",
    "callbacks/length_curriculum.py",
    "callbacks/flop_budget.py",
    "referee/bandit.py",
)
"""Package paths (files, or folders ending in ``/``) whose code decides what a fit or test computes."""
NOT_FINGERPRINTED = ("mechanisms/check_cli.py", "mechanisms/conformance.py")
"""Files under ``FINGERPRINTED`` folders that check a mechanism but take no part in a run."""


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """SHA-256 (hex, first 16 digits) over the path and bytes of every ``swar_bench/**/*.py`` under
    ``FINGERPRINTED``, in sorted path order."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in NOT_FINGERPRINTED or not any(
            rel == p or (p.endswith("/") and rel.startswith(p)) for p in FINGERPRINTED
        ):
            continue
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=PACKAGE.parent,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def code_version() -> dict[str, Any]:
    """``{"commit": hex or None (not a git checkout), "dirty": bool or None, "fingerprint": hex}``;
    dirty means a tracked file under ``swar_bench/`` or ``configs/`` differs from the commit."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no", "--", "swar_bench", "configs")
    return {
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "fingerprint": fingerprint(),
    }


def cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), else what ``platform`` knows: CPUs of other
    vector widths round a float32 matmul differently, so a record names the model it ran on."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return f"{value.strip()} <{platform.machine()}>"
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def environment() -> dict[str, Any]:
    """Package versions and the device the runs of this process start on."""
    import lightning
    import torch

    if torch.cuda.is_available():
        device = torch.cuda.get_device_name(0)
    else:
        device = cpu_model()
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "lightning": lightning.__version__,
        "device": device,
    }


FINGERPRINT_RE = re.compile(r"[0-9a-f]{16}")
"""A fingerprint as :func:`fingerprint` spells it: 16 lowercase hex digits."""


def compatible(
    record_code: dict[str, Any] | None, accepted: tuple[str, ...] = (), pinned: str | None = None
) -> bool:
    """True when a record's ``code`` is the study's training code: its fingerprint equals
    ``pinned`` (the study's ``code_fingerprint``) or, without a pin, this checkout's; or its commit
    is one the study declares compatible (a prefix of at least 7 hex digits matches, a dirty tree
    never does)."""
    if not isinstance(record_code, dict):
        return False
    if record_code.get("fingerprint") == (pinned or fingerprint()):
        return True
    commit = record_code.get("commit") or ""
    return any(
        len(c) >= 7 and commit.startswith(c) and not record_code.get("dirty") for c in accepted
    )


def commit_of(fingerprint_hex: str, records: str | Path) -> str | None:
    """The commit of a clean record (``<records>/*.json``, ``code``) made by training code
    ``fingerprint_hex``, the most recent by file time; None when no record says."""
    found = []
    for path in Path(records).glob("*.json") if Path(records).is_dir() else []:
        try:
            code = json.loads(path.read_text()).get("code")
        except (OSError, ValueError, AttributeError):
            continue
        if (isinstance(code, dict) and code.get("fingerprint") == fingerprint_hex
                and isinstance(code.get("commit"), str) and code.get("dirty") is False):
            found.append((path.stat().st_mtime, code["commit"]))
    return max(found)[1] if found else None


def pin_refusal(study: str, pinned: str | None, records: str | Path, checkout: str | None = None) -> str | None:
    """Why ``study run`` of a study pinned to training code ``pinned`` cannot run from this
    checkout (fingerprint ``checkout``, default :func:`fingerprint`), in one line naming a commit
    with that code when a record knows one; None when it is not pinned or the code is the pinned one.
    New runs must be made by the code of the records they are compared with."""
    checkout = checkout or fingerprint()
    if pinned is None or pinned == checkout:
        return None
    commit = commit_of(pinned, records)
    where = (
        f"run it from a checkout of commit {commit[:12]} (git worktree add ../{study}-code {commit[:12]})"
        if commit
        else "run it from a checkout whose training code has that fingerprint (no record names its commit)"
    )
    return f"study {study} is pinned to training code {pinned}; this checkout has {checkout}; {where}"
