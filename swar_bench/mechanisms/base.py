"""The shared language-model backbone every learned mechanism plugs its mixer into.

    input_ids [B, T] -> embedding -> L x [RMSNorm, mixer, residual, RMSNorm, MLP, residual]
                     -> RMSNorm -> head -> logits [B, T, vocab_size]

(the pre-norm transformer layout of nanoGPT / fla's models, with the attention replaced by a
``Mixer``). A mechanism is ``MixerLM`` plus a ``mixer_factory``; the state is a tuple with one
entry per block (the mixer's own state). The blocks live in ``self.blocks`` (an
``nn.ModuleList``) so a parallelism plan can ``fully_shard`` each one from outside.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from swar_bench.mechanisms.ops.fused_backward import causal_conv, rms_norm
from swar_bench.mechanisms.protocol import State, map_state

DEFAULT_STATE_DTYPE = torch.float32


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an int >= 1, else raise ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_sizes(**sizes: object) -> None:
    """``check_positive_int`` on each ``name=value`` in the order given: a mechanism calls it on
    all its size arguments first, so a non-positive size is refused by its own name before any
    check between sizes (``n_heads`` divides ``d_model``) could blame another one."""
    for name, value in sizes.items():
        check_positive_int(name, value)


def dtype_bytes(dtype: torch.dtype | None) -> int:
    """Bytes per element of ``dtype`` (float32 when None)."""
    return torch.empty((), dtype=dtype or DEFAULT_STATE_DTYPE).element_size()


class Mixer(nn.Module):
    """A sequence mixer with an explicit state: what a new mechanism implements.

    Subclasses implement ``init_state``, ``forward``, ``state_bytes`` and may override
    ``state_flops_per_token``. ``forward(x[B, T, d_model], state) -> (y[B, T, d_model], state)``
    must give the same ``y`` for one call on T tokens as for any split into chunks with the
    state carried.
    """

    def init_state(
        self,
        batch_size: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> State:
        raise NotImplementedError

    def state_bytes(
        self, batch_size: int, seq_len: int = 0, dtype: torch.dtype | None = None
    ) -> int:
        """Bytes of this mixer's state for ``batch_size`` sequences after ``seq_len`` tokens, with
        floating-point state tensors in ``dtype`` (float32 when None)."""
        raise NotImplementedError

    def state_flops_per_token(self, seq_len: int = 0) -> float:
        """Forward FLOPs per token spent outside the weight matmuls (state update and readout,
        convolutions, attention scores); ``seq_len`` matters only for growing states."""
        return 0.0


class MLP(nn.Module):
    """``Linear(d_model, mlp_ratio * d_model) -> GELU -> Linear(mlp_ratio * d_model, d_model)``."""

    def __init__(self, d_model: int, mlp_ratio: int = 4):
        super().__init__()
        self.fc = nn.Linear(d_model, mlp_ratio * d_model, bias=False)
        self.proj = nn.Linear(mlp_ratio * d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(nn.functional.gelu(self.fc(x)))


class Block(nn.Module):
    """``x + mixer(norm(x))`` then ``x + mlp(norm(x))``; carries the mixer's state."""

    def __init__(self, d_model: int, mixer: Mixer, mlp_ratio: int = 4):
        super().__init__()
        self.mixer_norm = nn.RMSNorm(d_model)
        self.mixer = mixer
        self.mlp_norm = nn.RMSNorm(d_model)
        self.mlp = MLP(d_model, mlp_ratio)

    def forward(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        # rms_norm(x, norm) is norm(x) with a hand-written backward in float32
        y, state = self.mixer(rms_norm(x, self.mixer_norm), state)
        x = x + y
        x = x + self.mlp(rms_norm(x, self.mlp_norm))
        return x, state


class MixerLM(nn.Module):
    """Base class of the learned mechanisms: the backbone above around a per-layer ``Mixer``.

    Args:
        mixer_factory: ``layer_index -> Mixer`` building one block's mixer.
        vocab_size: token ids read and predicted (40 for passkey_swar).
        d_model: residual width.
        n_layers: number of blocks.
        mlp_ratio: MLP hidden width / d_model.

    Attributes:
        fixed_size_state: True when ``state_bytes`` does not depend on the tokens seen
            (every mechanism but ``CausalAttention``).

    Raises:
        ValueError: when a size is not a positive integer.
    """

    fixed_size_state: bool = True

    def __init__(
        self,
        mixer_factory: Callable[[int], Mixer],
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        mlp_ratio: int = 4,
    ):
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        self.n_layers = check_positive_int("n_layers", n_layers)
        check_positive_int("mlp_ratio", mlp_ratio)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, mixer_factory(i), mlp_ratio) for i in range(n_layers)]
        )
        self.norm = nn.RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        # Generic initialisation first, then each mixer's own (``reset_parameters``), so the mixers'
        # special inits (A_log, dt_bias, decays, rescaled output projections) survive: the order of
        # fla's ``PreTrainedModel._init_weights`` and mamba_ssm's ``MixerModel`` + ``Mamba.__init__``.
        self._generic_init()
        for block in self.blocks:
            reset = getattr(block.mixer, "reset_parameters", None)
            if callable(reset):
                reset()
        # Names of the parameters AdamW must not decay (flag ``_no_weight_decay``, set by mamba_ssm
        # and fla on A_log, D, dt_bias and decays); kept by name because sharding replaces the
        # Parameter objects that carry the flag.
        self.no_weight_decay_names = frozenset(
            n for n, p in self.named_parameters() if getattr(p, "_no_weight_decay", False)
        )
        # Counted once, before any sharding replaces parameters by local shards.
        self._n_params = sum(p.numel() for p in self.parameters() if p.requires_grad)
        self._n_embedding_params = self.embedding.weight.numel()

    def _generic_init(self) -> None:
        """``_init_weights`` on every submodule except those inside a module flagged
        ``_is_hf_initialized`` (an fla layer that ran its own ``_initialize_weights``)."""
        done: list[str] = []
        for name, module in self.named_modules():
            if any(name == d or name.startswith(d + ".") for d in done):
                continue
            if getattr(module, "_is_hf_initialized", False):
                done.append(name)
                continue
            self._init_weights(module)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """The generic initialisation of fla's ``PreTrainedModel._init_weights``
        (fla/models/*/modeling_*.py): ``normal(0, 0.02)`` weights of ``nn.Linear``, ``nn.Embedding``,
        ``nn.Conv1d`` and ``ShortConvolution`` (fla's is an ``nn.Conv1d``), zero biases. A module
        flagged ``_is_hf_initialized`` and a parameter flagged ``_no_reinit`` (the HF / mamba_ssm
        conventions) are left alone."""
        if getattr(module, "_is_hf_initialized", False):
            return
        if isinstance(module, (nn.Linear, nn.Embedding, nn.Conv1d, ShortConvolution)):
            if not getattr(module.weight, "_no_reinit", False):
                nn.init.normal_(module.weight, std=0.02)
            bias = getattr(module, "bias", None)
            if bias is not None and not getattr(bias, "_no_reinit", False):
                nn.init.zeros_(bias)

    @property
    def n_params(self) -> int:
        """Trainable parameters (embedding and head included)."""
        return self._n_params

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per token: ``2 * (n_params - embedding)`` for the matmuls (a lookup costs
        none) plus each mixer's ``state_flops_per_token()``."""
        return 2.0 * (self._n_params - self._n_embedding_params) + sum(
            float(b.mixer.state_flops_per_token()) for b in self.blocks
        )

    def _default_device(self) -> torch.device:
        return self.embedding.weight.device

    def init_state(
        self,
        batch_size: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> tuple:
        """Empty state: a tuple with each block's mixer state, floats in ``dtype`` (float32 when None)
        on ``device`` (the parameters' device when None)."""
        check_positive_int("batch_size", batch_size)
        device = self._default_device() if device is None else device
        dtype = DEFAULT_STATE_DTYPE if dtype is None else dtype
        return tuple(b.mixer.init_state(batch_size, device, dtype) for b in self.blocks)

    def forward(self, input_ids: torch.Tensor, state: State = None) -> tuple[torch.Tensor, tuple]:
        """``input_ids[B, T]`` int64 and the carried state (None = empty) ->
        ``(logits[B, T, vocab_size]``, new state); ``project(forward_features(...))``."""
        features, new_state = self.forward_features(input_ids, state)
        return self.project(features), new_state

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """The head: ``features[..., d_model]`` (from :meth:`forward_features`) ->
        ``logits[..., vocab_size]``. Applied to the supervised positions alone it gives the
        same logits there as :meth:`forward` (``TBPTTModule(supervised_logits=True)``)."""
        return self.head(features)

    def forward_features(
        self, input_ids: torch.Tensor, state: State = None
    ) -> tuple[torch.Tensor, tuple]:
        """:meth:`forward` up to the head: ``(features[B, T, d_model]`` after the final norm,
        new state)."""
        if input_ids.dim() != 2 or input_ids.dtype not in (torch.int64, torch.int32, torch.int16):
            raise ValueError(
                f"input_ids must be an integer tensor [B, T], got {input_ids.dtype} {tuple(input_ids.shape)}"
            )
        if state is None:
            state = self.init_state(input_ids.shape[0], input_ids.device)
        if len(state) != len(self.blocks):
            raise ValueError(f"state has {len(state)} layer entries, expected {len(self.blocks)}")
        x = self.embedding(input_ids.long())
        new_state = []
        for block, layer_state in zip(self.blocks, state):
            x, layer_state = block(x, layer_state)
            new_state.append(layer_state)
        return rms_norm(x, self.norm), tuple(new_state)

    def detach_state(self, state: State) -> State:
        """The same state cut from the autograd graph (truncated BPTT boundary)."""
        return map_state(torch.Tensor.detach, state)

    def state_bytes(
        self, batch_size: int, seq_len: int = 0, dtype: torch.dtype | None = None
    ) -> int:
        """Bytes of the state for ``batch_size`` sequences (float tensors in ``dtype``, float32 when
        None). ``seq_len`` (tokens seen) matters only when ``fixed_size_state`` is False."""
        check_positive_int("batch_size", batch_size)
        if seq_len < 0:
            raise ValueError(f"seq_len must be >= 0, got {seq_len}")
        return sum(b.mixer.state_bytes(batch_size, seq_len, dtype) for b in self.blocks)


class ShortConvolution(nn.Module):
    """Causal depthwise convolution over time with an optional SiLU, streaming-exact.

    ``forward(x[B, T, C], state[B, C, kernel_size - 1]) -> (y[B, T, C], state)``; the state holds
    the last ``kernel_size - 1`` inputs (zeros at the start). Used before the q/k/v of DeltaNet,
    Gated DeltaNet and Mamba-2, as in those papers (fla's ``ShortConvolution``, fla/modules/conv).

    ``y[:, t, c] = sum_j w[c, j] * z[:, t + j, c]`` with ``z = [state^T; x]`` (the cross-correlation
    of ``torch.nn.functional.conv1d`` with ``groups=C``), computed as ``kernel_size`` shifted
    multiply-adds on the ``[B, T, C]`` layout: no transpose of the activations, and the SiLU runs on
    a contiguous tensor (on CPU about 1.1x faster per Gated DeltaNet training step than ``conv1d``
    on the transposed tensor, equal to it within float32 rounding), with a hand-written backward
    (``ops.fused_backward.causal_conv``: shifted multiply-adds for the input, state and weight
    gradients, the SiLU derivative fused; the forward values bitwise those of the autograd form).
    """

    def __init__(self, channels: int, kernel_size: int = 4, activation: bool = True):
        super().__init__()
        self.channels = check_positive_int("channels", channels)
        self.kernel_size = check_positive_int("kernel_size", kernel_size)
        self.activation = activation
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)

    def init_state(self, batch_size: int, device=None, dtype=None) -> torch.Tensor:
        return torch.zeros(
            batch_size, self.channels, self.kernel_size - 1, device=device, dtype=dtype
        )

    def state_bytes(self, batch_size: int, dtype: torch.dtype | None = None) -> int:
        return batch_size * self.channels * (self.kernel_size - 1) * dtype_bytes(dtype)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K, T = self.kernel_size, x.shape[1]
        w = self.weight[:, 0, :].to(x.dtype)  # [C, K]
        state_t = state.to(x.dtype).transpose(1, 2)  # [B, K-1, C]
        y = causal_conv(x, state_t, w, self.activation)
        # the last K-1 rows of [state^T; x]; a copy, not a view: a sharded block must not return
        # views (FSDP2 hooks)
        tail = x[:, T - (K - 1) :] if T >= K - 1 else torch.cat([state_t[:, T:], x], dim=1)
        new_state = (
            tail.transpose(1, 2).to(state.dtype).clone(memory_format=torch.contiguous_format)
        )
        return y, new_state

    def flops_per_token(self) -> float:
        return 2.0 * self.channels * self.kernel_size


def check_conv_size(conv_size: object) -> int:
    """``conv_size`` as an int >= 0 (0 = no short convolution); ValueError (one line) otherwise."""
    if isinstance(conv_size, bool) or not isinstance(conv_size, int) or conv_size < 0:
        raise ValueError(
            f"conv_size must be an integer >= 0 (0 = no short convolution), got {conv_size!r}"
        )
    return conv_size


class NoConvolution(nn.Module):
    """``ShortConvolution``'s stand-in when the convolution is off (``conv_size=0``): the same
    interface, the input passed through (SiLU'd when ``activation``, as fla's layers do with
    ``use_short_conv=False``, e.g. ``fla/layers/gated_deltanet.py``) and an empty state
    ``[B, channels, 0]`` that costs no bytes."""

    def __init__(self, channels: int, activation: bool = True):
        super().__init__()
        self.channels = check_positive_int("channels", channels)
        self.kernel_size = 0
        self.activation = activation

    def init_state(self, batch_size: int, device=None, dtype=None) -> torch.Tensor:
        return torch.zeros(batch_size, self.channels, 0, device=device, dtype=dtype)

    def state_bytes(self, batch_size: int, dtype: torch.dtype | None = None) -> int:
        return 0

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (nn.functional.silu(x) if self.activation else x), state

    def flops_per_token(self) -> float:
        return 0.0


def short_convolution(
    channels: int, conv_size: int, activation: bool = True
) -> ShortConvolution | NoConvolution:
    """A ``ShortConvolution(channels, conv_size, activation)``, or a ``NoConvolution`` (same
    interface, empty state) when ``conv_size`` is 0. Raises ValueError on a negative or
    non-integer ``conv_size``."""
    if check_conv_size(conv_size) == 0:
        return NoConvolution(channels, activation)
    return ShortConvolution(channels, conv_size, activation)
