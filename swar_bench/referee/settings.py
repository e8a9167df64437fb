"""The referee's settings, checked before any work: ranges, seeds, vocabulary, training
protocol and integer counts; each bad value is a ``ValueError`` of one line naming it and the
expected range (docs/REFEREE.md, "Run it" and "Training protocols: fixed steps or matched FLOPs")."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from swar_bench.referee.suites import DEFAULT_VOCAB, MIN_VOCAB
from swar_bench.utils.argparsing import TORCH_MAX_SEED, check_seed

TRAIN_PROTOCOLS = ("fixed_steps", "matched_flops")
"""How each (suite, range) cell is trained.

``fixed_steps`` (the referee's protocol): at most ``n_train_steps`` (``perplexity_steps``) steps,
stopped earlier only when the cell's FLOP share is spent; mechanisms of different sizes then spend
different FLOPs. ``matched_flops``: each cell trains until its FLOP share
(``compute_budget_flops / len(ranges)``) is spent, whatever the step count (a bigger model takes
fewer steps); the last step uses only the rows the remaining share pays for, so every cell spends
its share to within one training row."""


def shown(value: Any) -> str:
    """``value`` as a user typed it: an integral float as an integer (``-8``, not ``-8.0``)."""
    if (
        isinstance(value, (float, np.floating))
        and math.isfinite(float(value))
        and float(value).is_integer()
    ):
        return str(int(value))
    return repr(value)


def as_int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    # Bad user input is a ValueError throughout the project, whatever its type.
    expected = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}={shown(value)}: expected {expected}")  # noqa: TRY004
    if (
        not math.isfinite(float(value))
        or int(value) != value
        or int(value) < minimum
        or (maximum is not None and int(value) > maximum)
    ):
        raise ValueError(f"{name}={shown(value)}: expected {expected}")
    return int(value)


MAX_SEED = TORCH_MAX_SEED
"""The largest ``seed`` (and ``init_seed``): ``torch.manual_seed`` takes at most ``2**64 - 1``."""


MIN_INIT_SEED = -(2**63)
"""The smallest ``init_seed``: ``torch.manual_seed`` maps a negative seed to ``2**64 - 1 + seed``."""


COUNTS = {"hops": 1, "n_train_steps": 0, "n_eval_trials": 1, "perplexity_steps": 0, "curriculum_rounds": 0,
          "batch_size": 1, "tbptt_steps": 1, "chunk_size": 1}
"""``evaluate``'s integer counts and the least each takes (``as_int``)."""

EXPECTED = {
    "lr": " is invalid; expected a positive finite learning rate",
    "grad_clip": " is invalid; expected a max gradient norm > 0 (null: no clipping)",
    "state_budget_bytes": ": expected a number of bytes > 0",
    "compute_budget_flops": ": expected a number of FLOPs > 0",
    "resample_prob": ": expected a probability in [0, 1]",
    "threads": ": expected a number of CPU threads >= 1",
}
"""What follows ``name=value`` in the refusal of each of the referee's number settings."""


def expected_tail(option: str, hops: Any = 3) -> str | None:
    """What follows ``option=value`` in the referee's refusal of ``option`` (``utils.type_lines.Expected``:
    ``ranges[]`` for one distance, whose least is ``max(2, 2 * hops)``), else None; the same words
    as the checks of ``evaluate`` and of ``swar-bench referee``, for a value of the wrong type."""
    if option in ("seed", "init_seed"):
        return f": expected an integer in [{0 if option == 'seed' else MIN_INIT_SEED}, {MAX_SEED}]"
    if option in COUNTS or option == "vocab":
        return f": expected an integer >= {COUNTS.get(option, MIN_VOCAB)}"
    if option == "ranges[]":
        least = int(hops) if isinstance(hops, int) and not isinstance(hops, bool) and hops >= 1 else 3
        return f": expected an integer >= {max(2, 2 * least)}"
    return EXPECTED.get(option)


def check_init_seed(init_seed: Any) -> int:
    """``init_seed`` as an int in ``[MIN_INIT_SEED, MAX_SEED]`` (what ``torch.manual_seed`` takes;
    the seed check of ``swar_bench.utils.argparsing.check_seed``).

    Raises:
        ValueError: one line naming ``init_seed=value`` and that range.
    """
    return check_seed(init_seed, "init_seed", MAX_SEED, MIN_INIT_SEED)


def check_ranges(ranges: Sequence[float], hops: int) -> tuple[int, ...]:
    """Ranges as strictly increasing integer distances (tokens), each >= ``max(2, 2 * hops)``.

    Accepts floats with integral values (``1e3``).

    Raises:
        ValueError: empty, non-integral, too small, or not strictly increasing.
    """
    try:
        values = list(ranges)
    except TypeError:
        raise ValueError(f"ranges={ranges!r}: expected a sequence of distances in tokens") from None
    if not values:
        raise ValueError("ranges=(): expected at least one distance in tokens")
    minimum = max(2, 2 * int(hops))
    out = tuple(as_int(f"ranges[{i}]", v, minimum) for i, v in enumerate(values))
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"ranges={list(out)}: expected strictly increasing distances")
    return out


def resolve_vocab(mechanism: object, vocab: int | None) -> int:
    """The suites' alphabet: ``vocab`` if given, else the mechanism's ``vocab_size``, else ``DEFAULT_VOCAB``."""
    if vocab is None:
        vocab = getattr(mechanism, "vocab_size", None) or DEFAULT_VOCAB
    return as_int("vocab", vocab, MIN_VOCAB)


def check_train_protocol(train_protocol: str) -> str:
    """``train_protocol`` if it is one of ``TRAIN_PROTOCOLS``; else ``ValueError`` (one line)."""
    if train_protocol not in TRAIN_PROTOCOLS:
        raise ValueError(
            f"train_protocol={train_protocol!r}: expected one of {', '.join(TRAIN_PROTOCOLS)}"
        )
    return train_protocol


DEVICE_TYPES = ("cpu", "cuda")
"""The devices the referee runs on: the CPU, and a CUDA device (``cuda``, ``cuda:N``)."""


def device_problem(device: str, error: BaseException) -> str:
    """The refusal of ``--device`` (``device``) that torch could not use (``error``, raised by
    ``torch.device`` or by moving the mechanism there), one line: ``device='bogus': unknown device
    type (did you mean ...?); expected cpu, or cuda / cuda:N where a CUDA device is available``
    for a name torch does not know (torch lists its 20 device types), ``device='cuda': no CUDA
    device is available on this machine; expected cpu`` where there is none, else torch's reason
    with what runs here."""
    import torch

    from swar_bench.utils.text import did_you_mean

    kind, colon, index = device.partition(":")
    cuda = torch.cuda.is_available()
    runs_here = f"cpu, cuda or cuda:N (N < {torch.cuda.device_count()})" if cuda else "cpu"
    if not device.strip():
        return f"device={device!r}: no device named; expected {runs_here}"
    if "device type at start of device string" in str(error) or "Invalid device string" in str(error):
        if colon and kind in DEVICE_TYPES:
            return f"device={device!r}: the index {index!r} after {kind}: is not an integer >= 0; expected {runs_here}"
        close = f" (did you mean {kind.lower()}?)" if kind.lower() in DEVICE_TYPES else did_you_mean(kind, DEVICE_TYPES)
        return (f"device={device!r}: unknown device type{close}; expected cpu, or cuda / cuda:N where a CUDA device "
                f"is available (here: {runs_here})")
    if kind == "cuda" and not cuda:
        return f"device={device!r}: no CUDA device is available on this machine; expected cpu"
    reason = " ".join(str(error).split())[:200]
    return f"device={device!r} is not usable here ({reason}); expected {runs_here}"
