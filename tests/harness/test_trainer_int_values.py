"""Integer ``--trainer.*`` options out of Lightning's range are refused before anything is built, in
our one line naming the option and what was expected (fault: `fit --trainer.max_steps=-5` showed
Lightning's "`max_steps` must be a non-negative integer or -1 (infinite steps). You passed in -5.",
naming no option)."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.harness.values import CHECKS, TRAINER_INTEGERS
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line

LIMITS = ("limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches", "overfit_batches")


def test_the_reported_negative_max_steps_names_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert swar_main(["fit", "--config", QUICKSTART, "--trainer.max_steps=-5"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        "swar-bench: error: --trainer.max_steps=-5: expected -1 (no limit) or an integer >= 1"
    )
    assert os.listdir(tmp_path) == []  # nothing written


def test_a_value_from_a_config_file_names_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = tmp_path / "steps.yaml"
    extra.write_text("trainer:\n  accumulate_grad_batches: 0\n")
    assert main(["fit", "--config", QUICKSTART, "--config", str(extra)]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --config={extra}: trainer.accumulate_grad_batches=0: expected an integer >= 1"
    )


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("devices", "0", "auto, -1 (every device), a number of devices >= 1 or a list of device indices (e.g. [0, 1])"),
    ("limit_train_batches", "-1", "null, a number of batches >= 1 or a fraction in (0.0, 1.0]"),
    ("val_check_interval", "2.5", "training batches between validations (an integer >= 1) or a fraction of an epoch in (0, 1]"),
    ("num_sanity_val_steps", "-2", "null, -1 (every validation batch) or an integer >= 0"),
])
def test_other_trainer_ranges_are_named(tmp_path, capsys, monkeypatch, option, value, expected):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, f"--trainer.{option}={value}"]) == 2
    assert one_error_line(capsys, "swar-bench") == f"swar-bench: error: --trainer.{option}={value}: expected {expected}"


def _below(option: str) -> st.SearchStrategy[int]:
    """Integers below the least value ``option`` takes (its check's first refusal)."""
    check = CHECKS[f"trainer.{option}"]
    low = next(v for v in range(-3, 3) if check(v) is None)
    return st.integers(-(2**31), low - 1)


OUT_OF_RANGE = st.one_of(
    st.sampled_from(sorted(TRAINER_INTEGERS)).flatmap(lambda o: st.tuples(st.just(o), _below(o).map(str))),
    st.tuples(st.sampled_from(LIMITS), st.one_of(st.integers(-(2**31), -1).map(str),
                                                 st.floats(1.01, 1e5).map(lambda f: round(f, 2)).filter(lambda f: f % 1).map(repr))),
    st.tuples(st.just("devices"), st.one_of(st.integers(-(2**31), -2), st.just(0)).map(str)),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=OUT_OF_RANGE, from_file=st.booleans(), command=st.sampled_from(["fit", "validate", "test"]))
def test_any_out_of_range_trainer_value_is_one_line_naming_it(tmp_path_factory, capsys, monkeypatch, case, from_file, command):
    option, value = case
    work = tmp_path_factory.mktemp("w")
    monkeypatch.chdir(work)
    if from_file:
        extra = work / "extra.yaml"
        extra.write_text(f"trainer:\n  {option}: {value}\n")
        argv, lead = [command, "--config", QUICKSTART, "--config", str(extra)], f"--config={extra}: trainer.{option}="
    else:
        argv, lead = [command, "--config", QUICKSTART, f"--trainer.{option}={value}"], f"--trainer.{option}="
    before = sorted(os.listdir(work))
    assert main(argv) == 2
    line = one_error_line(capsys, "swar-bench")
    assert line.startswith(f"swar-bench: error: {lead}"), line
    shown, _, rest = line[len(f"swar-bench: error: {lead}"):].partition(": ")
    assert float(shown) == float(value) and rest.startswith("expected "), line  # a YAML -1 is parsed -1.0
    assert sorted(os.listdir(work)) == before


LIGHTNING_CHECKED = ("max_steps", "max_epochs", "num_nodes", "reload_dataloaders_every_n_epochs", *LIMITS)


@settings(max_examples=40, deadline=None)
@given(option=st.sampled_from(LIGHTNING_CHECKED), value=st.one_of(st.integers(-4, 4), st.floats(-1.5, 3.0).map(lambda f: round(f, 2))))
def test_the_checks_agree_with_lightnings_own(option, value):
    """A value the check takes, Lightning's Trainer takes; one Lightning's Trainer refuses, the
    check refuses first (the options Lightning checks when the Trainer is built)."""
    from lightning.pytorch import Trainer

    if option in TRAINER_INTEGERS and isinstance(value, float):
        return  # the parser refuses a float for an int option
    refused = CHECKS[f"trainer.{option}"](value) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Trainer(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False, **{option: value})
        except Exception:  # noqa: BLE001 - any refusal of Lightning's
            assert refused, (option, value)
            return
    assert not refused, (option, value)


FIT_RANGES = {"max_steps": (-1, "-1 (no limit) or an integer >= 1"),
              "max_epochs": (-1, "null, -1 (no limit) or an integer >= 1"),
              "limit_train_batches": (None, "null, a number of batches >= 1 or a fraction in (0.0, 1.0]")}


@settings(max_examples=60, deadline=None)
@given(option=st.sampled_from(sorted(FIT_RANGES)), value=st.integers(-(2**20), 2**20),
       command=st.sampled_from(["fit", "validate", "test"]))
def test_the_range_a_refusal_states_is_the_range_the_command_takes(option, value, command):
    """fault: `fit --trainer.max_steps=-5` said "expected -1 (no limit) or an integer >= 0" though a
    fit refuses 0. A fit takes exactly what its line states (-1 and >= 1; no limit of batches below
    1), the other commands 0 as well."""
    from swar_bench.harness.values import check_trains, check_values

    cfg = {"trainer": {option: value}}
    special, stated = FIT_RANGES[option]
    try:
        check_values(cfg, [], command)
        if command == "fit":
            check_trains(cfg, [])
        refusal = None
    except ValueError as err:
        refusal = str(err)
    fit_takes = value >= 1 or value == special
    takes = fit_takes if command == "fit" else value >= 0 or value == special
    assert (refusal is None) == takes, refusal
    if refusal is not None and command == "fit":
        assert refusal.endswith(f"expected {stated}"), refusal
    if refusal is not None and command != "fit":
        assert ">= 0" in refusal, refusal
