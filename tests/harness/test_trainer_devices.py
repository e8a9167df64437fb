"""``--trainer.accelerator`` and ``--trainer.strategy`` are checked before anything is built, in one
line naming the option, the value, the name meant and what this machine can run (faults:
`--trainer.accelerator=tpuu` gave Lightning's unnamed line; `--trainer.accelerator=tpu`,
`--trainer.strategy=xla` and `--trainer.strategy=single_tpu` ended in a traceback, a missing
torch_xla or a TypeError), and a ``ddp_spawn`` fit runs (fault: its spawned process could not
dump the run's config, "KeyError: 'swar_bench_model_mechanism'")."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness.checks import check_accelerator, check_strategy, strategy_package
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line

ROOT = Path(__file__).resolve().parents[2]


def _no_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize(("option", "line"), [
    ("--trainer.accelerator=tpuu",
     "--trainer.accelerator=tpuu: unknown accelerator (did you mean tpu?); expected one of auto, cpu, cuda, mps, tpu, gpu"),
    ("--trainer.accelerator=tpu",
     "--trainer.accelerator=tpu: no TPU (torch_xla) device is available on this machine; expected cpu or auto"),
    ("--trainer.accelerator=mps", "--trainer.accelerator=mps: no MPS device is available on this machine; expected cpu or auto"),
    ("--trainer.strategy=xla", ("--trainer.strategy=xla: needs the package torch_xla, which is not installed here; "
                                "expected a strategy this machine can run (e.g. auto, ddp)")),
    ("--trainer.strategy=single_tpu", ("--trainer.strategy=single_tpu: needs the package torch_xla, which is not "
                                       "installed here; expected a strategy this machine can run (e.g. auto, ddp)")),
])
def test_the_reported_names_are_one_line(tmp_path, capsys, monkeypatch, option, line):
    pytest.importorskip("lightning")
    if option.endswith(("tpu", "xla")) and __import__("importlib").util.find_spec("torch_xla") is not None:
        pytest.skip("torch_xla is installed here")
    _no_gpu(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, "--trainer.max_steps=1", option]) == 2
    assert one_error_line(capsys, "swar-bench") == f"swar-bench: error: {line}"
    assert os.listdir(tmp_path) == []


def test_a_misspelt_strategy_names_the_one_meant(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = tmp_path / "s.yaml"
    extra.write_text("trainer:\n  strategy: dpp\n")
    assert main(["fit", "--config", QUICKSTART, "--config", str(extra)]) == 2
    line = one_error_line(capsys, "swar-bench")
    assert line.startswith(f"swar-bench: error: --config={extra}: trainer.strategy=dpp: unknown strategy (did you mean ddp?); "
                           "expected a Strategy class path or one of auto, ddp, ")


def _lightning_takes(**kwargs) -> bool:
    from lightning.pytorch import Trainer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                    devices=1, **kwargs)
        except Exception:  # noqa: BLE001 - any refusal of Lightning's, tracebacks included
            return False
    return True


def _typo(draw, name: str) -> str:
    i = draw(st.integers(0, max(0, len(name) - 2)))
    return draw(st.sampled_from([name[:i] + name[i + 1:], name[:i] + name[i] + name[i:], name + "x"]))


def _accelerators() -> list[str]:
    from lightning.pytorch.accelerators import AcceleratorRegistry

    return ["auto", "gpu", *sorted(AcceleratorRegistry.available_accelerators())]


@settings(max_examples=30, deadline=None)
@given(data=st.data(), typo=st.booleans())
def test_the_accelerator_check_agrees_with_lightning(data, typo):
    """The kind: any accelerator name of Lightning's, or one edit from one: the check refuses it
    (one line, the option first) exactly when Lightning's Trainer cannot be built with it on
    this machine; a name it refuses as unknown gets a known name as its suggestion."""
    names = _accelerators()
    name = data.draw(st.sampled_from(names))
    if typo:
        name = _typo(data.draw, name)
    try:
        check_accelerator(name, [])
        refused = None
    except ValueError as err:
        refused = str(err)
        assert refused.startswith(f"--trainer.accelerator={name}: ") and "\n" not in refused
    assert (refused is None) == _lightning_takes(accelerator=name), (name, refused)
    if refused is not None and "unknown accelerator (did you mean " in refused:
        assert refused.split("(did you mean ")[1].split("?)")[0] in names


@settings(max_examples=30, deadline=None)
@given(data=st.data(), typo=st.booleans())
def test_the_strategy_check_never_refuses_what_lightning_runs(data, typo):
    """The kind: any strategy name of Lightning's registry, or one edit from one: a name the check
    refuses (one line, the option first), Lightning's Trainer refuses too, and one that needs a
    package not installed here is refused; an unknown one gets a known name as its suggestion."""
    import importlib.util

    from lightning.pytorch.strategies import StrategyRegistry

    names = ["auto", *StrategyRegistry.available_strategies()]
    name = data.draw(st.sampled_from(names))
    if typo:
        name = _typo(data.draw, name)
    try:
        check_strategy(name, [])
        refused = None
    except ValueError as err:
        refused = str(err)
        assert refused.startswith(f"--trainer.strategy={name}: ") and "\n" not in refused
    if refused is not None:
        assert not _lightning_takes(accelerator="cpu", strategy=name), name
    package = strategy_package(name) if name in names else None
    if package is not None and importlib.util.find_spec(package) is None:
        assert refused is not None
    if name not in names:
        assert refused is not None and "unknown strategy" in refused
        if "(did you mean " in refused:
            assert refused.split("(did you mean ")[1].split("?)")[0] in names


def test_a_spawned_process_has_the_parser_modes_of_every_command():
    """The kind behind the ddp_spawn fault: a fresh process that imports only the model's module
    (what unpickling the model does) has the parser mode of every command's parser registered."""
    code = (
        "import swar_bench.module\n"
        "from jsonargparse._loaders_dumpers import loaders\n"
        "from swar_bench.mechanisms.registry import CONFIG_MODE_KEYS\n"
        "modes = ['swar_bench_' + '_'.join(k) for k in CONFIG_MODE_KEYS]\n"
        "missing = [m for m in modes if m not in loaders]\n"
        "print('missing', missing)\n"
        "raise SystemExit(1 if missing else 0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    from swar_bench.lightning_cli import SwarBenchCLI
    from swar_bench.mechanisms.registry import CONFIG_MODE_KEYS, config_parser_mode
    from swar_bench.referee.cli import build_parser

    modes = {config_parser_mode(k) for k in CONFIG_MODE_KEYS}
    assert build_parser().parser_mode in modes
    from lightning.pytorch.cli import LightningArgumentParser

    cli = SwarBenchCLI.__new__(SwarBenchCLI)  # only its parser, not a run
    cli.parser_class = LightningArgumentParser
    assert cli.init_parser().parser_mode in modes


def test_a_ddp_spawn_fit_writes_its_config_and_checkpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, "--trainer.max_steps=1", "--trainer.strategy=ddp_spawn",
                 "--trainer.devices=1", "--trainer.enable_progress_bar=false"]) == 0
    run = tmp_path / "runs" / "quickstart" / "GatedDeltaNet" / "version_0"
    assert (run / "config.yaml").is_file() and (run / "checkpoints" / "last.ckpt").is_file()
