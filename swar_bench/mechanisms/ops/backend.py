"""Choosing the form (chunk / recurrent) and the backend (torch / fla's Triton kernels) of an op."""

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


MODES = ("auto", "chunk", "recurrent")
BACKENDS = ("auto", "torch", "fla")
RECURRENT_BELOW = 16
"""``mode="auto"`` runs the recurrent form for fewer tokens than this, the chunk form otherwise."""


def check_mode(mode: str) -> str:
    """``mode`` if it is one of ``MODES``, else ValueError."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def check_backend(backend: str) -> str:
    """``backend`` if it is one of ``BACKENDS``, else ValueError."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def resolve_mode(mode: str, seq_len: int) -> str:
    """ "chunk" or "recurrent" for a call on ``seq_len`` tokens."""
    if check_mode(mode) == "auto":
        return "recurrent" if seq_len < RECURRENT_BELOW else "chunk"
    return mode


def use_fla(backend: str, x: torch.Tensor) -> bool:
    """Whether to run fla's kernels on ``x``; ValueError if ``backend="fla"`` and they cannot run."""
    if check_backend(backend) == "torch":
        return False
    usable = x.is_cuda and fla_kernels_usable()
    if backend == "fla" and not usable:
        raise ValueError(
            "backend='fla' needs a CUDA tensor and an importable fla package with triton"
        )
    return usable
