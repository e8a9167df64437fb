"""`study run --launcher slurm` on a machine where SLURM's commands are missing or fail: one line
naming `--launcher slurm`, the command, its exit status and the last line it wrote, never its raw
output (reported: `squeue: fatal: Could not establish a configuration source` printed as it came,
and sbatch's stderr printed by submitit before the study's own line), and nothing left behind.
The SLURM commands here are stand-in scripts on PATH."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study.cli import main
from swar_bench.utils import slurm_commands
from swar_bench.utils.slurm_commands import SlurmCommandError
from tests.study.test_launchers import _study

EXPECTED = "expected a SLURM login node where sbatch and squeue answer (or --launcher local)"
FATAL = "Could not establish a configuration source"
TASKS = 8  # the selection fits of tests.study.test_launchers._study: what the first sbatch submits
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _tool(folder: Path, name: str, status: int = 0, said: list[str] = ()) -> None:
    """A stand-in ``name`` in ``folder`` that writes the lines ``said`` to stderr and exits ``status``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.said").write_text("".join(f"{line}\n" for line in said))
    script = folder / name
    script.write_text(f"#!/bin/sh\n/bin/cat '{folder / f'{name}.said'}' >&2\nexit {status}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _run_slurm(capsys, study: Path) -> tuple[int, str, str]:
    status = main(["run", str(study), "--launcher", "slurm", "--no-wait"])
    out, err = capsys.readouterr()
    return status, out, err


def _nothing_made(tmp: Path) -> bool:
    return not (tmp / "runs").exists() and not (tmp / "records").exists()


# ----------------------------------------------------------------- the reported cases


def test_a_failing_squeue_is_one_line_naming_the_launcher(tmp_path, monkeypatch, capsys):
    """The reported case: squeue on a machine that is no SLURM login node. Its own
    ``squeue: error: ...`` lines stay off the terminal; the study says it in one line."""
    bin_ = tmp_path / "bin"
    _tool(bin_, "sbatch")
    _tool(bin_, "srun")
    _tool(bin_, "squeue", 1, ["squeue: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host",
                              f"squeue: fatal: {FATAL}"])
    monkeypatch.setenv("PATH", str(bin_))
    study = _study(tmp_path)
    assert _run_slurm(capsys, study) == (2, "", (
        f"swar-bench study run: error: --launcher slurm: SLURM's squeue failed (exit 1: squeue: fatal: {FATAL}); "
        f"{EXPECTED}\n"))
    assert _nothing_made(tmp_path)


def test_a_failing_sbatch_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """sbatch failing: submitit printed its stderr (``sbatch: fatal: ...``) before the study's
    line, and left its pickles in <out>/slurm. Now one line, and no folder."""
    pytest.importorskip("submitit")
    bin_ = tmp_path / "bin"
    _tool(bin_, "squeue")
    _tool(bin_, "srun")
    _tool(bin_, "sbatch", 1, [f"sbatch: fatal: {FATAL}"])
    monkeypatch.setenv("PATH", str(bin_))
    study = _study(tmp_path)
    status, out, err = _run_slurm(capsys, study)
    assert (status, out) == (2, "")
    assert err == (f"swar-bench study run: error: --launcher slurm: submitting {TASKS} task(s): SLURM's sbatch failed "
                   f"(exit 1: sbatch: fatal: {FATAL}); {EXPECTED}\n")
    assert _nothing_made(tmp_path)


@pytest.mark.parametrize("present", [(), ("sbatch",), ("squeue",), ("sbatch", "squeue"), ("squeue", "srun")])
def test_slurm_commands_not_on_path_are_one_line(tmp_path, monkeypatch, capsys, present):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in present:
        _tool(bin_, name)
    monkeypatch.setenv("PATH", str(bin_))
    absent = next(t for t in ("sbatch", "squeue", "srun") if t not in present)
    assert _run_slurm(capsys, _study(tmp_path)) == (
        2, "", f"swar-bench study run: error: --launcher slurm: SLURM's {absent} was not found on PATH; {EXPECTED}\n")
    assert _nothing_made(tmp_path)


# ----------------------------------------------------------------- the kind


LINE = st.from_regex(r"[a-z][a-z0-9 :._-]{0,40}[a-z0-9]", fullmatch=True)


@SETTINGS
@given(tool=st.sampled_from(["squeue", "sbatch"]), status=st.integers(1, 255),
       said=st.lists(LINE, max_size=3), blank_end=st.booleans())
def test_any_failing_slurm_command_is_one_line_quoting_its_last_line(tmp_path_factory, monkeypatch, capsys, tool,
                                                                     status, said, blank_end):
    """Whatever squeue or sbatch writes and whatever it exits with: exit 2, stdout empty, stderr
    one line naming --launcher slurm, the command, its exit status and the last line it wrote
    (none of its other lines), and no folder made."""
    if tool == "sbatch":
        pytest.importorskip("submitit")
    tmp = tmp_path_factory.mktemp("slurm")
    bin_ = tmp / "bin"
    _tool(bin_, tool, status, [*said, *([""] if blank_end else [])])
    for other in {"sbatch", "squeue", "srun"} - {tool}:
        _tool(bin_, other)
    monkeypatch.setenv("PATH", str(bin_))
    code, out, err = _run_slurm(capsys, _study(tmp))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    doing = f"submitting {TASKS} task(s): " if tool == "sbatch" else ""
    quoted = f": {said[-1]}" if said else ""
    assert err == f"swar-bench study run: error: --launcher slurm: {doing}SLURM's {tool} failed (exit {status}{quoted}); {EXPECTED}\n"
    assert _nothing_made(tmp)


@SETTINGS
@given(tool=st.sampled_from(["squeue", "sbatch", "srun", "scontrol"]), status=st.integers(0, 255), said=st.lists(LINE, max_size=3),
       present=st.booleans())
def test_every_slurm_command_runs_or_fails_in_one_line(tmp_path_factory, monkeypatch, tool, status, said, present):
    """``slurm_commands.run``, what squeue and scontrol (a requeue) go through: the finished
    process when the command exits 0, else one line (not found, or its exit status and last line)."""
    bin_ = tmp_path_factory.mktemp("bin")
    if present:
        _tool(bin_, tool, status, said)
    monkeypatch.setenv("PATH", str(bin_))
    if present and status == 0:
        assert slurm_commands.run([tool, "x"], timeout=60).returncode == 0
        return
    with pytest.raises(SlurmCommandError) as err:
        slurm_commands.run([tool, "x"], timeout=60)
    line = str(err.value)
    assert "\n" not in line
    if not present:
        assert line == f"SLURM's {tool} was not found on PATH"
    else:
        assert line == f"SLURM's {tool} failed (exit {status}{f': {said[-1]}' if said else ''})"
