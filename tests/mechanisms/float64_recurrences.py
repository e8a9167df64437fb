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


EXTREME_GATES_TOL = 2e-5
"""Relative tolerance of a chunk form against the float64 recurrence under extreme gates."""


def assert_matches_float64(output, state, ref_output, ref_state, tol=EXTREME_GATES_TOL):
    """Finite ``output`` and ``state`` within ``tol`` (relative, :func:`relative_error`) of the
    float64 reference's."""
    assert torch.isfinite(output).all() and torch.isfinite(state).all()
    assert relative_error(output, ref_output) <= tol
    assert relative_error(state, ref_state) <= tol


def kda(q, k, v, g, beta, scale, initial_state):
    """Kimi Delta Attention (Kimi Team, 2025, eq. 1): decay per key channel, then the delta
    update ``S += beta k (v - S^T k)^T``, then ``o = scale * S^T q``."""
    q, k, v, g, beta, S = _f64(q, k, v, g, beta, initial_state)
    o = torch.zeros_like(v)
    for t in range(q.shape[1]):
        S = S * g[:, t, :, :, None].exp()
        u = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t]))
        S = S + k[:, t, :, :, None] * u[:, :, None, :]
        o[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


def gated_delta_product(q, k, v, g, beta, n_householder, scale, initial_state):
    """Gated DeltaProduct (Siems et al., 2025, eq. 4): per token, decay once, then
    ``n_householder`` delta updates with the rows ``t * n_h + j`` of ``k, v, beta``, then read."""
    q, k, v, g, beta, S = _f64(q, k, v, g, beta, initial_state)
    o = torch.zeros(q.shape[:3] + v.shape[-1:], dtype=torch.float64)
    for t in range(q.shape[1]):
        S = S * g[:, t, :, None, None].exp()
        for r in range(t * n_householder, (t + 1) * n_householder):
            u = beta[:, r, :, None] * (v[:, r] - torch.einsum("bhkv,bhk->bhv", S, k[:, r]))
            S = S + k[:, r, :, :, None] * u[:, :, None, :]
        o[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


def extreme_log_decays(shape, seed, n_erased, n_bursts, burst):
    """Log decays near 0 (gates near 1, ``logsigmoid(N(6, 1))``) with ``n_erased`` entries of
    ``-inf`` (forget everything) and ``n_bursts`` entries equal to ``burst``, at random places."""
    gen = torch.Generator().manual_seed(seed)
    g = torch.nn.functional.logsigmoid(torch.randn(shape, generator=gen) + 6.0)
    flat = g.view(-1)
    flat[torch.randint(0, flat.numel(), (n_erased,), generator=gen)] = float("-inf")
    flat[torch.randint(0, flat.numel(), (n_bursts,), generator=gen)] = burst
    return g


EXTREME_GATES = {
    "n_erased": (0, 6),
    "n_bursts": (0, 6),
    "burst": (-30.0, -300.0, -2000.0, -1e30),
}
"""Ranges of the hypothesis strategies for :func:`extreme_log_decays`."""


def selective_scan(
    u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, initial_state=None
):
    """Mamba's selective scan in the authors' layout (``u, delta, z [B, D, L]``, ``A [D, N]``,
    ``B, C [B, N, L]``, ``D, delta_bias [D]``), re-derived from the semantics of their
    ``selective_scan_ref`` (state-spaces/mamba, ``mamba_ssm/ops/selective_scan_interface.py``)
    in float64, plus an initial state ``[B, D, N]``: ``delta += delta_bias``, optional softplus,
    ``x_t = exp(delta_t A) x_{t-1} + delta_t B_t u_t``, ``y_t = C_t^T x_t + D u_t``,
    ``out = y * SiLU(z)``. Returns ``(out [B, D, L], last_state [B, D, N])``."""
    u, delta, A, B, C = _f64(u, delta, A, B, C)
    if delta_bias is not None:
        delta = delta + delta_bias.double()[:, None]
    if delta_softplus:
        delta = torch.nn.functional.softplus(delta)
    x = u.new_zeros(u.shape[0], A.shape[0], A.shape[1])
    if initial_state is not None:
        x = initial_state.double().clone()
    ys = []
    for i in range(u.shape[2]):
        x = (
            torch.exp(delta[:, :, i, None] * A) * x
            + (delta[:, :, i] * u[:, :, i])[..., None] * B[:, None, :, i]
        )
        ys.append(torch.einsum("bdn,bn->bd", x, C[:, :, i]))
    out = torch.stack(ys, dim=2) if ys else torch.zeros_like(u)
    if D is not None:
        out = out + u * D.double()[:, None]
    if z is not None:
        out = out * torch.nn.functional.silu(z.double())
    return out, x


def dplr(q, k, v, a, b, gk, scale, s0):
    """The paper's recurrence in float64, written out: S_t = (diag(w_t) + b_t a_t^T) S_{t-1} + k_t v_t^T."""
    q, k, v, a, b, gk, S = (x.double() for x in (q, k, v, a, b, gk, s0))
    outs = []
    for t in range(q.shape[1]):
        transition = (
            torch.diag_embed(gk[:, t].exp()) + b[:, t, ..., :, None] * a[:, t, ..., None, :]
        )
        S = transition @ S + k[:, t, ..., :, None] * v[:, t, ..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S))
    return torch.stack(outs, 1), S


def based(q, k, v, scale, split):
    """The definition in float64: normalised scores 1 + s + s^2/2 over all keys up to t, and the
    state after ``split`` tokens, ``sum phi(k_s) [v_s, 1]^T``."""
    q, k, v = (x.double() for x in (q, k, v))
    s = torch.einsum("bthk,bshk->bhts", q * scale, k)
    T = q.shape[1]
    scores = (1 + s + s.square() / 2) * torch.ones(T, T, dtype=torch.bool).tril()
    o = torch.einsum("bhts,bshv->bthv", scores, v) / (
        scores.sum(-1).transpose(1, 2)[..., None] + 1e-6
    )
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)[:, :split]
    k = k[:, :split]
    phi = torch.cat(  # [1, k, vec(k k^T) / sqrt 2]
        [torch.ones_like(k[..., :1]), k, (k[..., :, None] * k[..., None, :]).flatten(-2) / 2**0.5],
        dim=-1,
    )
    state = torch.einsum("bshf,bshv->bhfv", phi, v1)
    return o, state


def mlstm(q, k, v, log_f, i_pre, scale, state):
    """The paper's unstabilised equations (xLSTM eq. 19-27) in float64, starting from the
    stabilised state (C̃, ñ, m), i.e. C = C̃ e^m, n = ñ e^m:
    C_t = f C + i k v^T, n_t = f n + i k, h_t = C^T q / max(|n^T q|, 1)."""
    C, n, m = (s.double() for s in state)
    C, n = C * m.exp()[..., None, None], n * m.exp()[..., None]
    q, k, v, log_f, i_pre = (x.double() for x in (q, k, v, log_f, i_pre))
    outs = []
    for t in range(q.shape[1]):
        f, i = log_f[:, t].exp(), i_pre[:, t].exp()
        C = C * f[..., None, None] + (i[..., None] * k[:, t])[..., :, None] * v[:, t][..., None, :]
        n = n * f[..., None] + i[..., None] * k[:, t]
        q_t = q[:, t] * scale
        outs.append(
            torch.einsum("bhk,bhkv->bhv", q_t, C)
            / (q_t * n).sum(-1).abs().clamp(min=1.0)[..., None]
        )
    return torch.stack(outs, 1), (C, n)


def log_linear_attention(q, k, v, g, lam, scale=1.0):
    """The definition in float64: o_t = sum_{s<=t} exp(g_{s+1..t}) lam_t[bit_length(t ^ s)] (q_t.k_s) v_s,
    the decay summed term by term (a -inf anywhere in the segment gives exactly 0)."""
    q, k, v, g, lam = (x.double() for x in (q, k, v, g, lam))
    T = q.shape[1]
    o = torch.zeros(*q.shape[:3], v.shape[-1], dtype=torch.float64)
    for t in range(T):
        for s in range(t + 1):
            decay = g[:, s + 1 : t + 1].sum(1).exp()  # [B, H]
            weight = decay * lam[:, t, :, (t ^ s).bit_length()]
            score = (q[:, t] * k[:, s]).sum(-1) * scale
            o[:, t] += (weight * score)[..., None] * v[:, s]
    return o
