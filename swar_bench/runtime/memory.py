"""Refuse a model whose parameters cannot fit in memory, before it is built.

``--model.mechanism.init_args.d_model=1000000000`` would otherwise end in an allocator error (or
the kernel's OOM killer) deep inside the constructor. :func:`check_fits` builds the mechanism on
PyTorch's ``meta`` device (shapes only, no storage), counts its parameters and compares the bytes
they need (fp32: 4 bytes each, times the copies a command holds: weights, gradients and Adam's two
moments for ``fit``) with the memory available (``MemAvailable`` of ``/proc/meminfo``, or the
free memory of the CUDA device), raising one line when they do not fit. A class that cannot be
built on ``meta`` is not checked here (its own constructor reports what it reports).
"""

from __future__ import annotations

import os
from typing import Any

FP32_BYTES = 4
"""Bytes per parameter value (torch.float32, the modules' default dtype)."""


def parameter_count(cls: type, init_args: dict[str, Any]) -> float | None:
    """Parameters of ``cls(**init_args)`` built on the ``meta`` device (no memory used);
    ``math.inf`` when a tensor's byte count overflows int64 (torch: "Storage size calculation
    overflowed"); None when it cannot be built there (bad arguments included: the real
    construction names them)."""
    import math
    import random

    import numpy as np
    import torch

    # a constructor may draw from any generator: the real model must see them untouched
    states = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    try:
        with torch.device("meta"):
            model = cls(**init_args)
        return int(sum(p.numel() for p in model.parameters()))
    except RuntimeError as err:
        return math.inf if "overflow" in str(err).lower() else None
    except Exception:  # noqa: BLE001 - not buildable on meta: left to the real constructor
        return None
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])


def available_bytes(cuda: bool = False) -> int | None:
    """Memory a new model can take: the free memory of the current CUDA device (``cuda``), else
    ``MemAvailable`` of ``/proc/meminfo`` (Linux); None when unknown."""
    if cuda:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.mem_get_info()[0])
        return None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return None


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} EiB"


def check_fits(cls: type, init_args: dict[str, Any], what: str, copies: int = 4, cuda: bool = False) -> None:
    """Raise ValueError (one line naming ``what``, the parameter count, the bytes needed and the
    bytes available) when ``copies`` fp32 copies of ``cls(**init_args)``'s parameters exceed the
    available memory (:func:`available_bytes`). ``copies``: 4 for training with Adam (weights,
    gradients, two moments), 1 to evaluate. Nothing is checked when the count or the memory is
    unknown."""
    count = parameter_count(cls, init_args)
    have = available_bytes(cuda)
    if count is None or have is None:
        return
    if count == float("inf"):
        raise ValueError(
            f"{what}: a parameter tensor's size overflows 64-bit byte counts, far more than the {_size(have)} of "
            f"{'GPU memory' if cuda else 'memory'} available; expected a smaller model (d_model, n_layers, vocab_size)"
        )
    need = count * FP32_BYTES * copies
    if need > have:
        held = "weights, gradients and Adam's two moments" if copies == 4 else f"{copies} fp32 cop{'y' if copies == 1 else 'ies'}"
        raise ValueError(
            f"{what}: {count:,} parameters need {_size(need)} ({held}), more than the {_size(have)} of "
            f"{'GPU memory' if cuda else 'memory'} available; expected a smaller model (d_model, n_layers, vocab_size)"
        )
