"""Choosing the form and backend of gated linear attention."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode, use_fla
from swar_bench.mechanisms.ops.gla.chunk import chunk_gla
from swar_bench.mechanisms.ops.gla.recurrent import recurrent_gla


def gla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 32,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gated linear attention, ``q, k, g [B, T, H, K]``, ``v [B, T, H, V]``, ``initial_state
    [B, H, K, V]`` -> ``(o [B, T, H, V], final_state [B, H, K, V] float32)``.

    ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else chunk); ``backend``
    "torch" / "fla" / "auto" (fla's Triton ``chunk_gla`` / ``fused_recurrent_gla`` on CUDA when
    fla is installed, else :func:`chunk_gla` / :func:`recurrent_gla`).

    Raises:
        ValueError: on an unknown mode / backend, backend "fla" where the kernels cannot run, or
            inconsistent shapes.
    """
    mode = resolve_mode(mode, q.shape[1])
    if use_fla(backend, q, "fla.ops.gla"):
        if mode == "chunk":
            from fla.ops.gla import chunk_gla as fla_op
        else:
            from fla.ops.gla import fused_recurrent_gla as fla_op
        init = None if initial_state is None else initial_state.float()
        q, k, v = (t.contiguous() for t in (q, k, v))
        o, S = fla_op(
            q, k, v, g.float().contiguous(), scale=scale, initial_state=init, output_final_state=True
        )
        return o, S.float()
    if mode == "chunk":
        return chunk_gla(q, k, v, g, scale=scale, initial_state=initial_state, chunk_size=chunk_size)
    return recurrent_gla(q, k, v, g, scale=scale, initial_state=initial_state)
