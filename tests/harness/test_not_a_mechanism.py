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
           "MultiheadAttention", "TransformerEncoderLayer", "Bilinear", "EmbeddingBag", "Transformer"]


@pytest.mark.parametrize("name", MODULES)
def test_any_torch_module_that_is_no_mechanism_is_one_line_before_it_is_built(tmp_path, capsys, monkeypatch, name):
    """The kind: any torch.nn module class, whatever arguments it requires or has (Embedding's
    `_weight` once led the parser to name that argument instead), in fit, validate or test: one
    line naming it and what it lacks, exit 2, nothing written. (A full-suite run found Embedding
    where the first form of this test sampled 8 of 36 cases.)"""
    subcommand = ["fit", "validate", "test"][MODULES.index(name) % 3]
    monkeypatch.chdir(tmp_path)
    assert class_not_a_mechanism(getattr(torch.nn, name)) is not None
    assert main([subcommand, "--config", QUICKSTART, f"--model.mechanism=torch.nn.{name}"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: --model.mechanism=torch.nn.{name}: {name} is not a ContextMechanism (missing "
        f"init_state, detach_state); {PROTOCOL_EXPECTED}")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(settings_=st.lists(st.tuples(st.sampled_from(["flag", "file"]), st.sampled_from(["GRU", "torch.nn.GRU",
                                                                                           "torch.nn.Embedding",
                                                                                           "DeltaNet"])),
                          min_size=1, max_size=3))
def test_the_last_mechanism_setting_decides(tmp_path_factory, capsys, monkeypatch, settings_):
    """The mechanism set last, by a flag or a --config file, in any order, is the one checked: a
    zoo mechanism last runs (here: --print_config, exit 0), a torch.nn class last is refused
    naming where it was set."""
    folder = tmp_path_factory.mktemp("s")
    monkeypatch.chdir(folder)
    argv = ["fit", "--config", QUICKSTART]
    for i, (how, path) in enumerate(settings_):
        if how == "flag":
            argv.append(f"--model.mechanism={path}")
        else:
            (folder / f"m{i}.yaml").write_text(f"model:\n  mechanism:\n    class_path: {path}\n")
            argv += ["--config", f"m{i}.yaml"]
    how, path = settings_[-1]
    code = _run(argv + ["--print_config"])
    out = capsys.readouterr()
    if path.startswith("torch.nn."):
        lead = f"--model.mechanism={path}" if how == "flag" else f"--config={folder / f'm{len(settings_) - 1}.yaml'}: model.mechanism={path}"
        short = path.rsplit(".", 1)[-1]
        assert code == 2 and out.err.strip().splitlines()[-1] == (
            f"swar-bench: error: {lead}: {short} is not a ContextMechanism (missing init_state, detach_state); "
            f"{PROTOCOL_EXPECTED}"), out.err
    else:
        assert code == 0 and "not a ContextMechanism" not in out.err, out.err


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # --print_config ends as jsonargparse ends
        return int(stop.code or 0)


def test_every_mechanism_of_the_zoo_passes_the_class_check():
    import swar_bench.mechanisms as zoo
    from swar_bench.mechanisms.registry import zoo_names

    for name in zoo_names():
        assert class_not_a_mechanism(getattr(zoo, name)) is None, name


def test_the_reported_switch_from_a_class_with_private_arguments_runs(tmp_path, capsys, monkeypatch):
    """Fault found by the property above: `--model.mechanism=torch.nn.Embedding --model.mechanism=GRU`
    said `--model.mechanism.init_args._weight: not an argument of torch.nn.Embedding (did you mean
    _weight?)`: Embedding's private `_weight` default was carried as an option jsonargparse has not."""
    monkeypatch.chdir(tmp_path)
    code = _run(["fit", "--config", QUICKSTART, "--model.mechanism=torch.nn.Embedding", "--model.mechanism=GRU",
                 "--print_config"])
    out = capsys.readouterr()
    assert code == 0 and "class_path: swar_bench.mechanisms.GRU" in out.out, out.err
    from swar_bench.mechanisms.registry import accepted_args, class_defaults

    assert "_weight" not in accepted_args("torch.nn.Embedding") and "_weight" not in class_defaults(torch.nn.Embedding)


NOT_A_MECHANISM = st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                            st.lists(st.sampled_from(["GRU", 1]), min_size=1, max_size=2))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_A_MECHANISM, where=st.sampled_from(["mechanism", "init_args"]))
def test_a_mechanism_or_init_args_of_another_type_in_a_config_file_is_named(tmp_path_factory, capsys, monkeypatch,
                                                                            value, where):
    """Fault: `mechanism: 5` in a config file said jsonargparse's `Not a valid subclass of Module. Got
    value: 5 Subclass types expect one of: ...`; `init_args: [1]` was named
    `model.mechanism.class_path.init_args`. The kind: any value of another type given either."""
    import yaml

    folder = tmp_path_factory.mktemp("t")
    monkeypatch.chdir(folder)
    node = value if where == "mechanism" else {"class_path": "GRU", "init_args": value}
    (folder / "m.yaml").write_text(yaml.safe_dump({"model": {"mechanism": node}}))
    assert main(["fit", "--config", QUICKSTART, "--config", "m.yaml"]) == 2
    line = one_error_line(capsys, "swar-bench")
    shown = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
    if where == "mechanism":
        assert line == (f"swar-bench: error: --config={folder / 'm.yaml'}: model.mechanism={shown}: expected a zoo "
                        "name (e.g. GRU), a class path module.Class, or class_path: and init_args: under it"), line
    else:
        assert line == (f"swar-bench: error: --config={folder / 'm.yaml'}: model.mechanism.init_args={shown}: "
                        "expected a mapping of GRU's arguments"), line


REFEREE_BASE = ["--state_budget_bytes", "100", "--seed", "0"]


@pytest.mark.parametrize("in_file", [False, True], ids=["command line", "config file"])
@pytest.mark.parametrize("init_args", [{}, {"input_size": 4, "hidden_size": 4}], ids=["bare", "with its arguments"])
def test_the_referee_names_a_torch_gru_as_no_mechanism(tmp_path, capsys, monkeypatch, in_file, init_args):
    """Fault: `swar-bench referee --mechanism torch.nn.GRU` asked for `--mechanism.input_size and
    --mechanism.hidden_size`; given them, it failed on a default it filled in (`proj_size`), and
    `torch.nn.Identity` ended in an AttributeError traceback. Now the line fit says."""
    import yaml

    from swar_bench.referee.cli import main as referee_main

    monkeypatch.chdir(tmp_path)
    if in_file:
        node = {"class_path": "torch.nn.GRU", **({"init_args": init_args} if init_args else {})}
        (tmp_path / "r.yaml").write_text(yaml.safe_dump({"mechanism": node}))
        given, lead = ["--config", "r.yaml"], f"--config={tmp_path / 'r.yaml'}: mechanism=torch.nn.GRU"
    else:
        given = ["--mechanism", "torch.nn.GRU", *(f"--mechanism.{k}={v}" for k, v in init_args.items())]
        lead = "--mechanism=torch.nn.GRU"
    assert referee_main([*given, *REFEREE_BASE, "--out", "out"]) == 2
    assert one_error_line(capsys, "swar-bench referee") == (
        f"swar-bench referee: error: {lead}: GRU is not a ContextMechanism (missing init_state, detach_state); "
        f"{PROTOCOL_EXPECTED}")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["r.yaml"] if in_file else [])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(MODULES), how=st.sampled_from(["flag", "flag=", "file"]))
def test_any_torch_module_given_to_the_referee_is_named_as_no_mechanism(tmp_path_factory, capsys, monkeypatch, name, how):
    """The kind, in the referee: any torch.nn class, by `--mechanism X`, `--mechanism=X` or a
    `--config` file's `mechanism:`, is one line naming it before anything is built or written."""
    from swar_bench.referee.cli import main as referee_main

    folder = tmp_path_factory.mktemp("r")
    monkeypatch.chdir(folder)
    path = f"torch.nn.{name}"
    if how == "file":
        (folder / "r.yaml").write_text(f"mechanism: {path}\n")
        given, lead = ["--config", "r.yaml"], f"--config={folder / 'r.yaml'}: mechanism={path}"
    else:
        given = ["--mechanism", path] if how == "flag" else [f"--mechanism={path}"]
        lead = f"--mechanism={path}"
    assert referee_main([*given, *REFEREE_BASE, "--out", "out"]) == 2
    assert one_error_line(capsys, "swar-bench referee") == (
        f"swar-bench referee: error: {lead}: {name} is not a ContextMechanism (missing init_state, detach_state); "
        f"{PROTOCOL_EXPECTED}")
    assert not (folder / "out").exists()
