"""Shared settings for every test."""

import os

# OpenMP threads that spin while waiting make every step 10x slower when other processes share
# the cores; must be set before torch starts its thread pool (subprocesses inherit it).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
