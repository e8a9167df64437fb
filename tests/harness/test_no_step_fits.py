"""A fit that would train no step is refused before anything is written (fault: `fit
--trainer.max_steps=0` exited 0 after Lightning's "`Trainer.fit` stopped: `max_steps=0` reached.",
leaving a run folder with only its config, hparams and an empty event file): ``check_trains``
names the option, where it was set and what a fit expects."""

from __future__ import annotations

import os
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.harness.values import NO_STEP, check_trains
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import QUICKSTART, one_error_line


def test_the_reported_zero_max_steps_is_refused_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert swar_main(["fit", "--config", QUICKSTART, "--trainer.max_steps=0"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        "swar-bench: error: --trainer.max_steps=0: a fit that trains no step; expected -1 (no limit) or an integer >= 1"
    )
    assert os.listdir(tmp_path) == []


ZERO = st.sampled_from(sorted(NO_STEP)).flatmap(
    lambda o: st.tuples(st.just(o), st.sampled_from(["0", "0.0"] if o.endswith("batches") else ["0"])))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=ZERO, from_file=st.booleans())
def test_any_no_step_fit_is_one_line_naming_its_option(tmp_path_factory, capsys, monkeypatch, case, from_file):
    """The kind: every option whose 0 leaves Lightning's fit loop without a step, set on the command
    line or in a --config file: exit 2, one line naming it (or the file), nothing written."""
    option, value = case
    work = tmp_path_factory.mktemp("w")
    monkeypatch.chdir(work)
    group, key = option.split(".")
    if from_file:
        extra = work / "extra.yaml"
        extra.write_text(f"{group}:\n  {key}: {value}\n")
        argv, lead = ["fit", "--config", QUICKSTART, "--config", str(extra)], f"--config={extra}: {option}="
    else:
        argv, lead = ["fit", "--config", QUICKSTART, f"--{option}={value}"], f"--{option}="
    before = sorted(os.listdir(work))
    assert main(argv) == 2
    line = one_error_line(capsys, "swar-bench")
    assert line.startswith(f"swar-bench: error: {lead}"), line
    assert line.endswith(f": a fit that trains no step; expected {NO_STEP[option]}"), line
    assert sorted(os.listdir(work)) == before


VALUES = {
    "trainer.max_steps": [-1, 0, 1, 3],
    "trainer.max_epochs": [None, -1, 0, 1],
    "trainer.limit_train_batches": [None, 0, 0.0, 1, 2, 0.5, 1.0],
}


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from([(o, v) for o, vs in VALUES.items() for v in vs]), fast=st.sampled_from([None, False, 0, 1, True]))
def test_the_check_refuses_exactly_the_fits_lightning_trains_no_step_of(case, fast):
    """Against Lightning's own fit loop on a small model: ``check_trains`` refuses a config iff
    the fit it describes takes no optimizer step (fast_dev_run included, which overrides all)."""
    from jsonargparse import Namespace
    from lightning.pytorch import Trainer
    from lightning.pytorch.demos.boring_classes import BoringModel

    option, value = case
    key = option.split(".")[1]
    cfg = Namespace(trainer=Namespace(**{key: value, "fast_dev_run": fast}))
    try:
        check_trains(cfg, [])
        refused = False
    except ValueError as err:
        refused = True
        assert str(err).startswith(f"--{option}=") and "\n" not in str(err)
    kwargs = {key: value, "fast_dev_run": fast if fast is not None else False}
    if key != "max_steps" and not fast:
        kwargs["max_steps"] = 3  # the other options' limits, not an epoch of the demo model's 64 batches
    if key == "max_steps" and not fast:
        kwargs["max_epochs"] = 1  # max_steps=-1 alone means Lightning's 1000 epochs (64,000 steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = Trainer(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                          enable_model_summary=False, limit_val_batches=0, **kwargs)
        trainer.fit(BoringModel())
    assert refused == (trainer.global_step == 0), (option, value, fast, trainer.global_step)


def test_the_reported_zero_max_time_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert swar_main(["fit", "--config", QUICKSTART, "--trainer.max_time=00:00:00:00"]) == 2
    line = one_error_line(capsys, "swar-bench")
    assert line.startswith("swar-bench: error: --trainer.max_time=00:00:00:00: a fit that trains no step (Lightning's "
                           "Timer stops it before the first batch); expected null or a time above zero, DD:HH:MM:SS")
    assert os.listdir(tmp_path) == []


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.integers(0, 3), min_size=4, max_size=4), mapping=st.booleans(),
       keys=st.lists(st.sampled_from(["days", "hours", "minutes", "seconds"]), min_size=1, max_size=4, unique=True))
def test_a_max_time_of_zero_in_any_spelling_is_refused_for_a_fit(parts, mapping, keys):
    """The kind: ``--trainer.max_time`` as ``DD:HH:MM:SS`` or a mapping of timedelta arguments:
    refused (one line) exactly when it adds up to zero."""
    from jsonargparse import Namespace

    if mapping:
        value = {k: parts[i] for i, k in enumerate(keys)}
        total = sum(parts[i] for i in range(len(keys)))
    else:
        value = ":".join(f"{p:02d}" for p in parts)
        total = sum(parts)
    try:
        check_trains(Namespace(trainer=Namespace(max_time=value)), [])
        refused = False
    except ValueError as err:
        refused = True
        assert str(err).startswith("--trainer.max_time=") and "a fit that trains no step" in str(err)
    assert refused == (total == 0)
