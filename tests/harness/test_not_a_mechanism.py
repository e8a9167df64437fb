"""A class that is no ContextMechanism given as the mechanism is named as such before it is built
(faults: `--model.mechanism=torch.nn.GRU` said `GRU needs --model.mechanism.input_size and
--model.mechanism.hidden_size`, though no arguments would make it one; `torch.nn.Identity` was
built and then named as `--model.mechanism=Namespace(class_path='torch.nn.Identity')`)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from swar_bench.mechanisms.protocol import PROTOCOL_EXPECTED, class_not_a_mechanism
from tests.harness.cli_lines import QUICKSTART, one_error_line


@pytest.mark.parametrize("in_file", [False, True], ids=["command line", "config file"])
@pytest.mark.parametrize("class_path", ["torch.nn.GRU", "torch.nn.Identity"])
def test_the_reported_classes_are_named_as_no_mechanism(tmp_path, capsys, monkeypatch, class_path, in_file):
    monkeypatch.chdir(tmp_path)
    short = class_path.rsplit(".", 1)[-1]
    if in_file:
        (tmp_path / "m.yaml").write_text(f"model:\n  mechanism:\n    class_path: {class_path}\n")
        given, lead = ["--config", "m.yaml"], f"--config={tmp_path / 'm.yaml'}: model.mechanism={class_path}"
    else:
        given, lead = [f"--model.mechanism={class_path}"], f"--model.mechanism={class_path}"
    assert main(["fit", "--config", QUICKSTART, *given]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: {lead}: {short} is not a ContextMechanism (missing init_state, detach_state); "
        f"{PROTOCOL_EXPECTED}")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["m.yaml"] if in_file else [])


MODULES = ["Linear", "GRU", "LSTM", "RNN", "Identity", "Conv1d", "ReLU", "Embedding", "LayerNorm", "Dropout",
           "MultiheadAttention", "TransformerEncoderLayer"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(MODULES), subcommand=st.sampled_from(["fit", "validate", "test"]))
def test_any_torch_module_that_is_no_mechanism_is_one_line_before_it_is_built(tmp_path_factory, capsys, monkeypatch,
                                                                              name, subcommand):
    """The kind: any torch.nn module class (with or without required arguments) in any subcommand:
    one line naming it and what it lacks, exit 2, nothing written."""
    folder = tmp_path_factory.mktemp("m")
    monkeypatch.chdir(folder)
    assert class_not_a_mechanism(getattr(torch.nn, name)) is not None
    assert main([subcommand, "--config", QUICKSTART, f"--model.mechanism=torch.nn.{name}"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --model.mechanism=torch.nn.{name}: {name} is not a ContextMechanism (missing "
        f"init_state, detach_state); {PROTOCOL_EXPECTED}")
    assert list(folder.iterdir()) == []


def test_every_mechanism_of_the_zoo_passes_the_class_check():
    import swar_bench.mechanisms as zoo
    from swar_bench.mechanisms.registry import zoo_names

    for name in zoo_names():
        assert class_not_a_mechanism(getattr(zoo, name)) is None, name
