"""Zoology's language-model wrapper around any ``MixerLM``'s mixers (the MQAR recipe's model).

Zoology (Arora et al., 2023; HazyResearch/zoology ``zoology/model.py`` at commit b603008, the
code of the paper's figure 2) trains every sequence mixer inside one small model:

* token embeddings (normal, std 0.02) plus, for attention only, learned absolute position
  embeddings (``max_position_embeddings = input_seq_len``; 0, none, for the other mixers:
  ``iclr24_zoology_figure2/configs.py``); dropout 0.1 on the embeddings
  (``ModelConfig.embed_dropout``);
* ``n_layers`` blocks, each ``residual += mixer(norm1(residual))`` followed by the block's
  *state mixer* on ``norm2(residual)``; figure 2 uses ``torch.nn.Identity`` as the state mixer,
  so the block adds ``norm2(residual)`` to the residual stream (``TransformerBlock.forward``:
  the next block, or the final step, adds the returned hidden states to the residual);
* a final norm and a head tied to the token embeddings
  (``self.lm_head.weight = self.backbone.embeddings.word_embeddings.weight``).

:class:`ZoologyBackbone` rebuilds that model from an existing ``MixerLM`` (its embedding,
blocks, mixers, norms and head are reused): ``state_mixer="identity"`` is Zoology's figure-2
block, ``"none"`` drops the second sub-layer, ``"mlp"`` keeps the mechanism's own MLP. What
stays ours: RMSNorm where Zoology has LayerNorm, our mixers' own projections (no biases, and
``CausalAttention`` keeps its rotary embeddings under the learned positions), no attention-
probability dropout (Zoology's MHA has ``dropout=0.1``).

The state is ``(mixer states, position [B] int64)``: the position counter makes the learned
positions streaming-exact (one call on T tokens equals any split into chunks).
"""

from __future__ import annotations

import torch
from torch import nn

from swar_bench.mechanisms.base import MixerLM, check_positive_int
from swar_bench.mechanisms.protocol import State, map_state

STATE_MIXERS = ("identity", "none", "mlp")


class ZoologyBackbone(nn.Module):
    """A ``MixerLM``'s mixers inside Zoology's model (module docstring).

    Args:
        mechanism: a ``MixerLM`` (any of ``swar_bench.mechanisms``' learned mechanisms); its
            ``vocab_size``, ``d_model``, ``n_layers`` and mixers are used as built.
        state_mixer: ``"identity"`` (Zoology figure 2: ``x + norm2(x)`` after the mixer),
            ``"none"`` (no second sub-layer) or ``"mlp"`` (the mechanism's MLP, unchanged).
        tie_embeddings: the head shares the token-embedding matrix (Zoology: always).
        max_position_embeddings: learned absolute positions for the first this-many tokens of a
            sequence (0: none; Zoology gives attention ``input_seq_len``, the others 0).
        embed_dropout: dropout on the embeddings while training (Zoology: 0.1).

    Raises:
        ValueError: a mechanism that is not a ``MixerLM``, an unknown ``state_mixer``, a
            negative ``max_position_embeddings``, an ``embed_dropout`` outside [0, 1); in
            ``forward``, a position at or beyond ``max_position_embeddings``.
    """

    def __init__(
        self,
        mechanism: nn.Module,
        state_mixer: str = "identity",
        tie_embeddings: bool = True,
        max_position_embeddings: int = 0,
        embed_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if not isinstance(mechanism, MixerLM):
            raise ValueError(  # noqa: TRY004 - bad user input
                f"mechanism {type(mechanism).__name__} is not a MixerLM; expected one of "
                "swar_bench.mechanisms' learned mechanisms (embedding, blocks, norm, head)"
            )
        if state_mixer not in STATE_MIXERS:
            raise ValueError(f"state_mixer={state_mixer!r}: expected one of {', '.join(STATE_MIXERS)}")
        if isinstance(max_position_embeddings, bool) or not isinstance(max_position_embeddings, int) \
                or max_position_embeddings < 0:
            raise ValueError(
                f"max_position_embeddings={max_position_embeddings!r}: expected an integer >= 0 "
                "(0: no learned positions)"
            )
        if not 0.0 <= float(embed_dropout) < 1.0:
            raise ValueError(f"embed_dropout={embed_dropout!r}: expected a probability in [0, 1)")
        self.lm = mechanism
        self.state_mixer = state_mixer
        self.tie_embeddings = bool(tie_embeddings)
        self.max_position_embeddings = int(max_position_embeddings)
        self.vocab_size = mechanism.vocab_size
        self.d_model = mechanism.d_model
        self.n_layers = mechanism.n_layers
        self.fixed_size_state = mechanism.fixed_size_state
        for block in mechanism.blocks:
            if state_mixer != "mlp":
                block.mlp = None
            if state_mixer == "none":
                block.mlp_norm = None
        if self.tie_embeddings:
            mechanism.head.weight = mechanism.embedding.weight
        self.position_embedding = None
        if self.max_position_embeddings:
            self.position_embedding = nn.Embedding(self.max_position_embeddings, self.d_model)
            nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.embed_dropout = nn.Dropout(float(embed_dropout))

    @property
    def blocks(self) -> nn.ModuleList:
        """The mechanism's blocks (the unit a parallelism plan shards)."""
        return self.lm.blocks

    @property
    def n_params(self) -> int:
        """Trainable parameters, a tied matrix counted once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per token: 2 per weight of the blocks and final norm, ``2 * d_model *
        vocab_size`` for the head (tied or not; lookups cost none) and each mixer's
        ``state_flops_per_token()``."""
        lookups = {id(self.lm.embedding.weight)}
        if self.position_embedding is not None:
            lookups.add(id(self.position_embedding.weight))
        head = {id(self.lm.head.weight)}
        body = sum(
            p.numel() for p in self.parameters()
            if p.requires_grad and id(p) not in lookups | head
        )
        return (
            2.0 * body
            + 2.0 * self.d_model * self.vocab_size
            + sum(float(b.mixer.state_flops_per_token()) for b in self.lm.blocks)
        )

    def init_state(self, batch_size: int, device=None, dtype=None) -> tuple:
        """``(mixer states, position int64 [B] zeros)``."""
        check_positive_int("batch_size", batch_size)
        device = self.lm.embedding.weight.device if device is None else device
        return (
            self.lm.init_state(batch_size, device, dtype),
            torch.zeros(batch_size, dtype=torch.int64, device=device),
        )

    def detach_state(self, state: State) -> State:
        return map_state(torch.Tensor.detach, state)

    def state_bytes(self, batch_size: int, seq_len: int = 0, dtype=None) -> int:
        """The mixers' state plus the int64 position counter per sequence."""
        return self.lm.state_bytes(batch_size, seq_len, dtype) + 8 * batch_size

    def forward_features(self, input_ids: torch.Tensor, state: State = None) -> tuple[torch.Tensor, tuple]:
        """``input_ids[B, T]`` int -> ``(features[B, T, d_model]`` after the final norm, state)."""
        if input_ids.dim() != 2 or input_ids.dtype not in (torch.int64, torch.int32, torch.int16):
            raise ValueError(
                f"input_ids must be an integer tensor [B, T], got {input_ids.dtype} {tuple(input_ids.shape)}"
            )
        B, T = input_ids.shape
        if state is None:
            state = self.init_state(B, input_ids.device)
        mixer_states, position = state
        if len(mixer_states) != len(self.lm.blocks):
            raise ValueError(f"state has {len(mixer_states)} layer entries, expected {len(self.lm.blocks)}")
        x = self.lm.embedding(input_ids.long())
        if self.position_embedding is not None:
            positions = position[:, None] + torch.arange(T, device=input_ids.device)
            if T and int(positions.max()) >= self.max_position_embeddings:
                raise ValueError(
                    f"position {int(positions.max())} is beyond max_position_embeddings="
                    f"{self.max_position_embeddings}; expected sequences of at most that many tokens"
                )
            x = x + self.position_embedding(positions)
        x = self.embed_dropout(x)
        new_states = []
        for block, layer_state in zip(self.lm.blocks, mixer_states):
            y, layer_state = block.mixer(block.mixer_norm(x), layer_state)
            x = x + y
            if self.state_mixer == "identity":
                x = x + block.mlp_norm(x)
            elif self.state_mixer == "mlp":
                x = x + block.mlp(block.mlp_norm(x))
            new_states.append(layer_state)
        return self.lm.norm(x), (tuple(new_states), position + T)

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """The (tied) head: ``features[..., d_model] -> logits[..., vocab_size]``."""
        return self.lm.head(features)

    def forward(self, input_ids: torch.Tensor, state: State = None) -> tuple[torch.Tensor, tuple]:
        """``input_ids[B, T]`` -> ``(logits[B, T, vocab_size]``, state)."""
        features, state = self.forward_features(input_ids, state)
        return self.project(features), state
