"""The ranks a distributed run starts on this machine end with the process that started them.

Lightning's subprocess launcher (``strategy="ddp"`` on one machine) starts ranks 1..N-1 as
children of rank 0's process (``subprocess.Popen`` of the same command, ``LOCAL_RANK`` set). Rank
0 killed outright (SIGKILL, the out-of-memory killer) leaves them waiting in the rendezvous or a
collective until ``--collective_timeout`` (600 s by default), each holding its memory: runs
killed one after another pile up ranks until the machine runs out of memory.

So a launcher records its pid in the environment its ranks inherit (:data:`LAUNCHER_PID`), and a
rank started by it asks the kernel for SIGTERM when that process ends (Linux
``prctl(PR_SET_PDEATHSIG, SIGTERM)``), and ends at once (exit 143) when its parent is already
gone. A rank stopped this way ends as one stopped by SIGTERM does, and a rank whose
rendezvous or collective fails (rank 0 closed its store, or stopped) ends quietly with 143
(:func:`launched_rank`; its C++ warnings are off, ``TORCH_CPP_LOG_LEVEL=ERROR``): rank 0 speaks
for the run. Elsewhere (no ``prctl``), or for ranks another launcher started (torchrun,
SLURM), nothing changes.
"""

from __future__ import annotations

import os
import signal

LAUNCHER_PID = "SWAR_BENCH_LAUNCHER_PID"
"""The environment variable holding the pid of the process that launches this run's ranks."""

PR_SET_PDEATHSIG = 1
"""Linux prctl option: the signal this process gets when its parent thread ends."""


def guard_rank() -> bool:
    """Call first in a command that may be a rank (``fit``, ``validate``, ``test``, ``predict``).

    A process without ``LOCAL_RANK`` (or with 0) is a launcher: it sets :data:`LAUNCHER_PID` to
    its pid for the ranks it starts, and returns False. A rank whose :data:`LAUNCHER_PID` is set
    gets SIGTERM when its parent ends, and returns True.

    Raises:
        SystemExit: (143) this rank's parent is no longer its launcher: it ended before the
            guard was set, so nothing runs for it.
    """
    launcher = os.environ.get(LAUNCHER_PID, "")
    if os.environ.get("LOCAL_RANK", "") in ("", "0") or not launcher.isdigit():
        os.environ[LAUNCHER_PID] = str(os.getpid())
        return False
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here (not Linux)
        return False
    if os.getppid() != int(launcher):
        raise SystemExit(128 + signal.SIGTERM)
    # rank 0 speaks for the run: this rank's C++ warnings of a store rank 0 closed are noise
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    return True


def launched_rank() -> bool:
    """This process is a rank that a launcher of ours started (``LOCAL_RANK`` > 0 and
    :data:`LAUNCHER_PID` set): when its rendezvous or a collective fails (``DistError``: rank 0
    closed its store, or stopped), rank 0 reports the run's end and this rank ends quietly."""
    launcher = os.environ.get(LAUNCHER_PID, "")
    return os.environ.get("LOCAL_RANK", "") not in ("", "0") and launcher.isdigit()
