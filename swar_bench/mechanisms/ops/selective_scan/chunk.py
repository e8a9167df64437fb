"""The chunk-parallel selective scan (the training form).

The recurrence is diagonal (an elementwise product per ``(d, n)``), so it splits exactly at chunk
boundaries: ``h_i = h_i^local + (prod_{j <= i} a_j) h_start`` where ``h^local`` is the scan of the
chunk from a zero state. The local scans and running decay products of all chunks run together,
one step per position in the chunk (``C`` steps on ``[B, T / C, D, N]`` tensors); then the
``T / C`` chunk starts are carried sequentially, and every position gets its start's share in
one batched product. ``C + T / C`` sequential steps instead of ``T``; the decays are multiplied
in linear space, never divided or differenced, so a log decay of ``-inf`` (a decay of 0) and large
bursts stay exact. (``torch.cumprod`` for the running products measured slower: its backward
must handle zeros.) The scan is elementwise with no matmul to batch, so on a CPU this form is
memory-bound and no faster than the recurrence (docs/BENCHMARKS.md); it needs ``C + T / C``
sequential steps instead of ``T``, which is what a GPU run is bound by.
"""

from __future__ import annotations

import torch

from swar_bench.mechanisms.ops.precision import float32_op
from swar_bench.mechanisms.ops.selective_scan.recurrent import discretize, readout


@float32_op
def chunk_selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor | None = None,
    initial_state: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk-parallel form; same arguments and result as
    :func:`~swar_bench.mechanisms.ops.selective_scan.recurrent.recurrent_selective_scan`, up to
    float rounding. ``T`` need not be a multiple of ``chunk_size`` (padding with decay 1 and
    write 0 leaves the state unchanged).

    Raises:
        ValueError: on inconsistent shapes or ``chunk_size < 1``.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    decay, write, h = discretize(u, delta, A, B, initial_state)
    if C.shape != B.shape:
        raise ValueError(f"expected C like B {tuple(B.shape)}, got {tuple(C.shape)}")
    Bsz, T, D_in, N = decay.shape
    if T == 0:
        return u.new_zeros(u.shape), h
    n = -(-T // chunk_size)
    pad = n * chunk_size - T
    decay = torch.nn.functional.pad(decay, (0, 0, 0, 0, 0, pad), value=1.0)
    write = torch.nn.functional.pad(write, (0, 0, 0, 0, 0, pad))
    # [B, n, C, D, N] -> per position in the chunk, all chunks at once
    decay = decay.view(Bsz, n, chunk_size, D_in, N)
    write = write.view(Bsz, n, chunk_size, D_in, N)
    local, running = torch.zeros_like(write[:, :, 0]), torch.ones_like(decay[:, :, 0])
    locals_, runnings = [], []
    for a_i, b_i in zip(decay.unbind(2), write.unbind(2)):
        local = a_i * local + b_i
        running = running * a_i
        locals_.append(local)
        runnings.append(running)
    local, running = torch.stack(locals_, dim=2), torch.stack(runnings, dim=2)
    starts = []
    for local_end, running_end in zip(local[:, :, -1].unbind(1), running[:, :, -1].unbind(1)):
        starts.append(h)
        h = local_end + running_end * h
    states = local + running * torch.stack(starts, dim=1)[:, :, None]
    states = states.view(Bsz, n * chunk_size, D_in, N)[:, :T]
    return readout(states, C, u, D, u.dtype), h
