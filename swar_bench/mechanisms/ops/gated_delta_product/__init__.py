"""Gated DeltaProduct: ``n_householder`` delta-rule steps per token (Siems et al., 2025,
"DeltaProduct: Improving State-Tracking in Linear RNNs via Householder Products", eq. 4).

    S_t = prod_{j=1..n_h} (I - beta_tj k_tj k_tj^T) exp(g_t) S_{t-1} + (their writes beta_tj k_tj v_tj^T)
    o_t = scale * S_t^T q_t                                              S: [K, V] per head

The decay is applied once per token, before its ``n_h`` steps. Layout as fla's
``fla.ops.gated_delta_product``: ``q [B, T, H, K]``, ``g [B, T, H]``, and the steps flattened as
rows ``t * n_h + j`` of ``k [B, T * n_h, H, K]``, ``v [B, T * n_h, H, V]``,
``beta [B, T * n_h, H]``.
"""

from swar_bench.mechanisms.ops.gated_delta_product.forms import (
    chunk_gated_delta_product,
    gated_delta_product,
    recurrent_gated_delta_product,
)

__all__ = ["chunk_gated_delta_product", "gated_delta_product", "recurrent_gated_delta_product"]
