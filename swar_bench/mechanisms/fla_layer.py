"""Any layer written in flash-linear-attention's style as a mixer of the zoo: ``FlaLayer`` wraps a
class by its import path (``fla.layers.GatedDeltaNet``, ``fla.layers.RWKV7Attention``, or a
researcher's own class with the same interface) and carries its recurrent cache between chunks.

fla's layer protocol (``fla/layers/*.py``, ``fla/models/utils.py``): a layer is built with
``hidden_size`` and ``layer_idx``; ``forward(hidden_states [B, T, hidden_size],
attention_mask=None, past_key_values=cache, use_cache=True)`` returns ``(o [B, T, hidden_size],
attentions, cache)``; it reads its previous state as ``cache[layer_idx]`` (a dict with
``recurrent_state``, ``attn_state``, ``conv_state``, ``ffn_state``) when ``len(cache) >
layer_idx``, and writes the new one with ``cache.update(recurrent_state=..., conv_state=...,
layer_idx=..., offset=T)``. Here that dict IS the mixer's state, so it streams, detaches and is
measured like every other state. fla's own layers run Triton kernels: they need the
``flash-linear-attention`` package (``pip install 'swar_bench[fla]'``) and a CUDA device.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch
from torch import nn

from swar_bench.mechanisms.base import Mixer, MixerLM, check_sizes, dtype_bytes
from swar_bench.mechanisms.protocol import iter_state_tensors, map_state

CACHE_KEYS = ("recurrent_state", "attn_state", "conv_state", "ffn_state")
"""The entries of one layer's state in fla's cache (``fla.models.utils.FLALayer.update``)."""


def import_class(class_path: str) -> type:
    """The class named by ``"package.module.Class"``.

    Raises:
        ValueError: one line naming the path and why it cannot be imported (for ``fla.*``, the
            missing ``flash-linear-attention`` package and how to install it).
    """
    module_name, _, name = class_path.rpartition(".")
    if not module_name:
        raise ValueError(
            f"layer must be a class path like 'fla.layers.GatedDeltaNet', got {class_path!r}"
        )
    try:
        cls = getattr(importlib.import_module(module_name), name)
    except ImportError as err:
        hint = (
            " (fla's layers are in the flash-linear-attention package: pip install 'swar_bench[fla]')"
            if module_name.split(".")[0] == "fla"
            else ""
        )
        raise ValueError(f"cannot import layer {class_path!r}: {err}{hint}") from None
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no class {name!r}") from None
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise ValueError(f"layer {class_path!r} is not a torch.nn.Module class")  # noqa: TRY004
    return cls


class LayerCache:
    """fla's ``past_key_values`` interface for one layer, over a plain dict of tensors.

    ``len(cache)`` is ``layer_idx + 1`` once the layer has a state (fla's layers test
    ``len(past_key_values) > layer_idx``), ``cache[layer_idx]`` is that state, and
    ``update(..., layer_idx, offset)`` stores the entries given, appending ``attn_state`` along
    time (like ``fla.models.utils.FLALayer.update``).
    """

    def __init__(self, layer_idx: int, state: dict[str, Any] | None):
        self.layer_idx = layer_idx
        self.state = state

    def __len__(self) -> int:
        return self.layer_idx + 1 if self.state is not None else self.layer_idx

    def __getitem__(self, layer_idx: int) -> dict[str, Any]:
        if layer_idx != self.layer_idx or self.state is None:
            raise KeyError(f"this cache holds layer {self.layer_idx} only, asked for {layer_idx}")
        return self.state

    def update(self, recurrent_state=None, attn_state=None, conv_state=None, ffn_state=None,
               layer_idx: int = 0, offset: int | None = 1, cache_kwargs=None, **_: Any):  # fmt: skip
        if layer_idx != self.layer_idx:
            raise KeyError(f"this cache holds layer {self.layer_idx}, the layer wrote {layer_idx}")
        state = dict(self.state or dict.fromkeys(CACHE_KEYS))
        if attn_state is not None and state["attn_state"] is not None:
            # keys / values [B, T, ...] append along time, the last window_size kept (as fla does)
            window = (cache_kwargs or {}).get("window_size")
            attn_state = [torch.cat([a, b], dim=1) for a, b in zip(state["attn_state"], attn_state)]
            if window is not None:
                attn_state = [a[:, -window:] for a in attn_state]
        for key, value in zip(CACHE_KEYS, (recurrent_state, attn_state, conv_state, ffn_state)):
            if value is not None:
                state[key] = tuple(value) if isinstance(value, list) else value
        self.state = state
        return state

    def get_seq_length(self, layer_idx: int | None = 0) -> int:
        return 0


class FlaLayer(Mixer):
    """A mixer running ``layer(hidden_size=d_model, layer_idx=layer_idx, **layer_args)``; state:
    the layer's cache dict (``recurrent_state``, ``conv_state``, ... as the layer writes them).

    The state's shapes are learned once per device by running the layer on one and on two zero
    tokens (a zero input writes nothing into a linear recurrence or a convolution cache); a layer
    whose cache grows with the tokens (an attention KV cache) is refused, since ``FlaLayer``
    declares a fixed-size state. An all-zero state is the empty one, as in fla (a zero recurrent
    state, a zero-padded convolution).

    Args:
        d_model: width; layer: class path; layer_args: its other init arguments;
        layer_idx: index passed to the layer (its slot in the cache).

    Raises:
        ValueError: one line, when the class cannot be imported or built; when an ``fla.*``
            layer (Triton kernels) is asked to run off CUDA; when the layer's cache grows.
    """

    def __init__(
        self,
        d_model: int,
        layer: str,
        layer_args: dict[str, Any] | None = None,
        layer_idx: int = 0,
    ):
        super().__init__()
        self.class_path = layer
        self.layer_idx = layer_idx
        cls = import_class(layer)
        args = {"hidden_size": d_model, "layer_idx": layer_idx, **(layer_args or {})}
        try:
            self.layer = cls(**args)
        except TypeError as err:
            raise ValueError(f"cannot build {layer} with {sorted(args)}: {err}") from None
        self.needs_cuda = layer.split(".")[0] == "fla"
        self.d_model = d_model
        self._template: dict[str, Any] | None = None

    def _check_device(self, device: torch.device | str | None) -> None:
        device = torch.device(device if device is not None else "cpu")
        if self.needs_cuda and device.type != "cuda":
            raise ValueError(
                f"FlaLayer {self.class_path} runs fla's Triton kernels, which need a CUDA device; "
                f"got {device.type}"
                + ("" if torch.cuda.is_available() else " (no CUDA device on this machine)")
            )

    def _run(self, x: torch.Tensor, state: dict[str, Any] | None) -> tuple[torch.Tensor, dict]:
        self._check_device(x.device)
        # a copy: some fla layers update their convolution cache in place
        cache = LayerCache(self.layer_idx, None if state is None else map_state(torch.clone, state))
        out = self.layer(x, attention_mask=None, past_key_values=cache, use_cache=True)
        y = out[0] if isinstance(out, tuple) else out
        if cache.state is None:
            raise ValueError(
                f"{self.class_path} wrote no state into past_key_values (use_cache=True)"
            )
        return y, cache.state

    def _state_template(self, device) -> dict[str, Any]:
        """Per-row shapes and dtypes of the state, from two probe calls on zero tokens."""
        if self._template is None:
            param = next(self.layer.parameters(), None)
            dtype = param.dtype if param is not None else torch.float32
            with torch.no_grad():
                x = torch.zeros(2, 1, self.d_model, device=device, dtype=dtype)
                _, one = self._run(x, None)
                _, two = self._run(x, one)
            shapes = [tuple(t.shape) for t in iter_state_tensors(one)]
            if shapes != [tuple(t.shape) for t in iter_state_tensors(two)]:
                raise ValueError(
                    f"{self.class_path}'s cache grows with the tokens ({shapes} after one token); "
                    "FlaLayer carries fixed-size states only"
                )
            self._template = map_state(lambda t: t[:1].new_zeros(t[:1].shape), one)
        return self._template

    def init_state(self, batch_size, device=None, dtype=None):
        self._check_device(device)
        template = self._state_template(device)

        def zeros(t: torch.Tensor) -> torch.Tensor:
            kind = dtype if (dtype is not None and t.is_floating_point()) else t.dtype
            return torch.zeros(batch_size, *t.shape[1:], device=device, dtype=kind)

        return map_state(zeros, template)

    def state_bytes(self, batch_size, seq_len=0, dtype=None) -> int:
        template = self._state_template(self._template_device())
        return sum(
            batch_size
            * t.numel()
            * (dtype_bytes(dtype) if t.is_floating_point() else t.element_size())
            for t in iter_state_tensors(template)
        )

    def _template_device(self) -> torch.device:
        param = next(self.layer.parameters(), None)
        return param.device if param is not None else torch.device("cpu")

    def forward(self, x, state):
        y, new_state = self._run(x, state)
        dtypes = iter([t.dtype for t in iter_state_tensors(state)])  # keep the carried dtypes
        return y, map_state(lambda t: t.to(next(dtypes)), new_state)


class FlaLM(MixerLM):
    """Backbone whose mixers are any fla-style layer (``FlaLayer``), e.g. in a config:

    .. code-block:: yaml

        model:
          mechanism:
            class_path: swar_bench.mechanisms.FlaLM
            init_args:
              layer: fla.layers.GatedDeltaNet
              layer_args: {num_heads: 2, head_dim: 32, mode: chunk}

    ``n_params`` counts the wrapped layers' parameters; ``flops_per_token`` counts only their
    weight matmuls (the state update is the layer's own business). Fixed-size state: the layers'
    caches.

    Args:
        vocab_size, d_model, n_layers, mlp_ratio: as in ``MixerLM``; layer, layer_args: as in
        ``FlaLayer``.

    Raises:
        ValueError: as ``FlaLayer``; on bad sizes.
    """

    def __init__(
        self,
        layer: str,
        layer_args: dict[str, Any] | None = None,
        vocab_size: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        mlp_ratio: int = 4,
    ):
        check_sizes(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, mlp_ratio=mlp_ratio)
        super().__init__(
            lambda i: FlaLayer(d_model, layer, layer_args, layer_idx=i),
            vocab_size,
            d_model,
            n_layers,
            mlp_ratio,
        )
