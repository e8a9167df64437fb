"""A misspelt key inside a nested group on the command line (issue "faults by whole kind", item 1):
``--data.mqar.num_kv_pair=8`` was blamed on the ``--config`` file that set ``data.mqar`` and had
no suggestion; a misspelt ``--model.mechanism.init_args.*`` had no suggestion. Now one line names
the command-line option and the nearest valid key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench import cli
from swar_bench.datamodules.mqar import MQARData
from swar_bench.harness.fast_options import nested_fields, unknown_options, unknown_options_line
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import one_error_line

ROOT = Path(__file__).resolve().parents[2]
MQAR = str(ROOT / "configs" / "mqar" / "figure2_t64.yaml")
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
FIELDS = sorted(f.name for f in dataclasses.fields(MQARData))
EXPECTED_KEYS = f"expected a key of --data.mqar: {', '.join(FIELDS)}"




def test_a_misspelt_mqar_key_names_the_command_line_option_and_the_key_meant(capsys):
    # the reported input, through the entry point and through the Lightning command alone
    line = ("swar-bench: error: unknown option --data.mqar.num_kv_pair (did you mean --data.mqar.num_kv_pairs?); "
            + EXPECTED_KEYS)
    argv = ["fit", "--config", MQAR, "--trainer.fast_dev_run=true", "--data.mqar.num_kv_pair=8"]
    assert cli.main(argv) == 2
    assert one_error_line(capsys) == line
    assert main(argv) == 2
    assert one_error_line(capsys) == line


def test_a_misspelt_key_of_an_inline_mqar_mapping_is_named_too(capsys):
    assert main(["fit", "--config", MQAR, "--data.mqar={num_kv_pairs: 8, powr_a: 0.1}"]) == 2
    assert one_error_line(capsys) == ("swar-bench: error: unknown option --data.mqar.powr_a (did you mean --data.mqar.power_a?); "
                              + EXPECTED_KEYS)


def test_the_fields_read_without_importing_are_the_dataclass_fields():
    assert sorted(nested_fields("data.mqar")) == FIELDS


def test_a_misspelt_mechanism_init_arg_on_the_command_line_has_a_suggestion(capsys):
    assert main(["fit", "--config", QUICKSTART, "--model.mechanism=GRU", "--model.mechanism.init_args.d_modle=64"]) == 2
    assert one_error_line(capsys) == (
        "swar-bench: error: --model.mechanism.init_args.d_modle: not an argument of swar_bench.mechanisms.GRU "
        "(did you mean d_model?); expected one of vocab_size, d_model, n_layers, mlp_ratio")


def _typo(name: str, i: int, kind: int) -> str:
    i %= len(name)
    return [name[:i] + name[i + 1:], name[:i] + "q" + name[i:], name[:i] + name[i] * 2 + name[i + 1:], name[:i] + "_"][kind]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_misspelt_nested_key_is_named_with_the_closest_one(data):
    """The kind: any set of one-character typos of MQAR fields, dotted (``--data.mqar.KEY=V``) or
    inline (``--data.mqar={KEY: V}``), among valid options, is refused in one line naming every
    typo as the command-line option, each with a valid key it suggests; valid keys pass."""
    chosen = data.draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True))
    typos = [_typo(f, data.draw(st.integers(0, 40)), data.draw(st.integers(0, 3))) for f in chosen]
    typos = [t for t in dict.fromkeys(typos) if t and t not in FIELDS and "." not in t]
    inline = data.draw(st.booleans())
    valid = [f"--data.mqar.{f}=1" for f in data.draw(st.lists(st.sampled_from(FIELDS), max_size=2))]
    given_ = (["--data.mqar={" + ", ".join(f"{t}: 1" for t in typos) + "}"] if inline and typos
              else [f"--data.mqar.{t}=1" for t in typos])
    argv = ["fit", "--config", MQAR, *valid, *given_, "--trainer.max_steps=1"]
    found = unknown_options(argv)
    assert [flag for flag, _ in found] == [f"--data.mqar.{t}" for t in typos]
    for flag, close in found:
        assert close is None or close.removeprefix("--data.mqar.") in FIELDS
    line = unknown_options_line(argv, nested_only=True)
    if not typos:
        assert line is None
        return
    assert "\n" not in line
    assert line.endswith(EXPECTED_KEYS)
    for t in typos:
        assert f"--data.mqar.{t}" in line
