"""Three element-wise pieces of the models with a hand-written backward: the causal depthwise
short convolution (+ SiLU), the L2 normalisation of q / k and the float32 RMSNorm.

Autograd differentiates each through a graph of many small ops (``K`` ``addcmul`` nodes each
broadcasting its weight gradient over ``[B, T, C]`` before a reduction; ``norm -> clamp_min ->
div`` with an expanded divisor; ``pow -> mean -> rsqrt -> mul -> mul``); on CPU those backward
graphs cost about as much as the forward of the projections around them (docs/BENCHMARKS.md,
"Frontier training throughput"). The ``torch.autograd.Function`` s here compute the same forward
values with the same ops in the same order (bitwise equal to the autograd versions) and write the
gradients directly:

* ``causal_conv``: ``grad_x`` and ``grad_state`` as ``K`` shifted multiply-adds of the incoming
  gradient, ``grad_w[c, j] = sum_{b,t} gy[b, t, c] * z[b, t + j, c]``, the SiLU derivative fused
  in (``aten::silu_backward`` on the saved pre-activation), over batch blocks of about
  ``_BLOCK`` elements so that the passes over one block stay in cache;
* ``l2_normalize``: ``y = x / max(||x||, eps)``, ``grad_x = (g - y <g, y>) / ||x||`` where the
  norm is at least ``eps`` and ``g / eps`` where the clamp holds (the branch of ``clamp_min``'s
  own derivative, which passes the gradient at ``||x|| == eps``);
* ``rms_norm``: ``y = w * x * r``, ``r = rsqrt(mean(x^2) + eps)``, ``grad_x = r (gh - xh
  mean(gh xh))`` with ``xh = x r``, ``gh = g w``; ``grad_w = sum g xh``. In float32 outside
  autocast only (elsewhere the ``nn.RMSNorm`` module itself runs): its forward is the ops of
  ``aten::rms_norm``'s CPU composite, bitwise.

The gradients equal autograd's within float32 rounding (the sums are taken in another order);
tests/mechanisms/test_fused_backward.py checks them with ``gradcheck`` in float64. All are
first-order only (``once_differentiable``): nothing in the benchmark differentiates twice.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

_BLOCK = 160_000  # elements of one batch block of the conv backward (640 KB in float32)


class _CausalConv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, state_t, w, activation):
        K, T = w.shape[1], x.shape[1]
        z = torch.cat([state_t, x], dim=1) if K > 1 else x  # [B, K-1+T, C]
        y = x * w[:, K - 1]  # the last tap meets the current input
        for j in range(K - 1):  # in place: the values of out-of-place addcmul, one buffer
            y.addcmul_(z[:, j : j + T], w[:, j])
        ctx.activation = activation
        ctx.save_for_backward(z, w, y if activation else None)
        return F.silu(y) if activation else y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        z, w, y = ctx.saved_tensors
        B, T, C = grad.shape
        K = w.shape[1]
        need_x, need_state, need_w = ctx.needs_input_grad[:3]
        grad_x = torch.empty_like(grad) if need_x else None
        grad_state = grad.new_zeros(B, K - 1, C) if need_state else None
        # the weight gradient summed over blocks in float32 at least (bfloat16 under autocast)
        acc = torch.promote_types(w.dtype, torch.float32)
        grad_w = w.new_zeros(K, C, dtype=acc) if need_w else None
        # batch blocks of about _BLOCK elements, so the ~10 passes below stay in the core's cache
        step = max(1, _BLOCK // max(1, T * C))
        prod = grad.new_empty(min(step, B), T, C)
        for b in range(0, B, step):
            g = grad[b : b + step]
            gy = torch.ops.aten.silu_backward(g, y[b : b + step]) if ctx.activation else g
            if need_x:  # grad_x[s] = sum_j gy[s + K-1 - j] * w[j]
                gx = torch.mul(gy, w[:, K - 1], out=grad_x[b : b + step])
                for j in range(max(0, K - T), K - 1):
                    shift = K - 1 - j
                    gx[:, : T - shift].addcmul_(gy[:, shift:], w[:, j])
            if need_state:  # grad_z[i] for the K-1 state rows i < K-1
                gs = grad_state[b : b + step]
                for j in range(K - 1):
                    rows = min(K - 1 - j, T)  # z rows j .. j+rows-1 meet gy rows 0 .. rows-1
                    gs[:, j : j + rows].addcmul_(gy[:, :rows], w[:, j])
            if need_w:  # grad_w[c, j] = sum_{b,t} gy[b, t, c] * z[b, t + j, c]
                p = prod[: gy.shape[0]]
                for j in range(K):
                    torch.mul(gy, z[b : b + step, j : j + T], out=p)
                    grad_w[j].add_(p.sum((0, 1), dtype=acc))
        return grad_x, grad_state, None if grad_w is None else grad_w.t().to(w.dtype), None


def causal_conv(
    x: torch.Tensor, state_t: torch.Tensor | None, w: torch.Tensor, activation: bool
) -> torch.Tensor:
    """``y[:, t, c] = sum_j w[c, j] * z[:, t + j, c]`` with ``z = [state_t; x]`` along time, then
    SiLU when ``activation``; a hand-written backward.

    Args:
        x: ``[B, T, C]`` input; ``state_t``: ``[B, K-1, C]``, the last ``K - 1`` inputs before
            ``x``, time-major, same dtype as ``x`` (None: zeros, the start of a sequence);
        w: ``[C, K]`` taps, same dtype as ``x``; activation: apply SiLU.

    Returns:
        ``[B, T, C]`` in ``x``'s dtype, bitwise equal to ``ShortConvolution``'s autograd form
        (``K`` shifted ``addcmul`` s from ``x * w[:, K-1]``, then ``F.silu``).

    Raises:
        ValueError: (one line) when the shapes do not fit together as above.
    """
    if x.dim() != 3 or w.dim() != 2 or w.shape[0] != x.shape[2] or w.shape[1] < 1:
        raise ValueError(
            f"causal_conv expects x [B, T, C] and w [C, K >= 1], got x {tuple(x.shape)}, "
            f"w {tuple(w.shape)}"
        )
    B, _, C = x.shape
    if state_t is None:
        state_t = x.new_zeros(B, w.shape[1] - 1, C)
    elif state_t.shape != (B, w.shape[1] - 1, C):
        raise ValueError(
            f"causal_conv expects state_t [B, K-1, C] = {[B, w.shape[1] - 1, C]}, got "
            f"{list(state_t.shape)}"
        )
    return _CausalConv.apply(x, state_t, w, activation)


class _L2Normalize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        norm = x.norm(2, -1, keepdim=True)  # exactly F.normalize(x, dim=-1, eps=eps)
        y = x / norm.clamp_min(eps)
        ctx.eps = eps
        ctx.save_for_backward(y, norm)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        y, norm = ctx.saved_tensors
        # the norm's path is open where clamp_min passes its gradient (norm >= eps)
        dot = torch.linalg.vecdot(grad, y).unsqueeze(-1).masked_fill_(norm < ctx.eps, 0.0)
        return torch.addcmul(grad, y, dot, value=-1).div_(norm.clamp_min(ctx.eps)), None


def l2_normalize(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``x / max(||x||_2, eps)`` over the last dim (``F.normalize(x, dim=-1, eps=eps)``, bitwise)
    with a hand-written backward; any shape ``[..., D]`` and floating dtype, same shape out."""
    return _L2Normalize.apply(x, eps)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        # the ops of aten::rms_norm (float32: no upcast), so the values are bitwise nn.RMSNorm's
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(eps))
        xh = x.mul(r)
        ctx.save_for_backward(xh, r, weight)
        return xh.mul(weight)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        xh, r, weight = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[1]:
            grad_w = (grad * xh).reshape(-1, xh.shape[-1]).sum(0)
        if ctx.needs_input_grad[0]:
            gh = grad * weight
            dot = torch.linalg.vecdot(gh, xh).unsqueeze(-1).div_(xh.shape[-1])
            grad_x = torch.addcmul(gh, xh, dot, value=-1).mul_(r)
        return grad_x, grad_w, None


def rms_norm(x: torch.Tensor, norm: nn.RMSNorm) -> torch.Tensor:
    """``norm(x)`` for an ``nn.RMSNorm`` over the last dim of ``x [..., D]``: the same values, with
    a hand-written backward when ``x`` and the weight are float32 plain tensors and autocast is
    off on ``x``'s device (the float32 training path); otherwise the module itself runs (bfloat16
    and autocast, a norm without weight or over several dims, sharded tensors)."""
    weight = norm.weight
    if (
        weight is None
        or tuple(norm.normalized_shape) != (x.shape[-1],)
        or x.dtype != torch.float32
        or weight.dtype != torch.float32
        or type(x) is not torch.Tensor
        or not isinstance(weight, nn.Parameter)
        or type(weight.data) is not torch.Tensor
        or torch.is_autocast_enabled(x.device.type)
    ):
        return norm(x)
    eps = torch.finfo(x.dtype).eps if norm.eps is None else norm.eps
    return _RMSNorm.apply(x, weight, eps)
