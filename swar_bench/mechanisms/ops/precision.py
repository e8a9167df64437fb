"""Float32 cells under mixed precision: the chunk and recurrent forms of these ops (and the GRU /
LSTM mixers) run in float32 inside a ``torch.autocast`` region (Lightning's
``trainer.precision: bf16-mixed``).

Autocast would run every matmul of a chunk form in bfloat16 (unit roundoff 2^-8): the ``[C, C]``
decay and score products, the triangular solve's right-hand side and the state update
``S <- S * decay + K^T V`` would each round to 8 bits, and the state would drift over a stream.
The forms are written for float32 (their error bounds, tests/mechanisms/test_chunking.py, assume
it), so under autocast they run with autocast off and their floating inputs cast to float32 (the
recurrent state is float32 in every precision, as in fla's kernels, which accumulate the chunk
products and carry the state in float32 whatever the input dtype). Only the projections, the MLP
and the head around them take bfloat16. Outside autocast nothing changes: a call is passed through
untouched, so float32 training and streaming exactness are exactly as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])


def _device_type(args: tuple, kwargs: dict) -> str | None:
    """The device type of the first tensor among the arguments (None when there is none)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device.type
    return None


def _to_float32(value: Any) -> Any:
    """A floating tensor as float32; tuples and lists element-wise (a state may be a tuple);
    anything else unchanged (integer tensors such as a stream position, sizes, flags)."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, tuple | list):
        return type(value)(_to_float32(v) for v in value)
    return value


def float32_op(fn: F) -> F:
    """Decorator: ``fn`` runs in float32 with autocast off when called inside an autocast region
    on its tensors' device (floating tensor arguments cast to float32, so its outputs are float32);
    outside autocast the call is passed through unchanged."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        device = _device_type(args, kwargs)
        if device is None or not torch.is_autocast_enabled(device):
            return fn(*args, **kwargs)
        with torch.autocast(device_type=device, enabled=False):
            return fn(*_to_float32(args), **{k: _to_float32(v) for k, v in kwargs.items()})

    wrapper.float32_op = True  # type: ignore[attr-defined]  (tests find the wrapped forms by it)
    return wrapper  # type: ignore[return-value]
