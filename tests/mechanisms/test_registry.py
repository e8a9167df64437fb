"""One name resolver for every command: zoo names, class paths, typos named in one line."""

import json
import string

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import swar_bench.mechanisms as mech
from swar_bench.cli import main as swar_main
from swar_bench.mechanisms.registry import (
    class_defaults,
    resolve_class,
    resolve_class_path,
    rewrite_mechanism_args,
)


@pytest.mark.parametrize("name", mech.MECHANISMS)
def test_zoo_names_are_swar_bench_classes(name):
    assert resolve_class(name) is getattr(mech, name)
    assert resolve_class_path(name) == f"swar_bench.mechanisms.{name}"
    assert resolve_class(f"swar_bench.mechanisms.{name}") is getattr(mech, name)


def test_gru_is_not_torch_nn_gru():
    assert resolve_class("GRU") is mech.GRU
    assert resolve_class("GRU") is not torch.nn.GRU


def test_class_paths_outside_the_package_are_imported():
    assert resolve_class("tests.mechanisms.broken_layers.GrowingState").__name__ == "GrowingState"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("GRUU", "--mechanism=GRUU: unknown mechanism; expected one of ScalarDecayLinearAttention, "),
        ("GRUU", "; did you mean 'GRU'?"),
        ("gatedDeltaNet", "did you mean 'GatedDeltaNet'?"),
        ("my_missing_layer.MyModel", "--mechanism=my_missing_layer.MyModel: cannot import module 'my_missing_layer'"),
        ("my_missing_layer.MyModel", "(is its folder on PYTHONPATH, or the package installed?)"),
        ("swar_bench.mechanisms.GRUU", "module 'swar_bench.mechanisms' has no 'GRUU'; did you mean 'GRU'?"),
        ("swar_bench.mechanisms.MECHANISMS", "is a tuple, not a class"),
    ],
)
def test_bad_names_are_one_line(value, message):
    with pytest.raises(ValueError, match=None) as info:
        resolve_class(value, "--mechanism")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=1, max_size=20))
def test_any_other_short_name_is_refused_with_the_valid_names(name):
    if name in mech.MECHANISMS:
        assert resolve_class(name) is getattr(mech, name)
        return
    with pytest.raises(ValueError) as info:
        resolve_class(name, "--model.mechanism")
    text = str(info.value)
    assert text.startswith(f"--model.mechanism={name}: unknown mechanism; expected one of ")
    assert all(n in text for n in mech.MECHANISMS) and "\n" not in text


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(mech.MECHANISMS), form=st.sampled_from(["eq", "space", "class_path", "json"]))
def test_every_flag_form_is_rewritten(name, form):
    full = f"swar_bench.mechanisms.{name}"
    defaults = class_defaults(getattr(mech, name))
    entry = json.dumps({"class_path": full, "init_args": defaults})
    given_args = {**defaults, "d_model": 8}
    argv = {
        "eq": ([f"--mechanism={name}"], [f"--mechanism={entry}"]),
        "space": (["--mechanism", name, "--seed", "1"], ["--mechanism", entry, "--seed", "1"]),
        "class_path": ([f"--mechanism.class_path={name}"], [f"--mechanism.class_path={full}"]),
        "json": (["--mechanism", json.dumps({"class_path": name, "init_args": {"d_model": 8}})],
                 ["--mechanism", json.dumps({"class_path": full, "init_args": given_args})]),
    }[form]
    assert rewrite_mechanism_args(argv[0], "--mechanism") == argv[1]
    assert rewrite_mechanism_args(["--other", name], "--mechanism") == ["--other", name]


def test_class_defaults_are_the_constructor_defaults():
    assert class_defaults(mech.GRU) == {"vocab_size": 40, "d_model": 64, "n_layers": 2, "mlp_ratio": 4}
    assert class_defaults(mech.Oracle) == {"vocab_size": 40, "params": None, "answer_logit": 20.0}


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "--config", "configs/quickstart.yaml", "--model.mechanism=GRUU"],
        ["referee", "--config", "configs/referee/quick.yaml", "--mechanism", "GRUU"],
        ["check-mechanism", "GRUU"],
    ],
)
def test_every_command_names_a_typo_the_same_way(capsys, argv):
    assert swar_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert ": unknown mechanism; expected one of ScalarDecayLinearAttention, " in err[0]
    assert err[0].endswith("did you mean 'GRU'?")


def test_referee_accepts_a_zoo_name(tmp_path, capsys):
    small = ["--ranges", "[6]", "--n_train_steps", "1", "--n_eval_trials", "2", "--perplexity_steps", "1",
             "--curriculum_rounds", "1", "--batch_size", "2", "--mechanism.init_args.d_model", "8"]
    out = tmp_path / "ref"
    code = swar_main(["referee", "--config", "configs/referee/quick.yaml", "--out", str(out), "--mechanism", "LSTM", *small])
    assert code == 0
    result = json.loads((out / "result.json").read_text())
    assert result["mechanism"]["class"] == "swar_bench.mechanisms.recurrent.LSTM"


# --- a config file reads a mechanism name as the command line does ----------------------------


def _printed_mechanism(capsys, argv):
    import yaml

    assert swar_main(argv) == 0, capsys.readouterr().err
    printed = yaml.safe_load(capsys.readouterr().out)
    return printed["model"]["mechanism"] if "model" in printed else printed["mechanism"]


def _one_error_line(capsys, argv):
    assert swar_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("command", ["fit", "referee"])
def test_a_short_name_in_a_config_file_is_the_command_lines(tmp_path, capsys, command):
    # The reported example: `model.mechanism: {class_path: GRU}` in a config file was left to
    # jsonargparse, which found torch.nn.GRU among the classes named GRU and stopped.
    key, base = (("model", "mechanism"), "configs/quickstart.yaml") if command == "fit" else (("mechanism",), "configs/referee/quick.yaml")
    flag = "--" + ".".join(key)
    config = tmp_path / "gru.yaml"
    entry = {"class_path": "GRU"}
    config.write_text(json.dumps({key[0]: {key[1]: entry}} if len(key) == 2 else {key[0]: entry}))
    from_file = _printed_mechanism(capsys, [command, "--config", base, "--config", str(config), "--print_config"])
    from_flag = _printed_mechanism(capsys, [command, "--config", base, f"{flag}=GRU", "--print_config"])
    assert from_file == from_flag == {"class_path": "swar_bench.mechanisms.GRU", "init_args": class_defaults(mech.GRU)}
    # an unknown name: the same one line from the same resolver, naming where it was read
    entry["class_path"] = "GRUU"
    config.write_text(json.dumps({key[0]: {key[1]: entry}} if len(key) == 2 else {key[0]: entry}))
    file_error = _one_error_line(capsys, [command, "--config", base, "--config", str(config)])
    flag_error = _one_error_line(capsys, [command, "--config", base, f"{flag}=GRUU"])
    prog = "swar-bench" if command == "fit" else "swar-bench referee"
    tail = ("=GRUU: unknown mechanism; expected one of " + ", ".join(mech.MECHANISMS)
            + " or a class path module.Class; did you mean 'GRU'?")
    assert file_error == f"{prog}: error: --config={config}: {'.'.join(key)}.class_path{tail}"
    assert flag_error == f"{prog}: error: {flag}{tail}"


@settings(max_examples=40, deadline=None)
@given(
    name=st.one_of(st.sampled_from(mech.MECHANISMS), st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12)),
    as_mapping=st.booleans(),
    init_args=st.one_of(st.none(), st.fixed_dictionaries({}, optional={"d_model": st.integers(1, 64), "n_layers": st.integers(1, 4)})),
    keys=st.sampled_from([("model", "mechanism"), ("mechanism",)]),
)
def test_a_config_entry_resolves_exactly_as_the_flag_value(name, as_mapping, init_args, keys):
    from swar_bench.mechanisms.registry import resolve_config_mechanism

    flag = "--" + ".".join(keys)
    entry = {"class_path": name, **({"init_args": init_args} if init_args is not None else {})} if as_mapping else name
    config = {"seed": 0, keys[0]: {keys[1]: entry, "lr": 0.1}} if len(keys) == 2 else {"seed": 0, keys[0]: entry}
    value = json.dumps(entry) if as_mapping else name
    try:
        (rewritten,) = rewrite_mechanism_args([f"{flag}={value}"], flag)
    except ValueError as err:  # not a mechanism: the config route refuses it with the same words
        with pytest.raises(ValueError) as info:
            resolve_config_mechanism(config, keys, "--config=run.yaml")
        assert str(info.value) == f"--config=run.yaml: {'.'.join(keys)}.class_path{str(err).removeprefix(flag)}"
        return
    resolved = resolve_config_mechanism(config, keys, "--config=run.yaml")
    node = resolved[keys[0]][keys[1]] if len(keys) == 2 else resolved[keys[0]]
    assert node == json.loads(rewritten.split("=", 1)[1])
    assert resolved["seed"] == 0 and (len(keys) == 1 or resolved[keys[0]]["lr"] == 0.1)  # the rest untouched
