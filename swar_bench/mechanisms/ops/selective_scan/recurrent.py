"""The token-by-token selective scan (the streaming form)."""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.precision import float32_op


def discretize(u, delta, A, B, initial_state):
    """Check shapes and return ``(decay, write, h0)``: ``decay = exp(delta A)`` and
    ``write = delta B u``, both ``[B, T, D, N]`` float32, and the float32 start state
    ``[B, D, N]`` (zeros when ``initial_state`` is None).

    Raises:
        ValueError: unless ``u, delta [B, T, D]``, ``A [D, N]``, ``B [B, T, N]`` and
            ``initial_state [B, D, N]`` or None.
    """
    Bsz, T, D = u.shape if u.dim() == 3 else (None, None, None)
    N = A.shape[-1] if A.dim() == 2 else None
    if (
        D is None
        or N is None
        or delta.shape != u.shape
        or A.shape != (D, N)
        or B.shape != (Bsz, T, N)
        or (initial_state is not None and initial_state.shape != (Bsz, D, N))
    ):
        raise ValueError(
            f"expected u, delta [B, T, D], A [D, N], B, C [B, T, N] and initial_state [B, D, N] "
            f"or None; got u {tuple(u.shape)}, delta {tuple(delta.shape)}, A {tuple(A.shape)}, "
            f"B {tuple(B.shape)}, initial_state "
            f"{None if initial_state is None else tuple(initial_state.shape)}"
        )
    u, delta, A, B = (x.float() for x in (u, delta, A, B))
    decay = torch.exp(delta[..., None] * A)
    write = (delta * u)[..., None] * B[:, :, None, :]
    if initial_state is None:
        return decay, write, u.new_zeros(Bsz, D, N)
    return decay, write, initial_state.float()


def readout(h, C, u, D_skip, dtype):
    """``y [B, T, D] = sum_n C[n] h[d, n] + D[d] u[d]`` in ``dtype``, from ``h [B, T, D, N]``."""
    y = torch.einsum("btdn,btn->btd", h, C.float())
    if D_skip is not None:
        y = y + u.float() * D_skip.float()
    return y.to(dtype)


@float32_op
def recurrent_selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token by token.

    Args:
        u: ``[B, T, D]`` input; delta: ``[B, T, D]`` step (> 0, after any bias and softplus);
        A: ``[D, N]`` (< 0; ``delta * A`` is the log decay); B, C: ``[B, T, N]``;
        D: ``[D]`` skip or None; initial_state: ``[B, D, N]`` or None (zeros).

    Returns:
        ``(y [B, T, D]`` in ``u``'s dtype, ``final_state [B, D, N]`` float32); computed in
        float32.

    Raises:
        ValueError: on inconsistent shapes.
    """
    decay, write, h = discretize(u, delta, A, B, initial_state)
    if C.shape != B.shape:
        raise ValueError(f"expected C like B {tuple(B.shape)}, got {tuple(C.shape)}")
    states = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for a_t, b_t in zip(decay.unbind(1), write.unbind(1)):
        h = a_t * h + b_t
        states.append(h)
    if not states:
        return u.new_zeros(u.shape), h
    return readout(torch.stack(states, dim=1), C, u, D, u.dtype), h
