"""The shipped configs parse and build the intended Trainer / model / data (no training)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml
from lightning.pytorch.strategies import DDPStrategy, ModelParallelStrategy, SingleDeviceStrategy

from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
from swar_bench.lightning_cli import SwarBenchCLI
from swar_bench.mechanisms import GatedDeltaNet, Oracle
from swar_bench.module import TBPTTModule

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _build(*configs, extra=()):
    args = [a for c in configs for a in ("--config", str(CONFIGS / c))] + ["--trainer.logger=false", *extra]
    return SwarBenchCLI(TBPTTModule, PasskeySwarDataModule, args=args, run=False)


def test_quickstart_builds_a_gated_deltanet():
    cli = _build("quickstart.yaml")
    assert isinstance(cli.model.mechanism, GatedDeltaNet)
    assert isinstance(cli.trainer.strategy, SingleDeviceStrategy)
    assert cli.datamodule.train_configs == (32,)
    assert cli.trainer.checkpoint_callback.save_last is True


def test_oracle_config_has_no_trainable_parameters():
    cli = _build("oracle.yaml")
    assert isinstance(cli.model.mechanism, Oracle) and not cli.model.has_trainable_params


@pytest.mark.parametrize("overlay, strategy", [("ddp.yaml", DDPStrategy), ("fsdp.yaml", ModelParallelStrategy)])
def test_strategy_overlays(overlay, strategy):
    cli = _build("quickstart.yaml", overlay)
    assert type(cli.trainer.strategy) is strategy
    assert cli.trainer.num_devices == 2 and cli.trainer.strategy.root_device.type == "cpu"
    assert isinstance(cli.model.mechanism, GatedDeltaNet)  # the model config is kept


def test_fsdp_cuda_config_matches_fsdp_strategy_signature():
    from lightning.pytorch.strategies import FSDPStrategy

    config = yaml.safe_load((CONFIGS / "fsdp_cuda.yaml").read_text())["trainer"]
    strategy = config["strategy"]
    assert strategy["class_path"] == "lightning.pytorch.strategies.FSDPStrategy"
    inspect.signature(FSDPStrategy).bind(**strategy["init_args"])  # raises on unknown arguments
    assert config["accelerator"] == "gpu"


@pytest.mark.parametrize("variant, stop", [("bandit", "LengthCurriculum"), ("bandit_free", "FlopBudget"),
                                           ("uniform", "FlopBudget"), ("short", "FlopBudget")])
def test_curriculum_comparison_configs_build_their_stop_rule(variant, stop):
    from swar_bench.callbacks import FlopBudget, LengthCurriculum

    cli = _build(f"results_curriculum_{variant}.yaml", "mechanisms/gated_delta_net.yaml")
    assert isinstance(cli.model.mechanism, GatedDeltaNet) and cli.model.tbptt_steps == 1280
    found = {type(c).__name__: c for c in cli.trainer.callbacks if isinstance(c, (FlopBudget, LengthCurriculum))}
    budget = found[stop].ledger.budget_flops if stop == "LengthCurriculum" else found[stop].budget_flops
    assert budget == 4.6e12
    assert ("LengthCurriculum" in found) == variant.startswith("bandit")
    if variant == "bandit_free":
        assert found["LengthCurriculum"].ledger is None
