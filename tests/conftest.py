"""Shared settings for every test."""

import os

# OpenMP threads that spin while waiting make every step 10x slower when other processes share
# the cores; must be set before torch starts its thread pool (subprocesses inherit it).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest


@pytest.fixture(autouse=True)
def _no_stop_leaks_into_the_next_test():
    """A recorded Ctrl-C / SIGTERM (``swar_bench.utils.interrupts``) left behind by a test would
    stop the next test's training at its first step, in whichever test the worker runs next:
    fail the test that leaves one, and clear it."""
    from swar_bench.utils import interrupts

    yield
    left = interrupts.stopped()
    if left is not None:
        interrupts.clear()
        pytest.fail(f"the test left a recorded stop ({left.__name__}): it would stop the next test's run")


DISTRIBUTED_ENV = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "GLOBAL_RANK", "WORLD_SIZE", "GROUP_RANK",
                   "SWAR_BENCH_LAUNCHER_PID")
"""What Lightning's launchers and cluster environments (and ``swar_bench.utils.ranks``) set in
``os.environ`` as they run: a value left by one test (a SLURM environment's ``MASTER_ADDR=gpu01``)
sends a later distributed run in the same worker to a rendezvous that never comes."""


@pytest.fixture(autouse=True)
def _distributed_env_restored():
    """Put the variables of ``DISTRIBUTED_ENV`` back as they were before the test."""
    saved = {key: os.environ.get(key) for key in DISTRIBUTED_ENV}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
