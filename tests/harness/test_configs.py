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
