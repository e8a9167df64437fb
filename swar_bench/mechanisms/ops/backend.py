"""Whether fla's Triton kernels can run here (fla importable and CUDA available)."""

from __future__ import annotations

import functools
import importlib.util

import torch


@functools.lru_cache(maxsize=1)
def fla_kernels_usable() -> bool:
    """True when ``fla`` and ``triton`` are importable and a CUDA device exists."""
    if not torch.cuda.is_available():
        return False
    if importlib.util.find_spec("fla") is None or importlib.util.find_spec("triton") is None:
        return False
    try:
        import fla.ops.gated_delta_rule
        import fla.ops.simple_gla  # noqa: F401
    except (ImportError, RuntimeError, AttributeError):  # a broken install: use the torch path
        return False
    return True
