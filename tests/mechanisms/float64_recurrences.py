"""Slow, obviously-correct float64 recurrences straight from the papers' equations: the references
the ops' chunk and recurrent forms are tested against (layout ``[B, T, H, ...]``, state ``[K, V]``
per head as in fla: written ``k v^T``, read ``S^T q``)."""

import torch


def _f64(*xs):
    return [x.double() for x in xs]


def gla(q, k, v, g, scale, initial_state):
    """GLA (Yang et al., 2024, eq. 3): ``S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T``,
    ``o_t = scale * S_t^T q_t``."""
    q, k, v, g, S = _f64(q, k, v, g, initial_state)
    o = torch.zeros_like(v)
    for t in range(q.shape[1]):
        S = S * g[:, t, :, :, None].exp() + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


def relative_error(actual, expected):
    """``max |actual - expected| / max |expected|`` (float64)."""
    return ((actual.double() - expected).abs().max() / expected.abs().max()).item()
