"""One MQAR training step and one evaluation batch of Zoology's figure-2 attention model, before
and after the causal fast path, measured side by side (docs/BENCHMARKS.md, "MQAR step").

    python benchmarks/bench_mqar_step.py --repeats 5 --threads 1

The model is ``configs/mqar/figure2_t64.yaml``'s (CausalAttention in ZoologyBackbone, vocab 8192,
d_model 64, 2 layers, one head, no MLP, learned positions, tied head) on one batch of 512 MQAR
examples of 64 tokens. Two forms take turns in every round after one untimed warm-up round:

* ``before``: the previous ``AttentionMixer.forward`` and ``rotary`` (kept below verbatim:
  positions and mask per sequence, the key cache joined even when empty, an explicit boolean
  mask) and evaluation through the full ``[B, T, vocab]`` logits;
* ``after``: the library as it is (rotary as one complex product, one row of positions and mask
  for the batch, no join with an empty cache, SDPA's ``is_causal`` on the first query block,
  evaluation's head at the answer positions only).

A training step is ``TBPTTModule._chunk_loss`` (supervised logits, as the recipe) + backward +
fused AdamW step, from the same weights for both forms; an evaluation batch is
``TBPTTModule.evaluate_batch`` on 512 test examples. Time is the process's CPU time
(``time.process_time``), the best of the rounds. Before timing, the script checks that the two
forms give the same loss and gradients (rtol 1e-4) and the same evaluated predictions, and exits
1 otherwise. Also prints the epoch (195 steps) and validation (3000 examples) this implies.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch import nn

from swar_bench.mechanisms import CausalAttention
from swar_bench.mechanisms import attention as attention_module
from swar_bench.mechanisms.zoology_backbone import ZoologyBackbone
from swar_bench.module import TBPTTModule, shift_targets
from swar_bench.tasks.mqar import IGNORE_INDEX, multiquery_ar


def rotary_before(x, positions, base=10000.0):
    D = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    angles = positions.to(torch.float32).unsqueeze(-1) * inv_freq  # [B, T, D/2]
    cos, sin = angles.cos().unsqueeze(1), angles.sin().unsqueeze(1)
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    return out.to(x.dtype)


def forward_before(self, x, state):
    """``AttentionMixer.forward`` before the causal fast path (full attention only)."""
    B, T, _ = x.shape
    H, D = self.n_heads, self.head_dim
    q, k, v = self.qkv_proj(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
    k_cache, v_cache = state
    start = torch.full((B,), k_cache.shape[2], dtype=torch.int64, device=x.device)
    L = k_cache.shape[2]
    positions = start.unsqueeze(1) + torch.arange(T, device=x.device)
    q, k = rotary_before(q, positions), rotary_before(k, positions)
    keys = torch.cat([k_cache.to(k.dtype), k], dim=2)
    values = torch.cat([v_cache.to(v.dtype), v], dim=2)
    key_pos = start.unsqueeze(1) - L + torch.arange(L + T, device=x.device)
    outs = []
    for s in range(0, T, attention_module.QUERY_BLOCK):
        e = min(T, s + attention_module.QUERY_BLOCK)
        hi = L + e
        qp = positions[:, s:e, None]
        kp = key_pos[:, None, 0:hi]
        mask = (kp <= qp) & (kp >= 0)
        outs.append(nn.functional.scaled_dot_product_attention(
            q[:, :, s:e], keys[:, :, 0:hi], values[:, :, 0:hi], attn_mask=mask.unsqueeze(1)))
    o = torch.cat(outs, dim=2) if outs else q
    y = self.o_proj(o.transpose(1, 2).reshape(B, T, H * D))
    return y, (keys.to(k_cache.dtype), values.to(v_cache.dtype))


def build(args) -> TBPTTModule:
    torch.manual_seed(0)
    mechanism = ZoologyBackbone(
        CausalAttention(vocab_size=args.vocab_size, d_model=args.d_model, n_layers=2, n_heads=1,
                        flops_seq_len=args.seq_len, mlp_ratio=1),
        state_mixer="identity", tie_embeddings=True, max_position_embeddings=args.seq_len, embed_dropout=0.0,
    )
    return TBPTTModule(mechanism, lr=2.15e-3, weight_decay=0.1, tbptt_steps=args.seq_len, supervised_logits=True)


def set_form(module: TBPTTModule, form: str) -> None:
    for block in module.mechanism.blocks:
        if form == "before":
            block.mixer.forward = forward_before.__get__(block.mixer)
        else:
            block.mixer.__dict__.pop("forward", None)
    module.supervised_logits = True  # training: the recipe's head at the answers (both forms)


def train_step(module, optimizer, ids, targets):
    state = module.mechanism.init_state(ids.shape[0])
    _, (loss_sum, count) = module._chunk_loss(state, ids, targets)
    (loss_sum / count).backward()
    grads = [p.grad.clone() for p in module.mechanism.parameters()]
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss_sum.detach()), grads


def eval_batch(module, form, batch):
    module.supervised_logits = form == "after"
    out = module.evaluate_batch(batch)
    module.supervised_logits = True
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--num-kv-pairs", type=int, default=4)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    inputs, labels = multiquery_ar(args.vocab_size, args.batch_size, args.seq_len, 1,
                                   num_kv_pairs=args.num_kv_pairs, random_non_queries=False)
    ids = torch.from_numpy(inputs)
    hf = torch.full_like(torch.from_numpy(labels), IGNORE_INDEX)
    hf[:, 1:] = torch.from_numpy(labels)[:, :-1]
    targets = shift_targets(hf)
    B = ids.shape[0]
    batch = {"input_ids": ids, "labels": hf, "answer_kind": (hf != IGNORE_INDEX).long(),
             "key_age": torch.zeros_like(hf), "n_writes": torch.full((B,), args.num_kv_pairs),
             "seed": torch.arange(B)}
    forms = ("before", "after")
    modules = {f: build(args) for f in forms}
    optimizers = {f: torch.optim.AdamW(modules[f].mechanism.parameters(), lr=2.15e-3, weight_decay=0.1, fused=True)
                  for f in forms}
    # agreement: the same first step (loss, gradients) and the same evaluated answers
    results = {}
    for f in forms:
        set_form(modules[f], f)
        results[f] = (train_step(modules[f], optimizers[f], ids, targets), eval_batch(modules[f], f, batch))
    (loss_b, grads_b), ev_b = results["before"]
    (loss_a, grads_a), ev_a = results["after"]
    ok = abs(loss_a - loss_b) <= 1e-4 * abs(loss_b) and all(
        torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(grads_a, grads_b)
    ) and torch.equal(ev_a["pred"], ev_b["pred"]) and torch.allclose(ev_a["loss"], ev_b["loss"], rtol=1e-4, atol=1e-5)
    if not ok:
        print("the two forms disagree; nothing measured", file=sys.stderr)
        return 1
    best = {(f, what): float("inf") for f in forms for what in ("step", "eval")}
    for r in range(args.repeats + 1):
        for f in forms:
            t = time.process_time()
            train_step(modules[f], optimizers[f], ids, targets)
            step = time.process_time() - t
            t = time.process_time()
            eval_batch(modules[f], f, batch)
            ev = time.process_time() - t
            if r:  # round 0 warms up
                best[f, "step"] = min(best[f, "step"], step)
                best[f, "eval"] = min(best[f, "eval"], ev)
    tokens = B * args.seq_len
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {B} x {args.seq_len}, vocab {args.vocab_size}, "
          f"d_model {args.d_model}; best of {args.repeats} interleaved rounds (CPU seconds)")
    print("| form | train step s | steps/s | tokens/s | eval batch s | epoch (195 steps) s | validation (3000 ex.) s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for f in forms:
        s, e = best[f, "step"], best[f, "eval"]
        print(f"| {f} | {s:.3f} | {1 / s:.2f} | {tokens / s:,.0f} | {e:.3f} | {195 * s:.0f} | {3000 / B * e:.1f} |")
    print(f"speed-up after/before: train step {best['before', 'step'] / best['after', 'step']:.2f}x, "
          f"eval batch {best['before', 'eval'] / best['after', 'eval']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
