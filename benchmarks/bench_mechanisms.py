"""Forward + backward throughput of the linear-attention cells: chunk-parallel form vs the
token-by-token recurrence of the same cell vs fla's naive recurrent reference, side by side;
then every mechanism of the zoo on the same tokens.

    python benchmarks/bench_mechanisms.py [--seq-len 512] [--batch-size 8] [--repeats 5] [--threads 1]
        [--chunk-size 64]

Prints a markdown table (tokens/s = batch_size * seq_len / best (minimum) seconds of one forward +
backward) and the speed-up ratios. Seconds are CPU seconds of the process (``time.process_time``):
with ``--threads 1`` that is the work of one forward + backward, and time the process waits for a
core on a shared machine does not count; exits 1 when a form could not be measured (an exception, a
non-finite result, or forms that disagree by more than 1e-4).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial

import torch
from torch.nn.functional import logsigmoid, normalize

from swar_bench import mechanisms
from swar_bench.mechanisms import MECHANISMS, GatedDeltaNet, state_bytes_at
from swar_bench.mechanisms.ops import (
    chunk_gated_delta_rule,
    chunk_simple_gla,
    recurrent_gated_delta_rule,
    recurrent_simple_gla,
)
from swar_bench.mechanisms.ops.based import chunk_based, recurrent_based
from swar_bench.mechanisms.ops.dplr_delta_rule import (
    chunk_dplr_delta_rule,
    recurrent_dplr_delta_rule,
)
from swar_bench.mechanisms.ops.gated_delta_product import (
    chunk_gated_delta_product,
    recurrent_gated_delta_product,
)
from swar_bench.mechanisms.ops.gla import chunk_gla, recurrent_gla
from swar_bench.mechanisms.ops.kda import chunk_kda, recurrent_kda
from swar_bench.mechanisms.ops.log_linear_attention import (
    chunk_log_linear_attention,
    levels_needed,
    recurrent_log_linear_attention,
)
from swar_bench.mechanisms.ops.mlstm import chunk_mlstm, recurrent_mlstm
from swar_bench.mechanisms.ops.selective_scan import (
    chunk_selective_scan,
    recurrent_selective_scan,
)


def cell_inputs(
    batch_size: int, seq_len: int, n_heads: int, head_dim: int
) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    shape = (batch_size, seq_len, n_heads)
    return {
        "q": torch.randn(*shape, head_dim, generator=gen),
        "k": normalize(torch.randn(*shape, head_dim, generator=gen), dim=-1),
        "v": torch.randn(*shape, head_dim, generator=gen),
        "g": logsigmoid(torch.randn(*shape, generator=gen) + 3.0),
        "beta": torch.rand(*shape, generator=gen),
        "initial_state": torch.randn(batch_size, n_heads, head_dim, head_dim, generator=gen),
    }


def per_channel_cell_forms(args) -> list[tuple[str, str, Callable, dict[str, torch.Tensor]]]:
    """The cells with a decay per channel (GLA / HGRN2, KDA), Gated DeltaProduct and Mamba's
    selective scan, at their mechanisms' sizes for d_model=64 and their default chunk sizes."""
    from fla.ops.gated_delta_product.naive import naive_recurrent_gated_delta_product
    from fla.ops.gla.naive import naive_recurrent_gla
    from fla.ops.kda.naive import naive_recurrent_kda

    B, T = args.batch_size, args.seq_len
    gen = torch.Generator().manual_seed(1)
    base = cell_inputs(B, T, n_heads=2, head_dim=32)
    per_channel = {**base, "g": logsigmoid(torch.randn(B, T, 2, 32, generator=gen) + 3.0)}
    gla = {k: v for k, v in per_channel.items() if k != "beta"}
    steps = cell_inputs(B, 2 * T, n_heads=2, head_dim=32)  # n_householder = 2 steps per token
    gdp = {
        **{k: steps[k] for k in ("k", "v", "beta", "initial_state")},
        **{k: base[k] for k in ("q", "g")},
    }
    scan = {  # Mamba's defaults at d_model=64: d_inner 64, d_state 16
        "u": torch.randn(B, T, 64, generator=gen),
        "delta": torch.nn.functional.softplus(torch.randn(B, T, 64, generator=gen) - 3.0),
        "A": -torch.arange(1.0, 17.0).repeat(64, 1),
        "B": torch.randn(B, T, 16, generator=gen),
        "C": torch.randn(B, T, 16, generator=gen),
        "D": torch.ones(64),
        "initial_state": torch.randn(B, 64, 16, generator=gen),
    }
    cell_gla, cell_kda = (
        "gated linear attention (H=2, K=V=32)",
        "Kimi delta attention (H=2, K=V=32)",
    )
    cell_gdp = "gated delta product (H=2, K=V=32, n_h=2)"
    cell_scan = "selective scan, Mamba S6 (D=64, N=16)"
    return [
        (cell_gla, "chunk-parallel (ours, chunk_size=32)", chunk_gla, gla),
        (cell_gla, "token-by-token (ours)", recurrent_gla, gla),
        (
            cell_gla,
            "fla naive_recurrent_gla",
            lambda q, k, v, g, initial_state: naive_recurrent_gla(
                q, k, v, g, initial_state=initial_state, output_final_state=True
            ),
            gla,
        ),
        (cell_kda, "chunk-parallel (ours, chunk_size=32)", chunk_kda, per_channel),
        (cell_kda, "token-by-token (ours)", recurrent_kda, per_channel),
        (
            cell_kda,
            "fla naive_recurrent_kda",
            lambda q, k, v, g, beta, initial_state: naive_recurrent_kda(
                q, k, v, g, beta, initial_state=initial_state, output_final_state=True
            ),
            per_channel,
        ),
        (
            cell_gdp,
            f"chunk-parallel (ours, chunk_size={args.chunk_size} steps)",
            partial(chunk_gated_delta_product, n_householder=2, chunk_size=args.chunk_size),
            gdp,
        ),
        (
            cell_gdp,
            "step-by-step (ours)",
            partial(recurrent_gated_delta_product, n_householder=2),
            gdp,
        ),
        (
            cell_gdp,
            "fla naive_recurrent_gated_delta_product",
            lambda q, k, v, g, beta, initial_state: naive_recurrent_gated_delta_product(
                q, k, v, g, beta, scale=32**-0.5, initial_state=initial_state, num_householder=2
            ),
            gdp,
        ),
        (
            cell_scan,
            f"chunk-parallel (ours, chunk_size={args.chunk_size})",
            partial(chunk_selective_scan, chunk_size=args.chunk_size),
            scan,
        ),
        (cell_scan, "token-by-token (ours)", recurrent_selective_scan, scan),
    ]


def state_and_memory_cell_forms(args) -> list[tuple[str, str, Callable, dict[str, torch.Tensor]]]:
    """RWKV-7's DPLR delta rule, Based's Taylor linear attention, the mLSTM cell and log-linear
    attention at their mechanisms' sizes for d_model=64 (2 heads) and default chunk sizes; forms
    whose state is a tuple report its first tensor."""
    B, T = args.batch_size, args.seq_len
    gen = torch.Generator().manual_seed(2)
    base = cell_inputs(B, T, n_heads=2, head_dim=32)
    kappa = normalize(torch.randn(B, T, 2, 32, generator=gen), dim=-1)
    dplr = {
        **{k: base[k] for k in ("q", "k", "v", "initial_state")},
        "a": -kappa,
        "b": kappa * torch.rand(B, T, 2, 32, generator=gen),
        "gk": logsigmoid(torch.randn(B, T, 2, 32, generator=gen) + 3.0),
    }
    based = {
        "q": torch.randn(B, T, 2, 16, generator=gen),
        "k": torch.randn(B, T, 2, 16, generator=gen),
        "v": base["v"],
    }
    gates = {  # positive q, k: a well-conditioned normaliser, so the forms agree to 1e-4
        "q": base["q"].abs(),
        "k": base["k"].abs(),
        "v": base["v"],
        "log_f": base["g"],
        "i_pre": torch.randn(B, T, 2, generator=gen),
    }
    loglinear = {
        **{k: base[k] for k in ("q", "k", "v", "g")},
        "level_scales": torch.rand(B, T, 2, levels_needed(T), generator=gen),
    }

    def first(fn):
        def call(**kw):
            o, state = fn(**kw)
            return o, state[0]

        return call

    chunk = "chunk-parallel (ours, chunk_size={})"
    cell_dplr, cell_based = (
        "DPLR delta rule, RWKV-7 (H=2, K=V=32)",
        "Based Taylor linear attention (H=2, K=16, V=32)",
    )
    cell_mlstm, cell_ll = "mLSTM cell (H=2, K=V=32)", "log-linear attention (H=2, K=V=32)"
    return [
        (cell_dplr, chunk.format(16), partial(chunk_dplr_delta_rule, chunk_size=16), dplr),
        (cell_dplr, "token-by-token (ours)", recurrent_dplr_delta_rule, dplr),
        (cell_based, chunk.format(64), partial(chunk_based, chunk_size=64), based),
        (cell_based, "token-by-token (ours)", recurrent_based, based),
        (cell_mlstm, chunk.format(64), first(partial(chunk_mlstm, chunk_size=64)), gates),
        (cell_mlstm, "token-by-token (ours)", first(recurrent_mlstm), gates),
        (
            cell_ll,
            chunk.format(64),
            first(partial(chunk_log_linear_attention, chunk_size=64)),
            loglinear,
        ),
        (cell_ll, "token-by-token (ours)", first(recurrent_log_linear_attention), loglinear),
    ]


def fwd_bwd(fn: Callable, inputs: dict[str, torch.Tensor]) -> tuple[float, torch.Tensor]:
    """CPU seconds for one forward + backward, and the output (for the agreement check)."""
    leaves = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    start = time.process_time()
    o, s = fn(**leaves)
    (o.square().mean() + s.square().mean()).backward()
    return time.process_time() - start, o.detach()


def round_robin(
    steps: list[Callable[[], tuple[float, torch.Tensor]]], repeats: int
) -> list[tuple[float, torch.Tensor]]:
    """Best seconds and output of each timed step; the steps take turns in each of ``repeats``
    rounds after one warm-up, so a change in machine load affects all of them alike."""
    outs = [step()[1] for step in steps]
    best = [float("inf")] * len(steps)
    for _ in range(repeats):
        for i, step in enumerate(steps):
            best[i] = min(best[i], step()[0])
    return list(zip(best, outs))


def cell_rows(args) -> list[tuple[str, str, float, torch.Tensor]]:
    from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
    from fla.ops.simple_gla.naive import naive_recurrent_simple_gla

    gdr = cell_inputs(
        args.batch_size, args.seq_len, n_heads=2, head_dim=32
    )  # GatedDeltaNet at d_model=64
    gla = {
        k: v for k, v in cell_inputs(args.batch_size, args.seq_len, 1, 64).items() if k != "beta"
    }
    chunk = f"chunk-parallel (ours, chunk_size={args.chunk_size})"
    forms = [
        (
            "gated delta rule (H=2, K=V=32)",
            chunk,
            partial(chunk_gated_delta_rule, chunk_size=args.chunk_size),
            gdr,
        ),
        (
            "gated delta rule (H=2, K=V=32)",
            "token-by-token (ours)",
            recurrent_gated_delta_rule,
            gdr,
        ),
        (
            "gated delta rule (H=2, K=V=32)",
            "fla naive_recurrent_gated_delta_rule",
            lambda q, k, v, g, beta, initial_state: naive_recurrent_gated_delta_rule(
                q, k, v, beta, g, initial_state=initial_state, output_final_state=True
            ),
            gdr,
        ),
        (
            "scalar-decay linear attention (H=1, K=V=64)",
            chunk,
            partial(chunk_simple_gla, chunk_size=args.chunk_size),
            gla,
        ),
        (
            "scalar-decay linear attention (H=1, K=V=64)",
            "token-by-token (ours)",
            recurrent_simple_gla,
            gla,
        ),
        (
            "scalar-decay linear attention (H=1, K=V=64)",
            "fla naive_recurrent_simple_gla",
            lambda q, k, v, g, initial_state: naive_recurrent_simple_gla(
                q, k, v, g, initial_state=initial_state, output_final_state=True
            ),
            gla,
        ),
        *per_channel_cell_forms(args),
        *state_and_memory_cell_forms(args),
    ]
    wanted = [c.strip().lower() for c in args.cells.split(",")]
    forms = [f for f in forms if any(c in f[0].lower() for c in wanted)]
    rows = []
    for cell in dict.fromkeys(c for c, *_ in forms):
        group = [(form, fn, inputs) for c, form, fn, inputs in forms if c == cell]
        timed = round_robin([partial(fwd_bwd, fn, inputs) for _, fn, inputs in group], args.repeats)
        rows += [(cell, form, sec, out) for (form, _, _), (sec, out) in zip(group, timed)]
    return rows


def model_step(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], tuple[float, torch.Tensor]]:
    """A timed (CPU seconds) forward + backward of ``model`` on ``x`` from an empty state."""

    def step() -> tuple[float, torch.Tensor]:
        model.zero_grad()
        start = time.process_time()
        logits, _ = model(x, model.init_state(x.shape[0]))
        logits.logsumexp(-1).mean().backward()
        return time.process_time() - start, logits.detach()

    return step


def tokens(args) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    return torch.randint(0, 40, (args.batch_size, args.seq_len), generator=gen)


def model_rows(args) -> list[tuple[str, str, float, torch.Tensor]]:
    models = []
    for mode in ("chunk", "recurrent"):
        torch.manual_seed(0)
        models.append(GatedDeltaNet(mode=mode))
    timed = round_robin([model_step(m, tokens(args)) for m in models], args.repeats)
    name = "GatedDeltaNet model (d_model=64, 2 layers)"
    return [
        (name, f"mode={m.blocks[0].mixer.mode}", sec, out) for m, (sec, out) in zip(models, timed)
    ]


def mechanism_rows(args) -> list[tuple[str, float, int]]:
    """Every learned mechanism at its defaults: (name, seconds, state bytes per sequence)."""
    models = {}
    for name in MECHANISMS:
        torch.manual_seed(0)
        model = getattr(mechanisms, name)()
        if model.n_params:  # the Oracle has nothing to train
            models[name] = model
    timed = round_robin([model_step(m, tokens(args)) for m in models.values()], args.repeats)
    rows = []
    for (name, model), (seconds, out) in zip(models.items(), timed):
        if not torch.isfinite(out).all():
            raise FloatingPointError(f"{name} produced non-finite logits")
        rows.append((name, seconds, state_bytes_at(model, 1, args.seq_len)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seq-len", type=int, default=512, help="tokens per sequence (default 512)"
    )
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per call (default 8)")
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=64,
        help="chunk length of the chunk-parallel cell forms (default 64, as in the configs)",
    )
    parser.add_argument(
        "--cells",
        default="",
        help="measure only the cells whose name contains one of these comma-separated texts, and no models (default: all)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed repeats, the fastest reported (default 5)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: stable ratios on a shared machine)",
    )
    args = parser.parse_args(argv)
    if min(args.seq_len, args.batch_size, args.repeats, args.threads, args.chunk_size) < 1:
        parser.error("--seq-len, --batch-size, --repeats, --threads and --chunk-size must be >= 1")
    torch.set_num_threads(args.threads)
    try:
        rows = cell_rows(args) + ([] if args.cells else model_rows(args))
        zoo = [] if args.cells else mechanism_rows(args)
    except Exception as exc:  # noqa: BLE001 -- any failure means the benchmark could not measure
        print(f"error: could not measure: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    n_tokens = args.batch_size * args.seq_len
    print(
        f"forward+backward, T={args.seq_len}, B={args.batch_size}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, CPU time, best of {args.repeats} rounds "
        "(forms take turns)\n"
    )
    print("| cell | form | ms | tokens/s | chunk speed-up |")
    print("|---|---|---:|---:|---:|")
    ok = True
    by_cell: dict[str, list] = {}
    for cell, form, seconds, out in rows:
        by_cell.setdefault(cell, []).append((form, seconds, out))
    for cell, forms in by_cell.items():
        chunk_seconds, chunk_out = forms[0][1], forms[0][2]
        for form, seconds, out in forms:
            agree = torch.isfinite(out).all() and (out - chunk_out).abs().max().item() <= 1e-4
            ok &= bool(agree)
            ratio = seconds / chunk_seconds
            print(
                f"| {cell} | {form} | {1e3 * seconds:.1f} | {n_tokens / seconds:,.0f} | "
                f"{'-' if form == forms[0][0] else f'{ratio:.1f}x'} |"
            )
    if zoo:
        print("\nEvery mechanism at its defaults (d_model=64, 2 layers), same tokens:\n")
        print("| mechanism | ms | tokens/s | state bytes / sequence |")
        print("|---|---:|---:|---:|")
        for name, seconds, state_bytes in zoo:
            print(f"| {name} | {1e3 * seconds:.1f} | {n_tokens / seconds:,.0f} | {state_bytes:,} |")
    if not ok:
        print(
            "error: a form disagrees with the chunk-parallel form by more than 1e-4",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
