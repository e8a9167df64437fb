"""The exec stub of a study's children (``swar_bench.study.children``): the command runs in the
stub's own process with its argv exactly as given; a child whose parent is gone runs nothing; a
parent killed by SIGKILL takes the child with it; without ``prctl`` the stub only execs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study.children import STUB, guarded, launch
from tests.study.test_study_signals import _alive, _wait_ended

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ROOT = Path(__file__).resolve().parents[2]
# prints its pid, then its argv as the kernel holds it (NUL-separated)
SHOW_ARGV = (
    "import os, sys; sys.stdout.buffer.write(str(os.getpid()).encode() + b'\\n' + "
    "open('/proc/self/cmdline', 'rb').read())"
)


def _argv_seen(command: list[str]) -> tuple[int, int, list[bytes]]:
    """``(Popen pid, the program's pid, the program's argv)`` of ``command`` run through the stub."""
    proc = launch(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")
    pid, _, cmdline = out.partition(b"\n")
    return proc.pid, int(pid), cmdline.split(b"\0")[:-1]


def test_a_fit_command_runs_with_its_arguments_unchanged():
    # the shape of the runner's fit command: spaces, '=', dashes, a unicode path
    args = [
        "fit",
        "--config",
        "configs/a b/ü.yaml",
        "--model.lr=0.001",
        "--data.seed",
        "-1",
        "",
        "--",
    ]
    command = [sys.executable, "-c", SHOW_ARGV, *args]
    popen_pid, pid, argv = _argv_seen(command)
    assert pid == popen_pid  # exec'd in place: the runner's Popen is the fit itself
    assert argv == [os.fsencode(a) for a in command]


argument = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12
    ),
    st.sampled_from(
        ["-", "--", "-c", "-m", "--x=y z", " ", "", "ü ñ 漢字", "$HOME", "'\"", "a\nb", "*"]
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.lists(argument, max_size=6))
def test_the_stub_execs_any_argv_exactly(args):
    command = [sys.executable, "-c", SHOW_ARGV, *args]
    popen_pid, pid, argv = _argv_seen(command)
    assert pid == popen_pid
    assert argv == [os.fsencode(a) for a in command]


def test_a_child_whose_parent_is_gone_runs_nothing(tmp_path):
    # the parent died between the fork and the guard: the stub exits 143 without running the command
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    touched = tmp_path / "ran"
    touch = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(touched)]
    assert subprocess.run(guarded(touch, parent=int(ended)), check=False).returncode == 143
    assert not touched.exists()
    # the same command, guarded for its real parent, runs
    assert subprocess.run(guarded(touch), check=False).returncode == 0 and touched.exists()


def test_without_prctl_the_stub_only_execs(tmp_path):
    # not Linux: no prctl in the C library; the command still runs, unchanged
    no_prctl = (
        "import ctypes, sys\n"
        "ctypes.CDLL = lambda *a, **k: object()\n"
        "sys.argv = ['-c', *sys.argv[1:]]\n"
        "exec(compile(sys.argv.pop(1), '<stub>', 'exec'))\n"
    )
    command = [sys.executable, "-c", SHOW_ARGV, "a b", "--c"]
    out = subprocess.run(
        [sys.executable, "-c", no_prctl, STUB, str(os.getpid()), *command],
        check=True,
        capture_output=True,
    ).stdout
    assert out.partition(b"\n")[2].split(b"\0")[:-1] == [os.fsencode(a) for a in command]


def test_an_empty_command_is_refused_in_one_line():
    with pytest.raises(
        ValueError, match=r"^command=\[\] is empty; expected a program and its arguments$"
    ):
        guarded([])


LAUNCHER = """import subprocess, sys, threading
from swar_bench.study.children import launch
def start():  # as the runner does: a worker thread starts the child and waits for it
    launch([sys.executable, "-c", sys.argv[1], sys.argv[2]]).wait()
threading.Thread(target=start).start()
"""
WAITS = "import os, signal, sys; open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()"


def test_a_child_ends_with_its_killed_parent(tmp_path):
    pid_file = tmp_path / "child.pid"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    parent = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, WAITS, str(pid_file)], cwd=ROOT, env=env
    )
    child = None
    try:
        while (
            not pid_file.is_file() or not pid_file.read_text()
        ):  # the child's own event: its pid written
            try:
                parent.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(
                f"the parent ended (exit {parent.returncode}) before its child started"
            )
        child = int(pid_file.read_text())
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=60)
        assert _wait_ended(child, limit_s=60), "the child ran on after its parent was killed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
