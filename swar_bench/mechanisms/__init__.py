"""The mechanism zoo: every model the benchmark compares, behind one ``ContextMechanism`` protocol.

Each class is a ``torch.nn.Module`` built as ``Cls(vocab_size=40, d_model=64, n_layers=2, ...)``
and selectable by ``class_path`` in a LightningCLI config (``configs/mechanisms/*.yaml``).
"""

from swar_bench.mechanisms.adapter import LossOnlyAdapter
from swar_bench.mechanisms.attention import CausalAttention, SlidingWindowAttention
from swar_bench.mechanisms.base import Block, Mixer, MixerLM, ShortConvolution
from swar_bench.mechanisms.based import Based
from swar_bench.mechanisms.delta_net import (
    DeltaNet,
    GatedDeltaNet,
    GatedDeltaProduct,
    KimiDeltaAttention,
)
from swar_bench.mechanisms.fla_layer import FlaLayer, FlaLM
from swar_bench.mechanisms.gla import HGRN2, GatedLinearAttention
from swar_bench.mechanisms.linear_attention import MultiScaleRetention, ScalarDecayLinearAttention
from swar_bench.mechanisms.log_linear_attention import LogLinearAttention
from swar_bench.mechanisms.mamba import Mamba
from swar_bench.mechanisms.mamba2 import Mamba2
from swar_bench.mechanisms.mlstm import mLSTM
from swar_bench.mechanisms.oracle import Oracle, OracleState
from swar_bench.mechanisms.protocol import (
    ContextMechanism,
    is_fixed_size,
    iter_state_tensors,
    map_state,
    measure_state_bytes,
    state_bytes_at,
)
from swar_bench.mechanisms.recurrent import GRU, LSTM
from swar_bench.mechanisms.rwkv7 import RWKV7
from swar_bench.mechanisms.zoo import ZOO

MECHANISMS = tuple(entry.name for entry in ZOO)
"""Names of the mechanism classes exported here, in the order the docs list them (``zoo.ZOO``)."""

__all__ = [
    "GRU",
    "HGRN2",
    "LSTM",
    "MECHANISMS",
    "RWKV7",
    "ZOO",
    "Based",
    "Block",
    "CausalAttention",
    "ContextMechanism",
    "DeltaNet",
    "FlaLM",
    "FlaLayer",
    "GatedDeltaNet",
    "GatedDeltaProduct",
    "GatedLinearAttention",
    "KimiDeltaAttention",
    "LogLinearAttention",
    "LossOnlyAdapter",
    "Mamba",
    "Mamba2",
    "Mixer",
    "MixerLM",
    "MultiScaleRetention",
    "Oracle",
    "OracleState",
    "ScalarDecayLinearAttention",
    "ShortConvolution",
    "SlidingWindowAttention",
    "is_fixed_size",
    "iter_state_tensors",
    "mLSTM",
    "map_state",
    "measure_state_bytes",
    "state_bytes_at",
]
