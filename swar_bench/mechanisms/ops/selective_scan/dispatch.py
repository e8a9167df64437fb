"""Choosing the form of the selective scan."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode
from swar_bench.mechanisms.ops.selective_scan.chunk import chunk_selective_scan
from swar_bench.mechanisms.ops.selective_scan.recurrent import recurrent_selective_scan


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The selective scan, ``u, delta [B, T, D]``, ``A [D, N]``, ``B, C [B, T, N]``, ``D [D]``,
    ``initial_state [B, D, N]`` -> ``(y [B, T, D], final_state [B, D, N] float32)``; ``mode``
    "chunk" / "recurrent" / "auto". "auto" is the recurrence on a CPU (measured faster there:
    the scan is elementwise and memory-bound, docs/BENCHMARKS.md) and elsewhere the chunk form
    from 16 tokens on (``C + T / C`` sequential steps instead of ``T``). Torch on every device
    (see the package docstring).

    Raises:
        ValueError: on an unknown mode or inconsistent shapes.
    """
    resolved = resolve_mode(mode, u.shape[1])
    if mode == "auto" and u.device.type == "cpu":
        resolved = "recurrent"
    if resolved == "chunk":
        return chunk_selective_scan(u, delta, A, B, C, D, initial_state, chunk_size)
    return recurrent_selective_scan(u, delta, A, B, C, D, initial_state)
