"""`swar-bench data` says what an option expects in the number it takes (fault: `data show
--config n33` said "expected some of n32, n64, ...": --config takes one config; "some of" is
for the list options, --configs and --splits)."""

from __future__ import annotations

import datasets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks.cli import main

CARD = "n32, n64, n128, n256, n512, n1024, n2048, n4096, n8192, n16384"
SPLITS = ("train", "validation", "test")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def test_the_reported_config_of_data_show_expects_one_config(capsys):
    assert main(["show", "--config", "n33"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench data show: error: --config: 'n33' is not a passkey_swar config (N in 32..16384, powers of 2; "
        f'docs/TASK.md, "Configs and splits"); expected one of {CARD}\n'
    )


OPTIONS = [  # (command, option, whether it takes one value, the other options it needs)
    ("show", "--config", True, ["--split", "test"]),
    ("show", "--split", True, ["--config", "n32"]),
    ("stats", "--configs", False, ["--splits", "test", "--no-compare"]),
    ("generate", "--configs", False, ["--splits", "test"]),
    ("stats", "--splits", False, ["--configs", "n32", "--no-compare"]),
    ("generate", "--splits", False, ["--configs", "n32"]),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(OPTIONS),
       value=st.text("nN0123456789tesx_", min_size=1, max_size=6).filter(
           lambda v: v not in SPLITS and v not in CARD.split(", ")))
def test_a_value_off_the_list_expects_one_of_it_or_some_of_it_as_the_option_takes(tmp_path_factory, capsys, where,
                                                                                  value):
    """Every option of `data` that names configs or splits, given one that is none: one line
    saying "expected one of" for an option of one value and "expected some of" for a list."""
    command, option, single, others = where
    out = ["--out", str(tmp_path_factory.mktemp("o") / "d")] if command == "generate" else []
    capsys.readouterr()
    try:
        status = main([command, f"{option}={value}", *others, *out])
    except SystemExit as stop:  # argparse's refusal (--split's choices)
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"swar-bench data {command}: error: "), err
    assert ("; expected one of " in err, "expected some of " in err) == (single, not single), err
