"""Kimi Delta Attention: the gated delta rule with a decay per key channel (Kimi Team, 2025,
"Kimi Linear: An Expressive, Efficient Attention Architecture", eq. 1).

    S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T     S: [K, V] per head
    o_t = scale * S_t^T q_t

The decay is applied before the delta update, as in the paper and fla's
``fla.ops.kda.naive.naive_recurrent_kda`` (checked in the tests).
"""

from swar_bench.mechanisms.ops.kda.chunk import chunk_kda
from swar_bench.mechanisms.ops.kda.dispatch import kda
from swar_bench.mechanisms.ops.kda.recurrent import recurrent_kda

__all__ = ["chunk_kda", "kda", "recurrent_kda"]
