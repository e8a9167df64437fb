"""The mechanism zoo: every model the benchmark compares, behind one ``ContextMechanism`` protocol.

Each class is a ``torch.nn.Module`` built as ``Cls(vocab_size=40, d_model=64, n_layers=2, ...)``
and selectable by ``class_path`` in a LightningCLI config (``configs/mechanisms/*.yaml``).
"""

from swar_bench.mechanisms.base import Block, Mixer, MixerLM, ShortConvolution
from swar_bench.mechanisms.delta_net import DeltaNet, GatedDeltaNet
from swar_bench.mechanisms.oracle import Oracle, OracleState
from swar_bench.mechanisms.protocol import (
    ContextMechanism,
    iter_state_tensors,
    map_state,
    measure_state_bytes,
)
from swar_bench.mechanisms.recurrent import GRU, LSTM

__all__ = [
    "GRU",
    "LSTM",
    "Block",
    "ContextMechanism",
    "DeltaNet",
    "GatedDeltaNet",
    "Mixer",
    "MixerLM",
    "Oracle",
    "OracleState",
    "ShortConvolution",
    "iter_state_tensors",
    "map_state",
    "measure_state_bytes",
]
