"""Gated DeltaProduct as the gated delta rule over the flattened steps: token ``t``'s ``n_h``
steps are rows ``t * n_h .. t * n_h + n_h - 1``; the token's log decay sits on its first row
(0 on the others), its query on its last row (the output is read there, after all its steps).
The chunk and recurrent forms, their numerics and fla's kernels are then those of
``ops.gated_delta_rule``; fla's ``chunk_gated_delta_product`` kernel does the same flattening."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode, use_fla
from swar_bench.mechanisms.ops.gated_delta_rule import (
    chunk_gated_delta_rule,
    gated_delta_rule,
    recurrent_gated_delta_rule,
)
from swar_bench.mechanisms.ops.precision import float32_op


def _flatten(q: torch.Tensor, k, v, g, beta, n_householder: int):
    """``q [B, T, H, K]``, ``g [B, T, H]`` onto the ``T * n_h`` rows of ``k``; ValueError on
    inconsistent shapes."""
    if isinstance(n_householder, bool) or not isinstance(n_householder, int) or n_householder < 1:
        raise ValueError(f"n_householder must be a positive integer, got {n_householder!r}")
    B, T, H, K = q.shape if q.dim() == 4 else (None,) * 4
    rows = (B, T * n_householder, H) if T is not None else None
    if (
        rows is None
        or k.shape != (*rows, K)
        or v.shape[:3] != rows
        or beta.shape != rows
        or g.shape != (B, T, H)
    ):
        raise ValueError(
            f"expected q [B, T, H, K], g [B, T, H] and k [B, T*n_h, H, K], v [B, T*n_h, H, V], "
            f"beta [B, T*n_h, H] with n_h={n_householder}; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)}, beta {tuple(beta.shape)}"
        )
    q_rows = q.new_zeros(B, T, n_householder, H, K)
    q_rows[:, :, -1] = q
    g_rows = g.new_zeros(B, T, n_householder, H)
    g_rows[:, :, 0] = g
    return q_rows.view(B, -1, H, K), g_rows.view(B, -1, H)


def _token_outputs(o: torch.Tensor, n_householder: int) -> torch.Tensor:
    """``o [B, T * n_h, H, V]`` -> the rows read after each token's last step, ``[B, T, H, V]``."""
    B, rows, H, V = o.shape
    return o.view(B, rows // n_householder, n_householder, H, V)[:, :, -1].clone()


@float32_op
def recurrent_gated_delta_product(
    q, k, v, g, beta, n_householder: int, scale=None, initial_state=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Step by step (the streaming form).

    Args:
        q: ``[B, T, H, K]``; k: ``[B, T * n_h, H, K]`` (L2-normalised keys expected); v:
        ``[B, T * n_h, H, V]``; g: ``[B, T, H]`` log decay per token (<= 0); beta:
        ``[B, T * n_h, H]`` in [0, 1]; n_householder: steps per token n_h; scale: default
        ``K ** -0.5``; initial_state: ``[B, H, K, V]`` or None (zeros).

    Returns:
        ``(o [B, T, H, V]`` in ``v``'s dtype, ``final_state [B, H, K, V]`` float32).

    Raises:
        ValueError: on inconsistent shapes or a bad ``n_householder``.
    """
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    q_rows, g_rows = _flatten(q, k, v, g, beta, n_householder)
    o, S = recurrent_gated_delta_rule(q_rows, k, v, g_rows, beta, scale, initial_state)
    return _token_outputs(o, n_householder), S


@float32_op
def chunk_gated_delta_product(
    q, k, v, g, beta, n_householder: int, scale=None, initial_state=None, chunk_size: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel WY form over the ``T * n_h`` steps (``chunk_size`` counts steps); same
    arguments and result as :func:`recurrent_gated_delta_product`, up to float rounding."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    q_rows, g_rows = _flatten(q, k, v, g, beta, n_householder)
    o, S = chunk_gated_delta_rule(q_rows, k, v, g_rows, beta, scale, initial_state, chunk_size)
    return _token_outputs(o, n_householder), S


def gated_delta_product(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    n_householder: int,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    mode: str = "auto",
    chunk_size: int = 64,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch: ``mode`` "chunk" / "recurrent" / "auto" (recurrent for ``T < 16`` tokens, else
    chunk); ``backend`` "torch" / "fla" / "auto": on CUDA with fla installed, fla's Triton
    ``chunk_gated_delta_product`` (chunk) or ``fused_recurrent_gated_delta_rule`` over the
    flattened steps (recurrent), else the torch forms. Shapes as
    :func:`recurrent_gated_delta_product`; returns ``(o [B, T, H, V], final_state [B, H, K, V]
    float32)``.

    Raises:
        ValueError: on an unknown mode / backend, backend "fla" where the kernels cannot run,
            inconsistent shapes or a bad ``n_householder``.
    """
    mode = resolve_mode(mode, q.shape[1])
    if mode == "chunk" and use_fla(backend, q, "fla.ops.gated_delta_product"):
        from fla.ops.gated_delta_product import chunk_gated_delta_product as fla_op

        init = None if initial_state is None else initial_state.float()
        o, S = fla_op(
            q.contiguous(),
            k.contiguous(),
            v.contiguous(),
            g.float().contiguous(),
            beta.contiguous(),
            num_householder=n_householder,
            scale=scale,
            initial_state=init,
            output_final_state=True,
        )
        return o, S.float()
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    q_rows, g_rows = _flatten(q, k, v, g, beta, n_householder)
    o, S = gated_delta_rule(
        q_rows,
        k,
        v,
        g_rows,
        beta,
        scale=scale,
        initial_state=initial_state,
        mode=mode,
        chunk_size=chunk_size,
        backend=backend,
    )
    return _token_outputs(o, n_householder), S
