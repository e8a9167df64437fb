"""A strategy or precision Lightning cannot build with the chosen accelerator, and a precision that
is none of Lightning's, are refused in one line naming the option, the value and what runs here
(faults: `fit --trainer.strategy=fsdp` on CPU printed Lightning's "The strategy `fsdp` requires a
GPU accelerator, but received `accelerator='cpu'`. Please set ..."; `--trainer.precision=bogus`
printed jsonargparse's "Expected one of typing.Literal[64, 32, 16], typing.Literal[...]. Got
value: bogus"; `16-mixed` on CPU ran bf16-mixed instead; `transformer-engine` a traceback)."""

from __future__ import annotations

import os
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line

NO_CUDA = not torch.cuda.is_available()
PRECISION_LIST = ("32-true, 16-mixed, bf16-mixed, 16-true, bf16-true, 64-true, transformer-engine, "
                  "transformer-engine-float16 (or the older 64, 32, 16, bf16), or null")


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
@pytest.mark.parametrize(("option", "line"), [
    ("--trainer.strategy=fsdp", ("--trainer.strategy=fsdp: Lightning's FSDP needs a CUDA device, and "
                                 "--trainer.accelerator=cpu has none here; expected on CPU ddp, ddp_spawn or FSDP2 "
                                 "(--config configs/fsdp.yaml: ModelParallelStrategy)")),
    ("--trainer.precision=bogus", f"--trainer.precision=bogus: unknown precision; expected one of {PRECISION_LIST}"),
    ("--trainer.precision=bf16-mixd", ("--trainer.precision=bf16-mixd: unknown precision (did you mean bf16-mixed?); "
                                       f"expected one of {PRECISION_LIST}")),
    ("--trainer.precision=16-mixed", ("--trainer.precision=16-mixed: float16 mixed precision needs a CUDA device, and "
                                      "--trainer.accelerator=cpu has none here (Lightning would run bf16-mixed "
                                      "instead); expected 32-true, bf16-mixed, 16-true, bf16-true or 64-true on CPU")),
])
def test_the_reported_values_are_one_line(tmp_path, capsys, monkeypatch, option, line):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, "--trainer.fast_dev_run=1", option]) == 2
    assert one_error_line(capsys, "swar-bench") == f"swar-bench: error: {line}"
    assert os.listdir(tmp_path) == []


def test_a_precision_from_a_config_file_names_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = tmp_path / "p.yaml"
    extra.write_text("trainer:\n  precision: 16mixed\n")
    assert main(["fit", "--config", QUICKSTART, "--config", str(extra)]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --config={extra}: trainer.precision=16mixed: unknown precision (did you mean 16-mixed?); "
        f"expected one of {PRECISION_LIST}")


def _trainer(**kwargs):
    """Lightning's Trainer of ``kwargs`` on one device, or None when Lightning refuses to build it."""
    from lightning.pytorch import Trainer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                           enable_model_summary=False, devices=1, **kwargs)
        except Exception:  # noqa: BLE001 - any refusal of Lightning's, tracebacks included
            return None


def _refusal(check, *args) -> str | None:
    try:
        check(*args)
    except ValueError as err:
        return str(err)
    return None


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_strategy_checks_refuse_exactly_what_lightning_cannot_build(data):
    """The kind: any strategy name of Lightning's registry with any accelerator this machine has:
    the checks (name, package, device) refuse it in one line exactly when Lightning's Trainer
    cannot be built with it."""
    from lightning.pytorch.strategies import StrategyRegistry

    from swar_bench.harness.checks import check_strategy, usable_accelerators
    from swar_bench.harness.device_checks import check_strategy_device

    name = data.draw(st.sampled_from(["auto", *StrategyRegistry.available_strategies()]))
    accelerator = data.draw(st.sampled_from(usable_accelerators()))
    refused = _refusal(check_strategy, name, []) or _refusal(check_strategy_device, name, accelerator, [])
    if refused is not None:
        assert refused.startswith(f"--trainer.strategy={name}: ") and "\n" not in refused
    assert (refused is None) == (_trainer(accelerator=accelerator, strategy=name) is not None), (name, accelerator, refused)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_precision_is_refused_exactly_when_lightning_cannot_run_it_as_asked(data):
    """The kind: any precision Lightning's Trainer takes, with any accelerator this machine has: the
    check refuses it (one line) exactly when the Trainer cannot be built with it or runs another
    precision in its place (16-mixed on CPU: bf16-mixed)."""
    from lightning.fabric.connector import _convert_precision_to_unified_args

    from swar_bench.harness.checks import usable_accelerators
    from swar_bench.harness.device_checks import check_precision_device
    from swar_bench.utils.choices import PRECISIONS

    precision = data.draw(st.sampled_from([*PRECISIONS, "16", "32", "64", "bf16", 16, 32, 64]))
    accelerator = data.draw(st.sampled_from(usable_accelerators()))
    refused = _refusal(check_precision_device, precision, accelerator, None, [])
    if refused is not None:
        assert refused.startswith(f"--trainer.precision={precision}: ") and "\n" not in refused
    trainer = _trainer(accelerator=accelerator, precision=precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asked = _convert_precision_to_unified_args(precision)
    as_asked = trainer is not None and trainer.precision == asked
    assert (refused is None) == as_asked, (precision, accelerator, refused)


@settings(max_examples=60, deadline=None)
@given(value=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20), typo=st.booleans(),
       data=st.data())
def test_any_value_outside_a_literal_is_one_line_listing_the_choices(value, typo, data):
    """The kind: any value jsonargparse refuses for a Literal-typed option (its real message for
    --trainer.precision) is one line naming the option and value, listing every choice, and
    suggesting a choice one typo away."""
    from swar_bench.config_errors import parse_error_line
    from swar_bench.utils.choices import PRECISIONS

    if typo:
        name = data.draw(st.sampled_from(PRECISIONS))
        i = data.draw(st.integers(0, len(name) - 2))
        value = name[:i] + name[i + 1:]
    if value in (*PRECISIONS, "16", "32", "64", "bf16"):
        return
    message = (
        'Parser key "trainer.precision":\n  Does not validate against any of the Union subtypes\n  Subtypes: '
        "[typing.Literal[64, 32, 16], typing.Literal['transformer-engine', 'transformer-engine-float16', '16-true', "
        "'16-mixed', 'bf16-true', 'bf16-mixed', '32-true', '64-true'], typing.Literal['64', '32', '16', 'bf16'], "
        "<class 'NoneType'>]\n  Errors:\n    - Expected a <class 'int'>\n  Given value type: <class 'str'>\n"
        f"  Given value: {value}")
    line = parse_error_line(message, ["fit", f"--trainer.precision={value}"])
    assert line.startswith(f"--trainer.precision={value}: unknown precision") and "\n" not in line, line
    assert line.endswith(f"expected one of {PRECISION_LIST}"), line
    assert "typing.Literal" not in line
    if typo:
        assert "(did you mean " in line and line.split("(did you mean ")[1].split("?)")[0] in PRECISIONS, line
