"""A required option left out is named as the user types it, with the config file that would set
it (fault: `swar-bench fit` with no --config said "the following arguments are required:
fit.model.mechanism", jsonargparse's internal key under its subcommand)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.config_errors import SUBCOMMANDS, missing_options_line

FIT_LINE = (
    "missing required option --model.mechanism; expected a --config FILE that sets it (e.g. configs/quickstart.yaml) "
    "or the option itself; --model.mechanism is a name of the zoo (e.g. GatedDeltaNet, docs/MECHANISMS.md) or a class path"
)


@pytest.mark.parametrize("command", ["fit", "test"])
def test_the_reported_fit_without_a_config(tmp_path, capsys, monkeypatch, command):
    from swar_bench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main([command, "--trainer.max_steps=3"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"swar-bench: error: {FIT_LINE}\n"
    assert list(tmp_path.iterdir()) == []


def test_the_referee_without_a_config(capsys):
    from swar_bench.referee.cli import main

    assert main([]) == 2
    assert capsys.readouterr().err == (
        "swar-bench referee: error: missing required options --mechanism, --state_budget_bytes, --seed; expected a "
        "--config FILE that sets them (e.g. configs/referee/quick.yaml) or the options themselves; --mechanism is a "
        "name of the zoo (e.g. GatedDeltaNet, docs/MECHANISMS.md) or a class path\n"
    )


KEYS = st.lists(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8), min_size=1, max_size=3).map(".".join)


@settings(max_examples=80, deadline=None)
@given(keys=st.lists(st.one_of(KEYS, st.sampled_from(["model.mechanism"])), min_size=1, max_size=4, unique=True),
       command=st.sampled_from([None, *SUBCOMMANDS]))
def test_every_missing_option_is_named_as_typed(keys, command):
    """The kind: any list of missing dotted keys, with or without a subcommand before each: one line
    naming each as ``--key`` (never ``fit.key``), in order, and how to give the mechanism iff it is
    among them."""
    if any(k.split(".")[0] in SUBCOMMANDS for k in keys):
        return  # a key whose first part is a subcommand's name reads as that subcommand's
    given = ", ".join(f"{command}.{k}" if command else k for k in keys)
    line = missing_options_line(given)
    assert "\n" not in line
    named = line.split(";")[0].split(" ", 3)[3]
    assert named == ", ".join(f"--{k}" for k in keys)
    assert ("is a name of the zoo" in line) == any(k in ("model.mechanism", "mechanism") for k in keys)
