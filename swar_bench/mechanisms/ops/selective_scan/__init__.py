"""Mamba's selective scan (S6; Gu & Dao, 2023, "Mamba: Linear-Time Sequence Modeling with
Selective State Spaces", Algorithm 2): a diagonal state-space recurrence per channel ``d`` with
``N`` states, its step ``delta`` chosen by the input.

    h_t[d, n] = exp(delta_t[d] A[d, n]) h_{t-1}[d, n] + delta_t[d] B_t[n] u_t[d]
    y_t[d]    = sum_n C_t[n] h_t[d, n] + D[d] u_t[d]

``A`` is discretised by zero-order hold, ``B`` by Euler (``delta * B``), as in the authors'
``selective_scan_ref`` (state-spaces/mamba) that the tests re-derive. fla has no kernel for it and
the authors' CUDA scan takes no initial state, so the torch forms run on every device.
"""

from swar_bench.mechanisms.ops.selective_scan.chunk import chunk_selective_scan
from swar_bench.mechanisms.ops.selective_scan.dispatch import selective_scan
from swar_bench.mechanisms.ops.selective_scan.recurrent import recurrent_selective_scan

__all__ = ["chunk_selective_scan", "recurrent_selective_scan", "selective_scan"]
