"""What Lightning cannot build with the chosen accelerator, refused in one line before anything is
built: a ``--trainer.strategy`` that needs CUDA (``fsdp``: Lightning's "The strategy `fsdp`
requires a GPU accelerator, but received ..." in several sentences) and a ``--trainer.precision``
this machine cannot run (``16-mixed`` on CPU, which Lightning swaps for ``bf16-mixed``;
``transformer-engine`` without its package or CUDA, a traceback; one ModelParallelStrategy
refuses). ``check_accelerator`` / ``check_strategy`` (``swar_bench.harness.checks``) have
refused unknown names and missing devices before these run."""

from __future__ import annotations

import importlib.util
from typing import Any

from swar_bench.config_errors import option_source

CPU_STRATEGIES = "ddp, ddp_spawn or FSDP2 (--config configs/fsdp.yaml: ModelParallelStrategy)"
"""What runs on CPU instead of a strategy that needs CUDA (docs/TRAINING.md)."""

OLDER_PRECISIONS = {"16": "16-mixed", "32": "32-true", "64": "64-true", "bf16": "bf16-mixed"}
"""Lightning's older precision spellings and the names they stand for."""

MODEL_PARALLEL_PRECISIONS = ("32-true", "bf16-mixed", "bf16-true", "16-true")
"""The precisions Lightning's ModelParallelStrategy takes."""


def _where(argv: list[str], option: str, value: Any) -> str:
    source = option_source(argv, option, str(value))
    return f"{source}: {option}={value}" if source else f"--{option}={value}"


def runs_on_cuda(accelerator: Any) -> bool:
    """Whether the Trainer of ``accelerator`` (a name) runs on a CUDA device here."""
    import torch

    return accelerator in ("cuda", "gpu", "auto") and torch.cuda.is_available()


def check_strategy_device(strategy: Any, accelerator: Any, argv: list[str]) -> None:
    """Raise ValueError (one line naming the option, its value, the accelerator and what runs on
    CPU) when the strategy name ``strategy`` is one of Lightning's FSDPStrategy (``fsdp``,
    ``fsdp_cpu_offload``), which needs CUDA, and ``accelerator`` runs on none. A Strategy class
    path and an Accelerator instance are not checked."""
    if not isinstance(strategy, str) or not isinstance(accelerator, str):
        return
    from lightning.pytorch.strategies import FSDPStrategy, StrategyRegistry

    if strategy not in StrategyRegistry or not issubclass(StrategyRegistry[strategy]["strategy"], FSDPStrategy):
        return
    if not runs_on_cuda(accelerator):
        raise ValueError(f"{_where(argv, 'trainer.strategy', strategy)}: Lightning's FSDP needs a CUDA device, and "
                         f"--trainer.accelerator={accelerator} has none here; expected on CPU {CPU_STRATEGIES}")


def check_precision_device(precision: Any, accelerator: Any, strategy: Any, argv: list[str]) -> None:
    """Raise ValueError (one line naming the option, its value and what this machine runs) when
    ``precision`` cannot run as asked: ``16-mixed`` (``16``) without CUDA, ``transformer-engine*``
    without the package transformer_engine or without CUDA, or a precision ModelParallelStrategy
    (``strategy``'s class path) does not take. An Accelerator instance is not checked."""
    if precision is None or not isinstance(accelerator, str):
        return
    name = OLDER_PRECISIONS.get(str(precision), str(precision))
    where = _where(argv, "trainer.precision", precision)
    cuda = runs_on_cuda(accelerator)
    # what a fit runs here (the true precisions too: tests/harness/test_precision_fits.py)
    here = ("32-true, 16-mixed, bf16-mixed, 16-true, bf16-true or 64-true" if cuda
            else "32-true, bf16-mixed, 16-true, bf16-true or 64-true on CPU")
    if name == "16-mixed" and not cuda:
        raise ValueError(f"{where}: float16 mixed precision needs a CUDA device, and --trainer.accelerator={accelerator} "
                         f"has none here (Lightning would run bf16-mixed instead); expected {here}")
    if name.startswith("transformer-engine"):
        missing = [what for what, absent in (("the package transformer_engine", importlib.util.find_spec(
            "transformer_engine") is None), ("a CUDA device", not cuda)) if absent]
        if missing:
            raise ValueError(f"{where}: needs NVIDIA's Transformer Engine on CUDA, and this machine lacks "
                             f"{' and '.join(missing)}; expected {here}")
    class_path = str(getattr(strategy, "class_path", None) or (strategy.get("class_path") if isinstance(strategy, dict) else ""))
    if class_path.endswith("ModelParallelStrategy") and name not in MODEL_PARALLEL_PRECISIONS:
        raise ValueError(f"{where}: ModelParallelStrategy (FSDP2) does not take it; expected one of "
                         f"{', '.join(MODEL_PARALLEL_PRECISIONS)}")


def check_devices(cfg: Any, argv: list[str]) -> None:
    """:func:`check_strategy_device` and :func:`check_precision_device` of the parsed config ``cfg``."""
    accelerator, strategy = cfg.get("trainer.accelerator"), cfg.get("trainer.strategy")
    check_strategy_device(strategy, accelerator, argv)
    check_precision_device(cfg.get("trainer.precision"), accelerator, strategy, argv)
