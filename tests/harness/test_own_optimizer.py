"""LightningCLI's --optimizer and --lr_scheduler are no options of swar-bench (fault: `fit --config
configs/quickstart.yaml --optimizer=SGD --trainer.max_steps=2` ended in a traceback,
`AttributeError: 'NoneType' object has no attribute 'step'`: TBPTTModule builds and steps its own
AdamW and schedule, and LightningCLI's replaced its configure_optimizers). Now they are refused in
one line, as any unknown option, naming the model's own optimizer options."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line

NOTE = ("(the model builds its own AdamW and warmup-cosine schedule: --model.lr, --model.weight_decay, "
        "--model.betas, --model.warmup_steps, --model.min_lr_ratio)")


def test_the_reported_optimizer_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", QUICKSTART, "--optimizer=SGD", "--trainer.max_steps=2"]) == 2
    assert one_error_line(capsys) == f"swar-bench: error: unknown option --optimizer; expected options of swar-bench fit {NOTE} (swar-bench fit --help)"
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subcommand=st.sampled_from(["fit", "validate", "test", "predict"]), option=st.sampled_from(["optimizer", "lr_scheduler"]),
       form=st.sampled_from(["=", " ", ".init_args", "config"]), value=st.sampled_from(["SGD", "Adam", "StepLR", "torch.optim.AdamW"]))
def test_any_optimizer_or_scheduler_option_is_refused_naming_the_models_own(tmp_path_factory, capsys, monkeypatch,
                                                                           subcommand, option, form, value):
    """The kind: either option, in every subcommand, typed as --opt=V, --opt V, a nested init arg,
    or a key of a --config file: one line naming it and the model's optimizer options, exit 2."""
    folder = tmp_path_factory.mktemp("o")
    monkeypatch.chdir(folder)
    if form == "config":
        config = folder / "opt.yaml"
        config.write_text(f"{option}:\n  class_path: {value}\n")
        given, said = ["--config", str(config)], f"--config={config}: unknown key {option}"
    elif form == ".init_args":
        given, said = [f"--{option}.init_args.lr=0.1"], f"unknown option --{option}.init_args.lr"
    else:
        given = [f"--{option}={value}"] if form == "=" else [f"--{option}", value]
        said = f"unknown option --{option}"
    assert main([subcommand, "--config", QUICKSTART, *given]) == 2
    assert one_error_line(capsys) == (f"swar-bench: error: {said}; expected options of swar-bench {subcommand} {NOTE} "
                                      f"(swar-bench {subcommand} --help)")
    assert [p.name for p in folder.iterdir()] == (["opt.yaml"] if form == "config" else [])


@pytest.mark.parametrize("flag", ["--trainer.max_stepz", "--model.lrr"])
def test_other_unknown_options_get_no_optimizer_note(capsys, flag):
    assert main(["fit", "--config", QUICKSTART, f"{flag}=1"]) == 2
    assert "the model builds its own" not in one_error_line(capsys)
