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
