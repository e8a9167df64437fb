"""The mLSTM cell (Beck et al., 2024, "xLSTM: Extended Long Short-Term Memory", section 2.3 and
appendix A.2): a matrix memory with exponential input gate, normaliser and stabiliser states.

    C_t = f_t C_{t-1} + i_t k_t v_t^T       n_t = f_t n_{t-1} + i_t k_t      (C: [K, V] per head)
    h_t = C_t^T q_t / max(|n_t^T q_t|, 1)    i_t = exp(ĩ_t), f_t = exp(log_f_t)

stored stabilised (appendix A.2, eq. 49-57): ``m_t = max(log_f_t + m_{t-1}, ĩ_t)`` and
``C̃ = C e^{-m}``, ``ñ = n e^{-m}``, so ``h_t = C̃_t^T q_t / (max(|ñ_t^T q_t|, e^{-m_t}) + eps)``.
The paper stores ``C`` as ``[V, K]`` and scales ``k`` by ``K^-1/2``; here ``C`` is ``[K, V]``
(fla's layout) and ``scale`` multiplies ``q`` (the same scores). ``eps`` is added in the
stabilised scale as in the authors' kernels; ``eps = 0`` gives the paper's equation exactly.

Two exact forms: a token-by-token recurrence (streaming) and a chunk-parallel form (training).
Unrolled, ``m_t = max(b_t + m_0, max_{s<=t} (b_t - b_s + ĩ_s))`` with ``b`` the in-chunk sum of
``log_f``, so the chunk form computes the same stabiliser: the log weights
``D[t, s] = segsum(log_f)[t, s] + ĩ_s`` come from segment sums (``ops.chunking.segsum``), so
``log_f = -inf`` (forget everything) gives exact zeros, and only the scalar ``m`` and the state
are carried from chunk to chunk.

Layout: ``q, k [B, T, H, K]``, ``v [B, T, H, V]``, ``log_f, i_pre [B, T, H]``; state
``(C [B, H, K, V], n [B, H, K], m [B, H])``. Computation is float32; outputs take ``v``'s dtype.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.backend import resolve_mode
from swar_bench.mechanisms.ops.chunking import merge_chunks, segsum, split_chunks
from swar_bench.mechanisms.ops.precision import float32_op

MLSTMState = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _prepare(q, k, v, log_f, i_pre, scale, initial_state):
    if (
        q.dim() != 4
        or k.shape != q.shape
        or v.shape[:3] != q.shape[:3]
        or log_f.shape != q.shape[:3]
        or i_pre.shape != q.shape[:3]
    ):
        raise ValueError(
            f"expected q, k [B, T, H, K], v [B, T, H, V], log_f, i_pre [B, T, H]; got q "
            f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, log_f "
            f"{tuple(log_f.shape)}, i_pre {tuple(i_pre.shape)}"
        )
    B, _, H, K = q.shape
    if initial_state is None:
        C = q.new_zeros(B, H, K, v.shape[-1], dtype=torch.float32)
        state = (
            C,
            q.new_zeros(B, H, K, dtype=torch.float32),
            q.new_zeros(B, H, dtype=torch.float32),
        )
    else:
        state = tuple(s.float() for s in initial_state)
    scale = K**-0.5 if scale is None else scale
    return q.float() * scale, k.float(), v.float(), log_f.float(), i_pre.float(), state


def _readout(num, den, m, eps):
    """``num / (max(|den|, e^{-m}) + eps)``: the stabilised normaliser of eq. 57."""
    return num / (torch.maximum(den.abs(), torch.exp(-m)) + eps)[..., None]


@float32_op
def recurrent_mlstm(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_f: torch.Tensor,
    i_pre: torch.Tensor,
    scale: float | None = None,
    initial_state: MLSTMState | None = None,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, MLSTMState]:
    """Token-by-token stabilised recurrence (the streaming form).

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; log_f: ``[B, T, H]`` log forget gate (<= 0,
        e.g. ``logsigmoid``; -inf forgets everything); i_pre: ``[B, T, H]`` input-gate
        pre-activation ĩ (``i = exp(ĩ)``); scale: query scale, default ``K ** -0.5``;
        initial_state: ``(C, n, m)`` or None (zeros, as in the authors' code); eps: added to the
        stabilised normaliser.

    Returns:
        ``(h [B, T, H, V], (C [B, H, K, V], n [B, H, K], m [B, H]) float32)``.

    Raises:
        ValueError: on inconsistent shapes.
    """
    q, k, v_, log_f, i_pre, (C, n, m) = _prepare(q, k, v, log_f, i_pre, scale, initial_state)
    outs = []
    # unbind, not indexing: the backward of x[:, t] zero-fills a full-size gradient per token
    for q_t, k_t, v_t, f_t, i_t in zip(*(x.unbind(1) for x in (q, k, v_, log_f, i_pre))):
        m_new = torch.maximum(f_t + m, i_t)
        f_t, i_t = torch.exp(f_t + m - m_new), torch.exp(i_t - m_new)
        C = C * f_t[..., None, None] + (i_t[..., None] * k_t)[..., :, None] * v_t[..., None, :]
        n = n * f_t[..., None] + i_t[..., None] * k_t
        m = m_new
        num = torch.einsum("bhk,bhkv->bhv", q_t, C)
        outs.append(_readout(num, (q_t * n).sum(-1), m, eps))
    o = torch.stack(outs, dim=1) if outs else v_
    return o.to(v.dtype), (C, n, m)


@float32_op
def chunk_mlstm(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_f: torch.Tensor,
    i_pre: torch.Tensor,
    scale: float | None = None,
    initial_state: MLSTMState | None = None,
    eps: float = 1e-6,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, MLSTMState]:
    """Chunk-parallel form (the training form); same arguments and result as
    :func:`recurrent_mlstm`, up to float rounding, the stabiliser ``m`` included. ``T`` need not
    be a multiple of ``chunk_size`` (padding has ``i = 0``, ``f = 1``: no write, no decay).

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    q, k, v_, log_f, i_pre, (C, n, m) = _prepare(q, k, v, log_f, i_pre, scale, initial_state)
    T = q.shape[1]
    if T == 0:
        return v_.to(v.dtype), (C, n, m)
    pad = (-T) % chunk_size
    # padding must not write: ĩ = -inf there (a zero ĩ would move the stabiliser)
    i_pre = torch.nn.functional.pad(i_pre, (0, 0, 0, pad), value=float("-inf"))
    qc, kc, vc, fc, ic = (split_chunks(x, chunk_size) for x in (q, k, v_, log_f, i_pre))
    D = segsum(fc, dim=3) + ic[..., None, :]  # [B, H, n, C, C] log weight of key s at query t
    b = fc.cumsum(3)  # [B, H, n, C] log decay from the chunk start through t
    m_intra = D.amax(-1)  # [B, H, n, C] stabiliser from this chunk's keys alone
    # the last row's weights relative to its own maximum, so the state write is batched
    m_last = m_intra[..., -1:]
    m_last = torch.where(torch.isfinite(m_last), m_last, 0.0)  # a chunk that writes nothing
    w_last = torch.exp(D[..., -1, :] - m_last)  # [B, H, n, C]
    dC = (kc * w_last[..., None]).transpose(-1, -2) @ vc  # [B, H, n, K, V]
    dn = (kc * w_last[..., None]).sum(-2)  # [B, H, n, K]
    m_entering, C_entering, n_entering = [], [], []
    for b_end, m_in, dC_i, dn_i in zip(
        b[..., -1].unbind(2), m_intra[..., -1].unbind(2), dC.unbind(2), dn.unbind(2)
    ):
        m_entering.append(m)
        C_entering.append(C)
        n_entering.append(n)
        m_end = torch.maximum(b_end + m, m_in)
        carry = torch.exp(b_end + m - m_end)
        write = torch.exp(m_in - m_end)
        C = C * carry[..., None, None] + dC_i * write[..., None, None]
        n = n * carry[..., None] + dn_i * write[..., None]
        m = m_end
    state_log = b + torch.stack(m_entering, dim=2)[..., None]  # [B, H, n, C]
    m_all = torch.maximum(state_log, m_intra)
    scores = (qc @ kc.transpose(-1, -2)) * torch.exp(D - m_all[..., None])
    w_state = torch.exp(state_log - m_all)[..., None]
    num = scores @ vc + w_state * (qc @ torch.stack(C_entering, dim=2))
    den = scores.sum(-1) + w_state[..., 0] * (
        qc * torch.stack(n_entering, dim=2)[..., None, :]
    ).sum(-1)
    o = merge_chunks(_readout(num, den, m_all, eps), T)
    return o.to(v.dtype), (C, n, m)


def mlstm(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_f: torch.Tensor,
    i_pre: torch.Tensor,
    scale: float | None = None,
    initial_state: MLSTMState | None = None,
    eps: float = 1e-6,
    mode: str = "auto",
    chunk_size: int = 64,
) -> tuple[torch.Tensor, MLSTMState]:
    """Dispatch on ``mode``: "chunk" / "recurrent" / "auto" (recurrent for ``T < 16``, else
    chunk). Both are torch code and run on CUDA too (fla has no mLSTM kernel). Returns
    ``(h [B, T, H, V], (C, n, m))``."""
    if resolve_mode(mode, q.shape[1]) == "chunk":
        return chunk_mlstm(q, k, v, log_f, i_pre, scale, initial_state, eps, chunk_size)
    return recurrent_mlstm(q, k, v, log_f, i_pre, scale, initial_state, eps)
