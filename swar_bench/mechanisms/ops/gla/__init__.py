"""Gated linear attention: a per-channel data-dependent decay of the key dimension (Yang et al.,
2024, "Gated Linear Attention Transformers with Hardware-Efficient Training", eq. 3).

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T          S: [K, V] per head, g_t: [K] log decay
    o_t = scale * S_t^T q_t

HGRN2 is this recurrence with the key tied to the forget gate, ``k_t = 1 - exp(g_t)`` (Qin et al.,
2024). The same as fla's ``fla.ops.gla.naive.naive_recurrent_gla`` (checked in the tests).
"""

from swar_bench.mechanisms.ops.gla.chunk import chunk_gla
from swar_bench.mechanisms.ops.gla.dispatch import gla
from swar_bench.mechanisms.ops.gla.recurrent import recurrent_gla

__all__ = ["chunk_gla", "gla", "recurrent_gla"]
