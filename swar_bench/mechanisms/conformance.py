"""The conformance check of a mechanism: run it before spending compute on a new layer.

``swar-bench check-mechanism CLASS_PATH [--init_args JSON | --config YAML]`` prints one row per
check with its numbers and exits 0 only when every check passes. The checks, in order (each is
the protocol's rule of ``swar_bench/mechanisms/protocol.py`` or of docs/MECHANISMS.md):

1. ``protocol``: ``vocab_size``, ``n_params``, ``flops_per_token``, ``init_state(batch_size,
   device, dtype)``, ``forward(input_ids, state)``, ``detach_state(state)``,
   ``state_bytes(batch_size)`` (``state_bytes(batch_size, seq_len=T)`` for a growing state) exist
   with those signatures.
2. ``task fit``: the vocabulary holds the task's tokens and the rules a mechanism reads
   (``task_params``) are the data's (``swar_bench.mechanisms.task_fit.check_task_fits``).
3. ``forward``: ``input_ids[B, T]`` int64 -> ``logits[B, T, vocab_size]`` floating point.
4. ``streaming, random splits``: one forward on T tokens equals the stream cut at random
   places with the state carried (logits and final state, max abs difference <= ``atol``).
5. ``streaming, 1-token pieces``: the same, one token per call.
6. ``fixed size``: for ``fixed_size_state`` (the default) the measured state bytes after
   ``long_len`` tokens equal those after ``seq_len`` tokens; a growing state must declare
   ``fixed_size_state = False``.
7. ``state_bytes``: the analytic ``state_bytes`` equals ``measure_state_bytes`` of the state
   from ``init_state`` (batch 1 and 3) and after ``seq_len`` tokens.
8. ``detach_state``: the detached state has the same values and no tensor attached to the
   autograd graph.
9. ``same seed``: two builds under ``torch.manual_seed(seed)`` give the same logits.
10. ``finite, long input``: logits finite over ``long_len`` tokens streamed in chunks of 256, and
    gradients finite through the last chunk.
11. ``finite, degenerate inputs``: logits and gradients finite for one token, an all-PAD
    sequence and a sequence of the largest token id.
12. ``flops_per_token``: finite and > 0 (>= 0 for a mechanism without parameters); ``n_params``
    equals the trainable parameters of the module.

The input streams are real passkey_swar examples (``swar_bench.tasks.make_example``).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import random
from collections.abc import Callable
from typing import Any

import torch

from swar_bench.mechanisms.protocol import is_fixed_size, iter_state_tensors, measure_state_bytes
from swar_bench.utils.argparsing import check_seed
from swar_bench.utils.text import plural

EVAL_CHUNK = 256
"""Tokens per call when streaming the long input (the harness's default ``tbptt_steps``)."""

LONG_STREAM_OFFSETS = (1, 2)
"""Offsets from ``seed`` of the example seeds of the long inputs (fixed size, finite long input);
the test batch takes ``seed .. seed + batch_size - 1``."""


def max_seed(batch_size: int = 2) -> int:
    """The largest ``seed`` the checks accept: every example seed they derive from it
    (``seed + b`` for the batch rows, ``seed + 1`` and ``seed + 2`` for the long inputs) must stay
    an example seed, below ``2**63``."""
    return 2**63 - 1 - max(batch_size - 1, *LONG_STREAM_OFFSETS)


@dataclasses.dataclass
class CheckResult:
    """One row of the report: ``name``, ``passed`` and ``detail`` (the numbers, or the error)."""

    name: str
    passed: bool
    detail: str


class CheckFailed(Exception):
    """A check's rule is broken; the message holds the numbers."""


def task_stream(batch_size: int, seq_len: int, params: Any = None, seed: int = 0) -> torch.Tensor:
    """``input_ids[batch_size, seq_len]`` int64: the first ``seq_len`` tokens of passkey_swar
    examples (``make_example`` with seeds ``seed, seed + 1, ...``, enough writes for the length)."""
    from swar_bench.tasks.passkey_swar import make_example

    n_writes = max(1, seq_len // 3)
    rows = []
    for b in range(batch_size):
        ids = make_example(seed + b, n_writes, params)["input_ids"]
        rows.append(torch.as_tensor(ids[:seq_len], dtype=torch.int64))
    return torch.stack(rows)


def _max_diff(a: Any, b: Any) -> float:
    ta, tb = list(iter_state_tensors(a)), list(iter_state_tensors(b))
    if len(ta) != len(tb):
        return math.inf
    diff = 0.0
    for x, y in zip(ta, tb):
        if x.shape != y.shape:
            return math.inf
        if x.numel():
            diff = max(diff, (x.double() - y.double()).abs().max().item())
    return diff


def _stream(model: Any, x: torch.Tensor, cuts: list[int]) -> tuple[torch.Tensor, Any]:
    state = model.init_state(x.shape[0])
    outs = []
    bounds = [0, *sorted({c for c in cuts if 0 < c < x.shape[1]}), x.shape[1]]
    for a, b in itertools.pairwise(bounds):
        logits, state = model(x[:, a:b], state)
        outs.append(logits)
    return torch.cat(outs, dim=1), state


def _signature_problem(fn: Any, name: str, args: tuple, kwargs: dict) -> str | None:
    if not callable(fn):
        return f"{name} is missing"
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as err:
        return f"{name} does not accept the protocol's arguments ({err})"
    except ValueError:  # no signature (a builtin): trust it
        return None
    return None


def _fmt(n: float) -> str:
    return f"{n:.2e}" if n not in (0.0, math.inf) else ("0" if n == 0.0 else "inf")


class Conformance:
    """Runs the checks of the module docstring on a mechanism built by ``build()``.

    Args:
        build: a callable returning a fresh mechanism (called again for the seed check).
        task_params: ``PasskeySwarParams`` of the data (the release's when None).
        batch_size: sequences per test batch.
        seq_len: tokens of the streaming and state checks.
        long_len: tokens of the long input (fixed-size and finiteness checks).
        n_splits: random splittings tried.
        atol: max abs difference allowed between one forward and a chunked stream (float32).
        seed: the seed of the builds, splits and data, in ``[0, max_seed(batch_size)]``.

    Raises:
        ValueError: ``seed`` outside that range (one line), before anything is built.
    """

    def __init__(
        self,
        build: Callable[[], Any],
        task_params: Any = None,
        batch_size: int = 2,
        seq_len: int = 64,
        long_len: int = 2048,
        n_splits: int = 3,
        atol: float = 1e-4,
        seed: int = 0,
    ) -> None:
        self.build = build
        self.task_params = task_params
        self.batch_size = batch_size
        self.seq_len = seq_len
        self.long_len = max(long_len, seq_len + 1)
        self.n_splits = n_splits
        self.atol = atol
        self.seed = check_seed(seed, maximum=max_seed(batch_size))
        torch.manual_seed(seed)
        self.model = build()
        if isinstance(self.model, torch.nn.Module):
            self.model.eval()
        self.x = task_stream(batch_size, seq_len, task_params, seed)

    # ----------------------------------------------------------------- checks

    def check_protocol(self) -> str:
        m = self.model
        problems = []
        vocab = getattr(m, "vocab_size", None)
        if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1:
            problems.append(f"vocab_size={vocab!r} (expected an int >= 1)")
        for attr in ("n_params", "flops_per_token"):
            try:
                value = getattr(m, attr)
            except Exception as err:  # noqa: BLE001 - any failure is a protocol violation to report
                problems.append(f"{attr} raised {type(err).__name__}: {err}")
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                problems.append(f"{attr}={value!r} (expected a number)")
        grows = not is_fixed_size(m)
        for fn, name, args, kwargs in (
            (getattr(m, "init_state", None), "init_state", (1,), {"device": "cpu", "dtype": None}),
            (getattr(m, "forward", None), "forward", (self.x, None), {}),
            (getattr(m, "detach_state", None), "detach_state", (None,), {}),
            (getattr(m, "state_bytes", None), "state_bytes", (1,), {"seq_len": 1} if grows else {}),
        ):
            problem = _signature_problem(fn, name, args, kwargs)
            if problem:
                problems.append(problem)
        if problems:
            raise CheckFailed("; ".join(problems))
        return (
            f"vocab_size={m.vocab_size}, n_params={int(m.n_params):,}, "
            f"fixed_size_state={not grows}; init_state, forward, detach_state, state_bytes bind"
        )

    def check_task_fit(self) -> str:
        from swar_bench.mechanisms.task_fit import check_task_fits
        from swar_bench.tasks.passkey_swar import vocab

        try:
            check_task_fits(self.model, self.task_params)
        except ValueError as err:
            raise CheckFailed(str(err)) from None
        need = vocab(self.task_params).size
        rules = "reads task_params = the data's" if getattr(self.model, "task_params", None) is not None else "no task rules read"
        return f"vocab_size {self.model.vocab_size} >= task vocabulary {need}; {rules}"

    def check_forward(self) -> str:
        with torch.no_grad():
            logits, _ = self.model(self.x, self.model.init_state(self.batch_size))
        expected = (self.batch_size, self.seq_len, self.model.vocab_size)
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != expected:
            shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise CheckFailed(f"logits {shape}, expected [B, T, V] = {list(expected)}")
        if not logits.is_floating_point():
            raise CheckFailed(f"logits dtype {logits.dtype}, expected floating point")
        return f"input_ids {list(self.x.shape)} int64 -> logits {list(logits.shape)} {str(logits.dtype).removeprefix('torch.')}"

    def _compare_stream(self, splittings: list[list[int]]) -> tuple[float, float]:
        with torch.no_grad():
            full, full_state = self.model(self.x, self.model.init_state(self.batch_size))
            worst_logits = worst_state = 0.0
            for cuts in splittings:
                chunked, state = _stream(self.model, self.x, cuts)
                worst_logits = max(worst_logits, _max_diff(full, chunked))
                worst_state = max(worst_state, _max_diff(full_state, state))
        return worst_logits, worst_state

    def _report_stream(self, label: str, splittings: list[list[int]]) -> str:
        logits, state = self._compare_stream(splittings)
        text = f"{label}: max |logits diff| {_fmt(logits)}, max |state diff| {_fmt(state)} (atol {self.atol:g})"
        if not (logits <= self.atol and state <= self.atol):
            raise CheckFailed(text + "; expected the state carried between calls to give one forward's output")
        return text

    def check_streaming_random(self) -> str:
        rng = random.Random(self.seed)
        splittings = [
            sorted(rng.sample(range(1, self.seq_len), k=rng.randint(1, min(6, self.seq_len - 1))))
            for _ in range(self.n_splits)
        ]
        shown = ", ".join(str(c) for c in splittings[0])
        return self._report_stream(f"{plural(self.n_splits, 'split')} of T={self.seq_len} (e.g. at {shown})", splittings)

    def check_streaming_tokens(self) -> str:
        return self._report_stream(f"T={self.seq_len} one token per call", [list(range(1, self.seq_len))])

    def _state_after(self, x: torch.Tensor) -> Any:
        with torch.no_grad():
            state = self.model.init_state(x.shape[0])
            for a in range(0, x.shape[1], EVAL_CHUNK):
                logits, state = self.model(x[:, a : a + EVAL_CHUNK], state)
                if not torch.isfinite(logits).all():
                    raise CheckFailed(f"non-finite logits in tokens {a}..{a + EVAL_CHUNK} of T={x.shape[1]}")
        return state

    def check_fixed_size(self) -> str:
        short = measure_state_bytes(self._state_after(self.x[:1]))
        long_x = task_stream(1, self.long_len, self.task_params, self.seed + LONG_STREAM_OFFSETS[0])
        long = measure_state_bytes(self._state_after(long_x))
        if not is_fixed_size(self.model):
            return f"declares fixed_size_state=False: {short:,} bytes at T={self.seq_len}, {long:,} at T={self.long_len}"
        if long != short:
            raise CheckFailed(
                f"measured state {short:,} bytes at T={self.seq_len}, {long:,} at T={self.long_len}: it grows; "
                "expected a fixed size (or fixed_size_state = False)"
            )
        return f"measured state {short:,} bytes at T={self.seq_len} and at T={self.long_len}"

    def check_state_bytes(self) -> str:
        m = self.model
        grows = not is_fixed_size(m)
        rows = []
        for batch in (1, 3):
            measured = measure_state_bytes(m.init_state(batch))
            claimed = int(m.state_bytes(batch, seq_len=0) if grows else m.state_bytes(batch))
            rows.append((f"init B={batch}", claimed, measured))
        measured = measure_state_bytes(self._state_after(self.x))
        claimed = int(m.state_bytes(self.batch_size, seq_len=self.seq_len) if grows else m.state_bytes(self.batch_size))
        rows.append((f"after T={self.seq_len} B={self.batch_size}", claimed, measured))
        text = "; ".join(f"{where}: state_bytes {c:,}, measured {ms:,}" for where, c, ms in rows)
        if any(c != ms for _, c, ms in rows):
            raise CheckFailed(text + "; expected equal")
        return text

    def check_detach(self) -> str:
        with torch.enable_grad():
            _, state = self.model(self.x, self.model.init_state(self.batch_size))
            attached = sum(t.requires_grad for t in iter_state_tensors(state))
            detached = self.model.detach_state(state)
        still = sum(t.requires_grad or t.grad_fn is not None for t in iter_state_tensors(detached))
        diff = _max_diff(state, detached)
        text = f"{attached} state tensor(s) on the graph before, {still} after; max |value change| {_fmt(diff)}"
        if still or diff != 0.0:
            raise CheckFailed(text + "; expected 0 after and the same values")
        return text

    def check_seed(self) -> str:
        torch.manual_seed(self.seed)
        other = self.build()
        if isinstance(other, torch.nn.Module):
            other.eval()
        with torch.no_grad():
            a, _ = self.model(self.x, self.model.init_state(self.batch_size))
            b, _ = other(self.x, other.init_state(self.batch_size))
        diff = _max_diff(a, b)
        text = f"two builds with torch.manual_seed({self.seed}): max |logits diff| {_fmt(diff)}"
        if diff != 0.0:
            raise CheckFailed(text + "; expected 0")
        return text

    def _params(self) -> list[torch.Tensor]:
        if not isinstance(self.model, torch.nn.Module):
            return []
        return [p for p in self.model.parameters() if p.requires_grad]

    def _finite_with_grad(self, x: torch.Tensor, state: Any, label: str) -> None:
        params = self._params()
        for p in params:
            p.grad = None
        with torch.enable_grad():
            logits, _ = self.model(x, state)
            if not torch.isfinite(logits).all():
                raise CheckFailed(f"non-finite logits on {label}")
            if params and logits.requires_grad:
                logits.float().logsumexp(-1).mean().backward()
        bad = [p for p in params if p.grad is not None and not torch.isfinite(p.grad).all()]
        for p in params:
            p.grad = None
        if bad:
            raise CheckFailed(f"non-finite gradients of {len(bad)} parameter tensor(s) on {label}")

    def check_finite_long(self) -> str:
        long_x = task_stream(1, self.long_len, self.task_params, self.seed + LONG_STREAM_OFFSETS[1])
        head, tail = long_x[:, :-EVAL_CHUNK], long_x[:, -EVAL_CHUNK:]
        state = self.model.detach_state(self._state_after(head)) if head.shape[1] else self.model.init_state(1)
        self._finite_with_grad(tail, state, f"the last {tail.shape[1]} of T={self.long_len} tokens")
        grads = "and gradients " if self._params() else ""
        return f"logits {grads}finite over T={self.long_len} (chunks of {EVAL_CHUNK})"

    def check_finite_degenerate(self) -> str:
        v = self.model.vocab_size
        cases = {
            "one token (B=1, T=1)": torch.ones(1, 1, dtype=torch.int64),
            f"all PAD (T={self.seq_len})": torch.zeros(self.batch_size, self.seq_len, dtype=torch.int64),
            f"all token {v - 1} (T={self.seq_len})": torch.full((self.batch_size, self.seq_len), v - 1, dtype=torch.int64),
        }
        for label, x in cases.items():
            self._finite_with_grad(x, self.model.init_state(x.shape[0]), label)
        return "logits and gradients finite on " + ", ".join(cases)

    def check_flops(self) -> str:
        m = self.model
        flops, n_params = float(m.flops_per_token), int(m.n_params)
        problems = []
        if not math.isfinite(flops) or flops < 0 or (n_params > 0 and flops <= 0):
            problems.append(f"flops_per_token={flops:g}, expected finite and > 0" + (" (>= 0 without parameters)" if n_params == 0 else ""))
        if isinstance(m, torch.nn.Module):
            counted = sum(p.numel() for p in self._params())
            if counted != n_params:
                problems.append(f"n_params={n_params:,} but the module has {counted:,} trainable parameters")
        text = f"flops_per_token={flops:,.0f}, n_params={n_params:,}"
        if problems:
            raise CheckFailed(text + ": " + "; ".join(problems))
        return text

    CHECKS: tuple[tuple[str, str], ...] = (
        ("protocol", "check_protocol"),
        ("task fit", "check_task_fit"),
        ("forward", "check_forward"),
        ("streaming, random splits", "check_streaming_random"),
        ("streaming, 1-token pieces", "check_streaming_tokens"),
        ("fixed size", "check_fixed_size"),
        ("state_bytes", "check_state_bytes"),
        ("detach_state", "check_detach"),
        ("same seed", "check_seed"),
        ("finite, long input", "check_finite_long"),
        ("finite, degenerate inputs", "check_finite_degenerate"),
        ("flops_per_token", "check_flops"),
    )
    """``(row name, method)`` in the order they run."""

    def run(self) -> list[CheckResult]:
        """Every check, in order; a check that raises is a failed row naming the exception.
        After a failed ``protocol`` row the rest are not run (they would only repeat it)."""
        results = []
        for name, method in self.CHECKS:
            try:
                results.append(CheckResult(name, True, getattr(self, method)()))
            except CheckFailed as err:
                results.append(CheckResult(name, False, str(err)))
            except Exception as err:  # noqa: BLE001 - a user's layer may raise anything; it is the row's finding
                first = str(err).strip().splitlines()[0] if str(err).strip() else ""
                results.append(CheckResult(name, False, f"raised {type(err).__name__}: {first}"))
            if name == "protocol" and not results[-1].passed:
                break
        return results


def check_mechanism(build: Callable[[], Any], **options: Any) -> list[CheckResult]:
    """Run every check on the mechanism ``build()`` returns; ``options`` as :class:`Conformance`."""
    return Conformance(build, **options).run()


def passed(results: list[CheckResult]) -> bool:
    """True when every check ran and passed."""
    return len(results) == len(Conformance.CHECKS) and all(r.passed for r in results)


def format_report(results: list[CheckResult], title: str) -> str:
    """The table printed by ``swar-bench check-mechanism``: one row per check, then a verdict line
    (``all N checks passed`` or the first failure)."""
    width = max(len(r.name) for r in results)
    lines = [title, f"{'check':<{width}}  result  numbers"]
    lines += [f"{r.name:<{width}}  {'PASS' if r.passed else 'FAIL':<6}  {r.detail}" for r in results]
    failed = [r for r in results if not r.passed]
    total = len(Conformance.CHECKS)
    if failed:
        lines.append(f"FAILED: {len(failed)} of {total} checks; first failure: {failed[0].name}: {failed[0].detail}")
    elif len(results) < total:
        lines.append(f"FAILED: only {len(results)} of {total} checks ran")
    else:
        lines.append(f"all {total} checks passed")
    return "\n".join(lines)
