"""The commands of a study (``swar-bench study``): run names, each mechanism's budget, the exact
``swar-bench fit`` / ``test`` argument lists of a run, and the facts of a mechanism (state bytes,
FLOPs per token, parameters) the records carry. ``swar_bench.study.runner`` executes them."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swar_bench.study.spec import DEFAULT_CURVE_POINTS, MechanismSpec, StudyError, StudySpec

SWAR_BENCH = [sys.executable, "-m", "swar_bench.cli"]


def lr_text(lr: float) -> str:
    return f"{lr:g}"


def run_name(m: MechanismSpec, lr: float, seed: int, retry: bool = False) -> str:
    """``GatedDeltaNet_lr0.003_seed1`` (``_retry`` for the longer fit of a non-learner)."""
    return f"{m.name}_lr{lr_text(lr)}_seed{seed}" + ("_retry" if retry else "")


@dataclass
class Budget:
    """What the shared config says: steps, the N of training, validation and test."""

    max_steps: int
    train_n: list[int]
    val_n: list[int]
    test_n: list[int]

    @property
    def gate_n(self) -> int:
        return min(self.train_n)


def read_budget(spec: StudySpec, m: MechanismSpec | None = None) -> Budget:
    """The steps and N lists of the shared config of ``m`` (its ``base``, else the study's). The
    steps are the schedule's horizon, ``model.max_steps``, when it is below ``trainer.max_steps``
    (a FLOP-budgeted run caps the trainer's steps far above the steps it will take).

    Raises:
        StudyError: the config lacks ``trainer.max_steps`` or a data N list, or the study asks for
            more ``curve_points`` than a fit has steps, or for ``curve_points`` of a fit whose
            training batches take more than one optimizer step each (``model.step_per_chunk`` with
            ``model.tbptt_steps`` below the shortest training sequence: ``max_steps`` counts
            optimizer steps, Lightning's ``val_check_interval`` batches); one line."""
    import yaml

    config = spec.base_of(m) if m is not None else spec.config
    try:
        cfg = yaml.safe_load(Path(config).read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise StudyError(
            f"{spec.path}: config {config} cannot be read as YAML ({err.__class__.__name__}); expected the "
            "shared budget config (trainer, model, data)"
        ) from None
    if not isinstance(cfg, dict):
        raise StudyError(f"{spec.path}: config {config} is not a YAML mapping; expected trainer, model and data")
    try:
        horizon = (cfg.get("model") or {}).get("max_steps")
        budget = Budget(
            max_steps=min(int(cfg["trainer"]["max_steps"]), int(horizon or cfg["trainer"]["max_steps"])),
            train_n=[int(n) for n in cfg["data"]["train_configs"]],
            val_n=[int(n) for n in cfg["data"]["val_configs"]],
            test_n=[int(n) for n in cfg["data"]["test_configs"]],
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise StudyError(
            f"{spec.path}: config {config} needs trainer.max_steps and data.train_configs, val_configs, "
            "test_configs (integers)"
        ) from None
    if budget.gate_n not in budget.val_n:
        raise StudyError(
            f"{spec.path}: the gate reads validation at the shortest training N, n{budget.gate_n}, which is not "
            f"among data.val_configs {budget.val_n} of {config}; expected it there"
        )
    stale = [n for n in budget.val_n if n > 2 * STALE_AFTER]
    if not stale:
        raise StudyError(
            f"{spec.path}: data.val_configs {budget.val_n} of {config} has no N above {2 * STALE_AFTER}, where "
            "stale keys exist; expected one (the selection score needs ar_expired_stale, e.g. 64)"
        )
    if spec.curve_points is not None and spec.curve_points > budget.max_steps:
        # Refused, not capped: a cap (a validation every step) gave fewer points than the study file
        # asks for without a word. Only a value the file gives is refused; without one, a fit
        # validates DEFAULT_CURVE_POINTS times, or at every step when it has fewer (fit_args).
        raise StudyError(
            f"{spec.path}: curve_points={spec.curve_points} is more than the {budget.max_steps} steps of a fit of "
            f"{config}; expected at most {budget.max_steps} (a fit validates at most once per step)"
        )
    model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
    tbptt, per_chunk = model.get("tbptt_steps", 256), model.get("step_per_chunk", True)
    longest_n = max(budget.train_n)
    if spec.curve_points is not None and per_chunk and isinstance(tbptt, int) and tbptt < shortest_sequence(longest_n):
        # max_steps counts optimizer steps, one per chunk; Lightning's val_check_interval counts batches
        raise StudyError(
            f"{spec.path}: curve_points={spec.curve_points} needs one optimizer step per training batch, but "
            f"model.tbptt_steps={tbptt} of {config} cuts every n{longest_n} training sequence (at least "
            f"{shortest_sequence(longest_n)} tokens) into chunks of one optimizer step each (model.step_per_chunk), "
            "and a fit validates every so many batches; expected model.tbptt_steps above the longest training "
            "sequence, model.step_per_chunk: false, or no curve_points"
        )
    if spec.readout_n not in budget.test_n:
        raise StudyError(
            f"{spec.path}: readout_n={spec.readout_n} is not among data.test_configs {budget.test_n} of {config}; "
            "expected one of them"
        )
    return budget


def shortest_sequence(n: int) -> int:
    """The fewest tokens of a task example of ``n`` writes: ``12 + 3n`` (docs/TASK.md: an example is
    ``12 + 3N + 3 n_queries`` tokens)."""
    return 12 + 3 * n


STALE_AFTER = 16
"""The task's window w (docs/TASK.md, "Answer rule"): a key is stale after 2w idle writes, so
``ar_expired_stale`` is observed only at N above 2w."""


def mechanism_args(m: MechanismSpec) -> list[str]:
    args = ["--config", m.config] if m.config else []
    if m.class_path:
        args.append(f"--model.mechanism.class_path={m.class_path}")
    for key, value in sorted(m.init_args.items()):
        args.append(f"--model.mechanism.init_args.{key}={value}")
    return args


def fit_args(
    spec: StudySpec, budget: Budget, m: MechanismSpec, lr: float, seed: int, retry: bool = False
) -> list[str]:
    name = run_name(m, lr, seed, retry)
    out = Path(spec.out)
    steps = budget.max_steps * (spec.retry_steps_factor if retry else 1)
    args = [
        "fit",
        "--config",
        spec.base_of(m),
        *mechanism_args(m),
        f"--model.lr={lr_text(lr)}",
        f"--seed_everything={seed}",
        f"--data.seed={seed}",
        f"--data.train_index_start={seed * spec.seed_index_stride}",
        f"--trainer.logger.init_args.save_dir={out}",
        f"--trainer.logger.init_args.name={name}",
        f"--checkpoint.dirpath={out / name / 'checkpoints'}",
        f"--trainer.val_check_interval={max(1, steps // (spec.curve_points or min(DEFAULT_CURVE_POINTS, steps)))}",
    ]
    if retry:
        args += [f"--trainer.max_steps={steps}", f"--model.max_steps={steps}"]
        args += retry_callbacks(spec, spec.base_of(m))
    return args


def retry_callbacks(spec: StudySpec, config: str) -> list[str]:
    """The retry's ``--trainer.callbacks``: the budget config's callbacks with every FLOP budget
    (``budget_flops`` of ``FlopBudget``, ``LengthCurriculum``) times ``retry_steps_factor``, so a
    retry of a FLOP-budgeted run trains longer too (more steps alone would stop at the same FLOPs);
    ``[]`` when no callback of ``config`` has a FLOP budget.

    Raises:
        StudyError: a ``budget_flops`` that is not a number (one line naming the config)."""
    import json

    import yaml

    try:
        cfg = yaml.safe_load(Path(config).read_text()) or {}
        callbacks = (cfg.get("trainer") or {}).get("callbacks") or []
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError):
        return []  # read_budget refuses an unreadable config in one line
    callbacks = [callbacks] if isinstance(callbacks, dict) else callbacks
    scaled, found = [], False
    for callback in callbacks if isinstance(callbacks, list) else []:
        init_args = callback.get("init_args") if isinstance(callback, dict) else None
        if isinstance(init_args, dict) and init_args.get("budget_flops") is not None:
            try:
                flops = float(init_args["budget_flops"]) * spec.retry_steps_factor
            except (TypeError, ValueError):
                raise StudyError(
                    f"{spec.path}: config {config}: trainer.callbacks budget_flops={init_args['budget_flops']!r} "
                    "is invalid; expected a number of FLOPs"
                ) from None
            callback, found = {**callback, "init_args": {**init_args, "budget_flops": flops}}, True
        scaled.append(callback)
    return [f"--trainer.callbacks={json.dumps(scaled, sort_keys=True)}"] if found else []


def test_args(
    spec: StudySpec, m: MechanismSpec, lr: float, seed: int, retry: bool = False
) -> list[str]:
    name = run_name(m, lr, seed, retry)
    out = Path(spec.out)
    return [
        "test",
        "--config",
        spec.base_of(m),
        *mechanism_args(m),
        f"--seed_everything={seed}",
        f"--data.seed={seed}",
        f"--data.train_index_start={seed * spec.seed_index_stride}",
        f"--trainer.logger.init_args.save_dir={out}",
        f"--trainer.logger.init_args.name={name}_test",
        f"--checkpoint.dirpath={out / name / 'test_checkpoints'}",
        f"--ckpt_path={out / name / 'checkpoints' / 'last.ckpt'}",
        f"--accuracy.out_dir={out / name / 'test'}",
        f"--calibration.out_dir={out / name / 'test'}",
    ]


def running_marker(out: Path, name: str) -> Path:
    """``<out>/<name>.running``: the host and pid of the process running a fit or test of ``name``."""
    return out / f"{name}.running"


def command_text(args: list[str]) -> str:
    return shlex.join(["swar-bench", *args])


def mechanism_class(m: MechanismSpec) -> tuple[str | None, dict[str, Any]]:
    """``(class path, init args)`` a run of ``m`` builds: its config file's
    ``model.mechanism`` with the study's ``class_path`` and ``init_args`` set on top."""
    import yaml

    class_path, init_args = m.class_path, {}
    if m.config:
        spec = (
            (yaml.safe_load(Path(m.config).read_text()) or {}).get("model", {}).get("mechanism", {})
        )
        class_path = class_path or spec.get("class_path")
        init_args = dict(spec.get("init_args") or {})
    init_args.update(m.init_args)
    return class_path, init_args


def mechanism_facts(m: MechanismSpec) -> dict[str, float]:
    """Parameters, state bytes per sequence (float32) and forward FLOPs per token of the configured
    mechanism (built once, on the CPU)."""
    from swar_bench.mechanisms.registry import resolve_class

    class_path, init_args = mechanism_class(m)
    mech = resolve_class(class_path)(**init_args)
    return {
        "n_params": int(mech.n_params),
        "state_bytes": int(mech.state_bytes(1)),
        "flops_per_token": float(mech.flops_per_token),
    }


_READOUT_STATE: dict[str, tuple[int, int | None]] = {}


def readout_state(m: MechanismSpec, n_writes: int, recorded: int) -> tuple[int, int | None]:
    """State bytes of one sequence (float32) at the read-out, and the tokens T they are taken at
    (None for a fixed-size state): ``recorded`` (the fit record's ``state_bytes(1)``) for a
    fixed-size mechanism; for one whose state grows with the tokens seen (``fixed_size_state =
    False``: LogLinearAttention, CausalAttention), ``state_bytes(1, seq_len=T)`` after the mean
    length T of a passkey_swar example at ``n_writes`` (``12 + 3.75 N`` tokens, docs/TASK.md),
    where the record's empty-state number would place it below every fixed-size state."""
    import json

    from swar_bench.mechanisms.registry import resolve_class

    class_path, init_args = mechanism_class(m)
    cls = resolve_class(class_path)
    if getattr(cls, "fixed_size_state", True):
        return recorded, None
    tokens = round(12 + 3.75 * n_writes)  # as callbacks.length_curriculum.expected_tokens_per_example
    key = json.dumps([class_path, init_args, tokens], sort_keys=True, default=str)
    if key not in _READOUT_STATE:
        _READOUT_STATE[key] = (int(cls(**init_args).state_bytes(1, seq_len=tokens)), tokens)
    return _READOUT_STATE[key]


def grown_state_lines(rows: list[tuple[MechanismSpec, int]], n_writes: int) -> list[str]:
    """The report's note under a table of ``(mechanism, recorded state bytes)`` rows when one of
    them grows with the tokens seen (:func:`readout_state`), followed by a blank line; else []."""
    if all(readout_state(m, n_writes, recorded)[1] is None for m, recorded in rows):
        return []
    return [(f"State bytes: one sequence's float32 state; a state that grows with the tokens seen is taken "
             f"after the T tokens of a mean n{n_writes} example."), ""]


def state_text(state: tuple[int, int | None]) -> str:
    """``20,992``, or ``168,464 at T=972 (grows)`` for a state that grows with the tokens seen."""
    n_bytes, tokens = state
    return f"{n_bytes:,}" if tokens is None else f"{n_bytes:,} at T={tokens:,} (grows)"
