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


@functools.cache
def fla_module_importable(module: str) -> bool:
    """Whether the fla ops module ``module`` (e.g. ``"fla.ops.kda"``) imports: an older fla may
    lack an op that the kernels checked by :func:`fla_kernels_usable` do not cover."""
    try:
        importlib.import_module(module)
    except (ImportError, RuntimeError, AttributeError):
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


def use_fla(backend: str, x: torch.Tensor, module: str | None = None) -> bool:
    """Whether to run fla's kernels on ``x`` (and, when given, whether the fla ops ``module`` the
    caller needs imports); ValueError if ``backend="fla"`` and they cannot run."""
    if check_backend(backend) == "torch":
        return False
    usable = x.is_cuda and fla_kernels_usable()
    usable = usable and (module is None or fla_module_importable(module))
    if backend == "fla" and not usable:
        needs = "an importable fla package with triton" if module is None else f"an importable {module}"
        raise ValueError(f"backend='fla' needs a CUDA tensor and {needs}")
    return usable
