"""Choosing the form and backend of Kimi Delta Attention."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode, use_fla
from swar_bench.mechanisms.ops.kda.chunk import chunk_kda
from swar_bench.mechanisms.ops.kda.recurrent import recurrent_kda


def kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 32,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kimi Delta Attention, ``q, k, g [B, T, H, K]``, ``v [B, T, H, V]``, ``beta [B, T, H]``,
    ``initial_state [B, H, K, V]`` -> ``(o [B, T, H, V], final_state [B, H, K, V] float32)``.

    ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else chunk); ``backend``
    "torch" / "fla" / "auto" (fla's Triton ``chunk_kda`` / ``fused_recurrent_kda`` on CUDA when
    fla is installed, else :func:`chunk_kda` / :func:`recurrent_kda`).

    Raises:
        ValueError: on an unknown mode / backend, backend "fla" where the kernels cannot run, or
            inconsistent shapes.
    """
    mode = resolve_mode(mode, q.shape[1])
    if use_fla(backend, q, "fla.ops.kda"):
        if mode == "chunk":
            from fla.ops.kda import chunk_kda as fla_op
        else:
            from fla.ops.kda import fused_recurrent_kda as fla_op
        init = None if initial_state is None else initial_state.float()
        q, k, v, beta = (t.contiguous() for t in (q, k, v, beta))
        o, S = fla_op(
            q,
            k,
            v,
            g.float().contiguous(),
            beta,
            scale=scale,
            initial_state=init,
            output_final_state=True,
        )
        return o, S.float()
    if mode == "chunk":
        return chunk_kda(
            q, k, v, g, beta, scale=scale, initial_state=initial_state, chunk_size=chunk_size
        )
    return recurrent_kda(q, k, v, g, beta, scale=scale, initial_state=initial_state)
