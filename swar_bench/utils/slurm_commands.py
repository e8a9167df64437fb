"""SLURM's commands as swar_bench runs them (``squeue``, ``sbatch`` through submitit, ``scontrol``),
each failure said in one line: the command was not found on PATH, or it failed with its exit
status and the last line it wrote (``squeue: fatal: Could not establish a configuration
source``), never its raw output. The caller names its option in front (``--launcher slurm: ...``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

TOOLS = ("sbatch", "squeue", "srun")
"""The commands ``study run --launcher slurm`` needs on PATH (submitit's tasks start with ``srun``;
``scontrol`` runs inside a job)."""


class SlurmCommandError(Exception):
    """A SLURM command that was not found or failed; its text is one line (:func:`missing`, :func:`failed`)."""


def last_line(text: str | bytes | None) -> str:
    """The last non-empty line of a command's output (``""`` when none), at most 300 characters."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def missing(tool: str) -> str:
    """``SLURM's squeue was not found on PATH``."""
    return f"SLURM's {tool} was not found on PATH"


def failed(tool: str, status: int | None, output: str | bytes | None) -> str:
    """``SLURM's squeue failed (exit 1: squeue: fatal: ...)``: the exit status and the last line
    the command wrote."""
    said = last_line(output)
    how = f"exit {status}" if status is not None else "no exit status"
    return f"SLURM's {tool} failed ({how}{': ' + said if said else ''})"


def run(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``command`` (a SLURM command and its arguments), its output captured: the finished process
    when it exited 0.

    Raises:
        SlurmCommandError: the command is not on PATH, cannot be run, ran past ``timeout`` seconds,
            or exited non-zero (one line: :func:`missing` / :func:`failed`)."""
    tool = command[0]
    try:
        result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise SlurmCommandError(missing(tool)) from None
    except subprocess.TimeoutExpired:
        raise SlurmCommandError(f"SLURM's {tool} failed (no answer within {timeout:g} s)") from None
    except OSError as err:
        raise SlurmCommandError(f"SLURM's {tool} failed ({err.strerror or err})") from None
    if result.returncode != 0:
        raise SlurmCommandError(failed(tool, result.returncode, result.stderr or result.stdout))
    return result


def quietly(tool: str, call: Callable[[], Any]) -> Any:
    """``call()``, a library's call that runs ``tool`` (submitit's ``sbatch``), with what the library
    prints (the command's raw stderr, on a failure) kept off the terminal.

    Raises:
        SlurmCommandError: ``tool`` was not found, failed (one line with its exit status and the
            last line it wrote), or answered without a job id (submitit's ``FailedSubmissionError``);
            another error of the library is raised as it is."""
    import contextlib
    import io

    heard = io.StringIO()
    try:
        with contextlib.redirect_stdout(heard), contextlib.redirect_stderr(heard):
            return call()
    except FileNotFoundError:
        raise SlurmCommandError(missing(tool)) from None
    except Exception as err:
        cause = err.__cause__
        if isinstance(cause, subprocess.CalledProcessError):  # submitit's FailedJobError from the command
            raise SlurmCommandError(failed(tool, cause.returncode, cause.stderr or cause.output or str(err))) from None
        if isinstance(err, subprocess.CalledProcessError):
            raise SlurmCommandError(failed(tool, err.returncode, err.stderr or err.output)) from None
        if isinstance(err, OSError):
            raise SlurmCommandError(f"SLURM's {tool} failed ({err.strerror or err})") from None
        if type(err).__name__ == "FailedSubmissionError":  # no job id in what it answered
            answer = " ".join(str(err).split('"')[1].split()) if str(err).count('"') >= 2 else ""
            raise SlurmCommandError(f"SLURM's {tool} answered without a job id ({answer[:200] or 'nothing'})") from None
        raise
