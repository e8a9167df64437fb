"""The math of the linear-attention cells: a slow obviously-correct recurrence beside each fast
chunk-parallel form, plus a dispatcher that uses fla's Triton kernels on CUDA."""

from swar_bench.mechanisms.ops.gated_delta_rule import (
    chunk_gated_delta_rule,
    gated_delta_rule,
    recurrent_gated_delta_rule,
)
from swar_bench.mechanisms.ops.simple_gla import chunk_simple_gla, recurrent_simple_gla, simple_gla

__all__ = [
    "chunk_gated_delta_rule",
    "chunk_simple_gla",
    "gated_delta_rule",
    "recurrent_gated_delta_rule",
    "recurrent_simple_gla",
    "simple_gla",
]
