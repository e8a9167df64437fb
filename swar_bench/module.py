"""TBPTTModule: the one LightningModule; trains and evaluates any ContextMechanism.

Training is truncated backpropagation through time (``swar_bench.tbptt.tbptt_chunks``, the loop
the referee's ``train_tbptt`` runs too): each batch ``input_ids[B, T]`` is cut into chunks of
``tbptt_steps`` tokens; the mechanism's state is carried from chunk to chunk and cut
from the autograd graph (``detach_state``) at every chunk boundary; the optimizer steps once per
chunk (or once per sequence with ``step_per_chunk=False``). Evaluation streams each sequence the
same way under ``no_grad``, so memory does not grow with the sequence length (N=16384 writes,
about 61k tokens, needs the same memory as N=32). See docs/ARCHITECTURE.md, "The path of one token".

The loss follows the Hugging Face shift: ``labels[:, t]`` is the target for the token at
position ``t``, so ``logits[:, t]`` is scored against ``labels[:, t + 1]``; across a chunk
boundary the last logit of a chunk predicts the first label of the next chunk.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import lightning.pytorch as pl
import torch
from torchmetrics import MeanMetric

from swar_bench.datamodules.batches import Batch
from swar_bench.mechanisms.protocol import CLASS_MEMBERS, PROTOCOL_EXPECTED
from swar_bench.mechanisms.registry import register_config_modes
from swar_bench.mechanisms.task_fit import check_task_fits
from swar_bench.tbptt import IGNORE_INDEX, supervised_cross_entropy, tbptt_chunks

# a process that unpickles this model (ddp_spawn) dumps the run's config with the CLI's parser mode
register_config_modes()


def warmup_cosine(step: int, warmup_steps: int, max_steps: int | None, min_lr_ratio: float) -> float:
    """LR multiplier at optimizer step ``step`` (0-based): linear warmup, then cosine decay.

    ``(step + 1) / warmup_steps`` for the first ``warmup_steps`` steps, then a half cosine from
    1 down to ``min_lr_ratio`` at ``max_steps`` (held there after it). With ``max_steps`` None
    the multiplier stays 1 after warmup. (Loshchilov & Hutter 2017, SGDR; the warmup of
    Goyal et al. 2017.)
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if max_steps is None or max_steps <= warmup_steps:
        return 1.0
    progress = min(1.0, (step - warmup_steps) / (max_steps - warmup_steps))
    return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def shift_targets(labels: torch.Tensor) -> torch.Tensor:
    """HF shift: ``targets[:, t] = labels[:, t + 1]``; the last position gets -100.

    ``labels[B, T]`` int64 -> ``targets[B, T]`` int64, aligned with the logits.
    """
    targets = torch.full_like(labels, IGNORE_INDEX)
    targets[:, :-1] = labels[:, 1:]
    return targets


@dataclass(frozen=True)
class EvalOutputs:
    """What an evaluation step returns, over the M supervised positions of one :class:`Batch`
    (row-major order): ``TBPTTModule.validation_step`` / ``test_step`` / ``predict_step`` hand it
    to the callbacks (docs/ARCHITECTURE.md, "Hand-offs").

    Attributes:
        pred: ``[M]`` int64, the predicted (argmax) token.
        target: ``[M]`` int64, the label (the batch's ``labels`` shifted: ``labels[:, t + 1]``).
        loss: ``[M]`` float32, the answer token's cross-entropy (nats).
        confidence: ``[M]`` float32, the softmax probability of ``pred``.
        answer_kind: ``[M]`` int64, codes of ``swar_bench.tasks.oracle.ANSWER_KINDS``.
        key_age: ``[M]`` int64, the batch's ``key_age`` (-1: does not apply).
        row: ``[M]`` int64, the position's row in the batch.
        n_writes: the batch's N.
        batch_size: rows holding an example (filler rows, ``seed`` -1, do not count).

    ``to(device)`` lets Lightning's ``move_data_to_device`` move it (the predict loop does);
    ``as_dict()`` is the plain dict ``predict`` saves (``torch.load(weights_only=True)`` reads it).

    Raises:
        ValueError: a tensor that is not 1-D, or tensors of different lengths.
    """

    pred: torch.Tensor
    target: torch.Tensor
    loss: torch.Tensor
    confidence: torch.Tensor
    answer_kind: torch.Tensor
    key_age: torch.Tensor
    row: torch.Tensor
    n_writes: int
    batch_size: int

    TENSORS = ("pred", "target", "loss", "confidence", "answer_kind", "key_age", "row")
    """The ``[M]`` fields, in order."""

    def __post_init__(self) -> None:
        tensors = [getattr(self, name) for name in self.TENSORS]
        if any(not isinstance(t, torch.Tensor) or t.dim() != 1 or t.shape != tensors[0].shape for t in tensors):
            shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__ for t in tensors]
            raise ValueError(f"EvalOutputs {'/'.join(self.TENSORS)} are {shapes}; expected 1-D tensors of one length M")

    def to(self, device: Any) -> EvalOutputs:
        """Every tensor moved by Lightning's ``move_data_to_device``."""
        from lightning.fabric.utilities import move_data_to_device

        return EvalOutputs(**move_data_to_device(self.as_dict(), device))

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (the same tensors, not copies)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def mechanism_class_path(mechanism: torch.nn.Module) -> str:
    """``"module.QualName"`` of a mechanism's class, e.g. ``"swar_bench.mechanisms.gated_deltanet.GatedDeltaNet"``
    (the class FSDP2's ``fully_shard`` wraps it in is skipped). Stored in checkpoints as
    ``mechanism_class``."""
    for cls in type(mechanism).__mro__:
        if not cls.__module__.startswith("torch.distributed"):
            return f"{cls.__module__}.{cls.__qualname__}"
    return type(mechanism).__qualname__


EXPECTED = {
    "tbptt_steps": " is invalid; expected an integer >= 1 (tokens per chunk)",
    "lr": " is invalid; expected a positive finite learning rate",
    "warmup_steps": " is invalid; expected an integer >= 0",
    "grad_clip": " is invalid; expected a max gradient norm > 0 (0 or null: no clipping)",
    "min_lr_ratio": " is invalid; expected a value in [0, 1]",
}
"""What follows ``name=value`` in :class:`TBPTTModule`'s refusal of each of its number arguments
(``--model.NAME``; ``harness.values.expected_tail`` says the same of a value of the wrong type)."""


class TBPTTModule(pl.LightningModule):
    """Trains / evaluates a ContextMechanism on passkey_swar batches with truncated BPTT.

    Args:
        mechanism: any ``torch.nn.Module`` following the ContextMechanism protocol
            (``swar_bench/mechanisms/protocol.py``); with no trainable parameters (the Oracle)
            no optimizer is built and training only logs the loss.
        lr: peak AdamW learning rate.
        weight_decay: AdamW weight decay, applied to parameters with 2 or more dims only, except
            those in the mechanism's ``no_weight_decay_names`` or flagged ``_no_weight_decay``.
        betas: AdamW betas.
        warmup_steps: optimizer steps of linear warmup.
        max_steps: optimizer steps of the cosine horizon; None takes ``trainer.max_steps`` when
            it is set (> 0), else the LR stays at its peak after warmup.
        min_lr_ratio: the LR at the end of the cosine, as a fraction of ``lr``.
        tbptt_steps: tokens per chunk (>= 1); gradients do not flow across chunk boundaries.
        grad_clip: max global gradient norm (None or 0: no clipping).
        step_per_chunk: True: one optimizer step per chunk (loss = mean over the chunk's
            supervised positions). False: gradients of all chunks accumulate and the optimizer
            steps once per sequence (loss = mean over the whole batch's supervised positions).
        supervised_logits: when training, compute the head only at the supervised positions
            (``mechanism.project(features[mask])`` after ``mechanism.forward_features``): the
            same loss and gradients as the full logits (up to float summation order) without
            the ``[B, T, vocab_size]`` tensor, which dominates the step for large vocabularies
            (MQAR: 8192 tokens, a few supervised positions per sequence). Needs a mechanism with
            ``forward_features`` and ``project`` (every ``MixerLM``). Evaluation does the same
            (the head at the answer positions only; the same logits up to float summation order).

    Steps take a :class:`~swar_bench.datamodules.batches.Batch`; ``validation_step`` /
    ``test_step`` / ``predict_step`` return :class:`EvalOutputs` (1-D tensors over the M
    supervised positions of the batch).

    Raises:
        ValueError: a mechanism without the protocol's methods, ``tbptt_steps < 1``, ``lr <= 0``, ``warmup_steps < 0``, or a
            ``min_lr_ratio`` outside [0, 1], ``supervised_logits`` with a mechanism without
            ``forward_features`` / ``project``.
        FloatingPointError: a non-finite training loss; raised before backward, so no weights
            are updated and no checkpoint is written after it.
    """

    def __init__(
        self,
        mechanism: torch.nn.Module,
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.95),
        warmup_steps: int = 100,
        max_steps: int | None = None,
        min_lr_ratio: float = 0.1,
        tbptt_steps: int = 256,
        grad_clip: float | None = 1.0,
        step_per_chunk: bool = True,
        supervised_logits: bool = False,
    ) -> None:
        super().__init__()
        if int(tbptt_steps) < 1:
            raise ValueError(f"tbptt_steps={tbptt_steps}{EXPECTED['tbptt_steps']}")
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr={lr}{EXPECTED['lr']}")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps={warmup_steps}{EXPECTED['warmup_steps']}")
        if grad_clip is not None and not (math.isfinite(grad_clip) and grad_clip >= 0):  # inf or nan: no clip at all
            raise ValueError(f"grad_clip={grad_clip}{EXPECTED['grad_clip']}")
        if not 0.0 <= min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio={min_lr_ratio}{EXPECTED['min_lr_ratio']}")
        missing = [a for a in (*CLASS_MEMBERS, "vocab_size") if not hasattr(mechanism, a)]
        if not isinstance(mechanism, torch.nn.Module) or missing:
            raise ValueError(
                f"mechanism {type(mechanism).__name__} is not a ContextMechanism (missing {', '.join(missing) or 'nn.Module'}); "
                f"{PROTOCOL_EXPECTED}"
            )
        if supervised_logits and not all(hasattr(mechanism, a) for a in ("forward_features", "project")):
            raise ValueError(
                f"supervised_logits=True: mechanism {type(mechanism).__name__} has no forward_features / project; "
                "expected a MixerLM (or set supervised_logits to false)"
            )
        self.save_hyperparameters(ignore=["mechanism"])
        self.mechanism = mechanism
        self.lr = float(lr)
        self.weight_decay = float(weight_decay)
        self.betas = tuple(betas)
        self.warmup_steps = int(warmup_steps)
        self.max_steps = max_steps
        self.min_lr_ratio = float(min_lr_ratio)
        self.tbptt_steps = int(tbptt_steps)
        self.grad_clip = grad_clip
        self.step_per_chunk = bool(step_per_chunk)
        self.supervised_logits = bool(supervised_logits)
        self.automatic_optimization = False
        self.last_train_loss: float = float("nan")
        self.tokens_seen: int = 0
        self.free_steps: int = 0  # batches trained by a parameter-free mechanism (no optimizer)
        # mean answer-token loss (nats) of an evaluation epoch; metric states are not saved
        self.val_loss = MeanMetric()
        self.test_loss = MeanMetric()

    # ------------------------------------------------------------------ setup

    @property
    def has_trainable_params(self) -> bool:
        return any(p.requires_grad for p in self.mechanism.parameters())

    def setup(self, stage: str) -> None:
        """Called on every rank once its process group exists: make sure it is torn down at exit,
        and that the mechanism's vocabulary holds every token of the task (ValueError otherwise)."""
        from swar_bench.runtime.distributed import destroy_process_group_at_exit

        destroy_process_group_at_exit()
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        check_task_fits(
            self.mechanism,
            getattr(datamodule, "params", None) if datamodule is not None else None,
            getattr(datamodule, "mqar", None) if datamodule is not None else None,
        )

    def configure_model(self) -> None:
        """Shard the mechanism per block: FSDP2 under ModelParallelStrategy, FSDP1 under FSDPStrategy."""
        from lightning.pytorch.strategies import FSDPStrategy, ModelParallelStrategy

        from swar_bench.runtime.distributed import parallelize_mechanism, wrap_blocks_fsdp1

        if self._trainer is None:
            return
        if isinstance(self.trainer.strategy, ModelParallelStrategy):
            parallelize_mechanism(self.mechanism, self.device_mesh["data_parallel"])
        elif isinstance(self.trainer.strategy, FSDPStrategy):
            wrap_blocks_fsdp1(self.mechanism)

    def configure_optimizers(self) -> Any:
        named = [(n, p) for n, p in self.mechanism.named_parameters() if p.requires_grad]
        if not named:
            return None
        # Weight decay on matrices only, never on the parameters a mechanism lists in
        # ``no_weight_decay_names`` or flags ``_no_weight_decay`` (mamba_ssm's and fla's convention
        # for A_log, D, dt_bias and decays). Groups are consecutive runs of parameters in model order,
        # so the optimizer's state ids follow ``parameters()`` order: FSDP's and Lightning's
        # re-keying of a full optimizer state by parameter name assume exactly that (a DDP or
        # single-device checkpoint then resumes under FSDP2 too).
        groups: list[dict[str, Any]] = []
        no_decay = set(getattr(self.mechanism, "no_weight_decay_names", ()))
        for name, p in named:
            decays = p.dim() >= 2 and name not in no_decay and not getattr(p, "_no_weight_decay", False)
            wd = self.weight_decay if decays else 0.0
            if groups and groups[-1]["weight_decay"] == wd:
                groups[-1]["params"].append(p)
            else:
                groups.append({"params": [p], "weight_decay": wd})
        fused = self._fused_adamw_supported([p for _, p in named])
        if not fused and any(p.dtype == torch.float16 for _, p in named):
            raise ValueError(
                "parameters in float16 (precision 16-true) need AdamW's fused update, which computes in float32: "
                "the for-each update rounds eps=1e-8 to 0 in float16 and divides 0 by 0 wherever a gradient is 0 "
                "(NaN weights after the first step), and the fused kernels do not serve them here; expected "
                "--trainer.precision=bf16-true, bf16-mixed or 32-true"
            )
        optimizer = torch.optim.AdamW(groups, lr=self.lr, betas=self.betas, fused=fused)
        horizon = self.max_steps
        if horizon is None and self._trainer is not None and self.trainer.max_steps > 0:
            horizon = self.trainer.max_steps
        warmup, ratio = self.warmup_steps, self.min_lr_ratio
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: warmup_cosine(step, warmup, horizon, ratio)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ------------------------------------------------------------------ internals

    def _fused_adamw_supported(self, params: list[torch.Tensor]) -> bool:
        """True when ``AdamW(fused=True)`` (one kernel for the whole update; the same arithmetic as
        the for-each form in float32 and bfloat16, torch.optim.adamw) serves these parameters:
        floating-point tensors, plain or FSDP2's sharded DTensors, on a device with fused optimizer
        kernels (``torch.utils._foreach_utils._get_fused_kernels_supported_devices``: cpu and cuda in
        torch 2.13), and a precision plugin that can still clip their gradients. Lightning's mixed
        precision plugin refuses to clip for an optimizer that unscales in its own step, which a
        fused one declares (lightning.pytorch.plugins.precision.amp); there the for-each form stays
        (its parameters are float32). In float16 only the fused update is sound: it computes in
        float32, where the for-each one rounds eps=1e-8 to 0 and turns every zero gradient into
        NaN weights (:meth:`configure_optimizers` refuses float16 parameters without it)."""
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices

        try:
            from torch.distributed.tensor import DTensor
        except ImportError:  # torch < 2.5, or a build without torch.distributed
            DTensor = torch.nn.Parameter

        devices = _get_fused_kernels_supported_devices()
        if not all(
            type(p) in (torch.Tensor, torch.nn.Parameter, DTensor) and p.is_floating_point() and p.device.type in devices
            for p in params
        ):
            return False
        if self.grad_clip and self._trainer is not None:
            from lightning.pytorch.plugins.precision import MixedPrecision

            if isinstance(self.trainer.precision_plugin, MixedPrecision):
                return False
        return True

    def _distributed(self) -> bool:
        return (
            torch.distributed.is_available()
            and torch.distributed.is_initialized()
            and self._trainer is not None
            and self.trainer.world_size > 1
        )

    def _synced_length(self, batch: Batch) -> Batch:
        """Right-pad the batch to the longest T over all ranks.

        Every rank must run the same number of chunks: each chunk is a forward / backward with
        collectives inside (DDP all-reduce, FSDP all-gather / reduce-scatter).
        """
        T = batch.input_ids.shape[1]
        if not self._distributed():
            return batch
        t = torch.tensor([T], dtype=torch.int64, device=self.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return batch.padded(int(t.item()))

    def _nonfinite_loss(self, loss: torch.Tensor) -> str:
        """The non-finite loss that stops the run, as its error line names it: ``nan`` on one
        process; ``nan on rank 1`` in a distributed run (the first rank that saw one: the others'
        losses may be finite, and every rank raises the same line, which rank 0 alone prints)."""
        if not self._distributed():
            return str(loss.item())
        losses = [torch.zeros(1, dtype=torch.float64, device=self.device) for _ in range(self.trainer.world_size)]
        torch.distributed.all_gather(losses, loss.detach().to(torch.float64).reshape(1))
        rank, value = next((r, v.item()) for r, v in enumerate(losses) if not torch.isfinite(v))
        return f"{value} on rank {rank}"

    def _any_rank(self, flag: bool) -> bool:
        if not self._distributed():
            return flag
        return bool(self.trainer.strategy.reduce_boolean_decision(flag, all=False))

    def _optimizer_step(self) -> None:
        optimizer = self.optimizers()
        if self.grad_clip:
            from lightning.pytorch.strategies import FSDPStrategy

            if isinstance(self.trainer.strategy, FSDPStrategy):
                # FSDP1 shards gradients: only the wrapped root can compute the global norm.
                self.trainer.model.clip_grad_norm_(self.grad_clip)
            else:
                self.clip_gradients(optimizer, gradient_clip_val=self.grad_clip, gradient_clip_algorithm="norm")
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.lr_schedulers().step()

    # ------------------------------------------------------------------ checkpoint

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # Training tokens are the FLOP ledger's unit (6 * n_params * tokens): they survive a resume.
        checkpoint["tokens_seen"] = int(self.tokens_seen)
        # The mechanism is not a hyperparameter (it is a module): record its class so that a
        # checkpoint loaded into another mechanism can say which one it holds.
        checkpoint["mechanism_class"] = mechanism_class_path(self.mechanism)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.tokens_seen = int(checkpoint.get("tokens_seen", 0))

    # ------------------------------------------------------------------ training

    def _chunk_loss(self, state: Any, ids: torch.Tensor, tgt: torch.Tensor) -> tuple[Any, tuple[torch.Tensor, int]]:
        """One TBPTT chunk: ``(state, (loss_sum, count))`` over its supervised positions."""
        if self.supervised_logits:
            features, state = self.mechanism.forward_features(ids, state)
            mask = tgt != IGNORE_INDEX
            logits = self.mechanism.project(features[mask])  # [M, vocab_size]
            return state, supervised_cross_entropy(logits[None], tgt[mask][None])
        logits, state = self.mechanism(ids, state)
        return state, supervised_cross_entropy(logits, tgt)

    def training_step(self, batch: Batch, batch_idx: int) -> None:
        batch = self._synced_length(batch)
        input_ids, targets = batch.input_ids, shift_targets(batch.labels)
        B, T = input_ids.shape
        trainable = self.has_trainable_params
        n_total = (targets != IGNORE_INDEX).sum()
        total_loss, total_count = 0.0, 0
        state = self.mechanism.init_state(B, device=self.device)
        with torch.set_grad_enabled(trainable):
            for chunk in tbptt_chunks(
                self._chunk_loss, state, input_ids, targets, self.tbptt_steps, self.mechanism.detach_state
            ):
                ce_sum, count = chunk.result
                if self._any_rank(not bool(torch.isfinite(ce_sum))):
                    raise FloatingPointError(
                        f"non-finite training loss ({self._nonfinite_loss(ce_sum)}) at global step {self.global_step}, "
                        f"batch {batch_idx}, n_writes={batch.n}, tokens {chunk.start}..{chunk.stop}; "
                        "stopping before the update, no checkpoint is written"
                    )
                total_loss += float(ce_sum.detach())
                total_count += count
                if trainable:
                    denom = max(count, 1) if self.step_per_chunk else max(int(n_total), 1)
                    self.manual_backward(ce_sum / denom)
                    if self.step_per_chunk:
                        self._optimizer_step()
        if trainable and not self.step_per_chunk:
            self._optimizer_step()
        self.last_train_loss = total_loss / max(total_count, 1)
        self.tokens_seen += B * T
        self.log("train/loss", self.last_train_loss, prog_bar=True, batch_size=B)
        self.log("train/n_writes", float(batch.n_writes[0]), batch_size=B)
        if trainable:
            self.log("lr", self.optimizers().param_groups[0]["lr"], prog_bar=True, batch_size=B)
        else:
            # Without an optimizer Lightning's global_step never advances, so `max_steps` would
            # never end the run: a parameter-free mechanism counts one step per batch instead.
            self.free_steps += 1
            if 0 < self.trainer.max_steps <= self.free_steps:
                self.trainer.should_stop = True

    # ------------------------------------------------------------------ evaluation

    @torch.no_grad()
    def evaluate_batch(self, batch: Batch) -> EvalOutputs:
        """Stream a batch chunk by chunk; the :class:`EvalOutputs` of its supervised positions
        (row-major order)."""
        batch = self._synced_length(batch)
        input_ids = batch.input_ids
        B, T = input_ids.shape
        targets = shift_targets(batch.labels)
        kind = shift_targets(batch.answer_kind).clamp_min(0)
        age = torch.full_like(batch.key_age, -1)
        age[:, :-1] = batch.key_age[:, 1:]
        parts: dict[str, list[torch.Tensor]] = {k: [] for k in EvalOutputs.TENSORS + ("pos",)}
        rows = torch.arange(B, device=input_ids.device)[:, None].expand(B, T)
        positions = torch.arange(T, device=input_ids.device)[None, :].expand(B, T)
        state = self.mechanism.init_state(B, device=self.device)
        for start in range(0, T, self.tbptt_steps):
            sl = slice(start, start + self.tbptt_steps)
            mask = targets[:, sl] != IGNORE_INDEX
            if self.supervised_logits:
                features, state = self.mechanism.forward_features(input_ids[:, sl], state)
                if not bool(mask.any()):
                    continue
                sel = self.mechanism.project(features[mask]).float()  # [M, vocab_size]
            else:
                logits, state = self.mechanism(input_ids[:, sl], state)
                if not bool(mask.any()):
                    continue
                sel = logits[mask].float()
            tgt = targets[:, sl][mask]
            logp = torch.log_softmax(sel, dim=-1)
            conf, pred = logp.exp().max(dim=-1)
            parts["pred"].append(pred)
            parts["target"].append(tgt)
            parts["loss"].append(-logp.gather(1, tgt[:, None]).squeeze(1))
            parts["confidence"].append(conf)
            parts["answer_kind"].append(kind[:, sl][mask])
            parts["key_age"].append(age[:, sl][mask])
            parts["row"].append(rows[:, sl][mask])
            parts["pos"].append(positions[:, sl][mask])
        empty = {
            "pred": torch.int64, "target": torch.int64, "loss": torch.float32, "confidence": torch.float32,
            "answer_kind": torch.int64, "key_age": torch.int64, "row": torch.int64, "pos": torch.int64,
        }
        out: dict[str, torch.Tensor] = {}
        for name, dtype in empty.items():
            out[name] = torch.cat(parts[name]).to(dtype) if parts[name] else torch.zeros(0, dtype=dtype, device=self.device)
        # chunks visit positions column-block by column-block; restore row-major order
        order = torch.argsort(out["row"] * T + out["pos"])
        return EvalOutputs(
            **{name: out[name][order] for name in EvalOutputs.TENSORS}, n_writes=batch.n, batch_size=batch.real_rows
        )

    def _eval_step(self, batch: Batch, prefix: str) -> EvalOutputs:
        out = self.evaluate_batch(batch)
        m = out.loss.numel()
        # logged on every batch (filler batches with M = 0 weigh 0) so all ranks sync the same keys
        metric = self.val_loss if prefix == "val" else self.test_loss
        # a weighted mean over all answer tokens, reduced across ranks by torchmetrics: exactly the
        # one-process value (a mean of per-rank means would weigh unequal shards equally)
        metric.update(out.loss.sum() / max(m, 1), weight=m)
        self.log(f"{prefix}/loss", metric, on_step=False, on_epoch=True, add_dataloader_idx=False)
        return out

    def validation_step(self, batch: Batch, batch_idx: int) -> EvalOutputs:
        return self._eval_step(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> EvalOutputs:
        return self._eval_step(batch, "test")

    def predict_step(self, batch: Batch, batch_idx: int) -> EvalOutputs:
        return self.evaluate_batch(batch)
