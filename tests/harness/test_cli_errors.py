"""One-line errors of ``swar-bench fit`` for mechanism init args, and the warning when a later
``--model.mechanism`` drops init args given before it."""

from __future__ import annotations

import typing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench import mechanisms
from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")


def _lines(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def _one_error(capsys, argv, line):
    """Run ``swar-bench ARGV``: it must exit 2 with exactly ``line`` as its message."""
    code, err = _lines(capsys, argv)
    assert code == 2
    assert err == [line]


def _config(path: Path, text: str) -> str:
    """Write a config file at ``path``; its path, as ``--config`` takes it."""
    path.write_text(text)
    return str(path)


def _mechanism_yaml(name: str, arg: str, value) -> str:
    """A config naming mechanism ``name`` with one init arg."""
    return f"model:\n  mechanism:\n    class_path: {name}\n    init_args:\n      {arg}: {value}\n"


def test_wrong_typed_init_arg_on_the_command_line_is_one_whole_line(capsys):
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=abc"],
               "swar-bench: error: --model.mechanism.init_args.d_model=abc: expected an integer "
               "(an argument of swar_bench.mechanisms.GRU)")


def test_unknown_init_arg_lists_the_accepted_ones(capsys):
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--model.mechanism=GRU", "--model.mechanism.init_args.n_heads=abc"],
               "swar-bench: error: --model.mechanism.init_args.n_heads: not an argument of swar_bench.mechanisms.GRU; "
               "expected one of vocab_size, d_model, n_layers, mlp_ratio")


def test_bad_init_args_in_a_config_file_name_the_file(tmp_path, capsys):
    typed = _config(tmp_path / "typed.yaml", _mechanism_yaml("GRU", "d_model", "abc"))
    typed_line = (f"swar-bench: error: --config={typed}: model.mechanism.init_args.d_model=abc: expected an integer "
                  "(an argument of swar_bench.mechanisms.GRU)")
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--config", typed], typed_line)
    misspelt = _config(tmp_path / "misspelt.yaml", _mechanism_yaml("GRU", "n_layerz", 2))
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--config", misspelt],
               f"swar-bench: error: --config={misspelt}: unknown key model.mechanism.init_args.n_layerz (did you mean "
               "model.mechanism.init_args.n_layers?); expected options of swar-bench fit (swar-bench fit --help), and for "
               "model.mechanism.init_args the arguments of GRU (vocab_size, d_model, n_layers, mlp_ratio)")
    # jsonargparse refuses the file as it loads it, before a later option: the file is named
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--config", typed, "--model.mechanism.init_args.d_model=8"],
               typed_line)
    # a bad value on the command line after a good file names the option
    good = _config(tmp_path / "good.yaml", _mechanism_yaml("GRU", "d_model", 16))
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--config", good, "--model.mechanism.init_args.d_model=x"],
               "swar-bench: error: --model.mechanism.init_args.d_model=x: expected an integer "
               "(an argument of swar_bench.mechanisms.GRU)")


def _int_args(name: str) -> list[str]:
    hints = typing.get_type_hints(getattr(mechanisms, name).__init__)
    return [arg for arg, hint in hints.items() if hint is int]


INT_ARGS = [(name, arg) for name in mechanisms.MECHANISMS for arg in _int_args(name)]
NOT_INTS = st.one_of(
    st.text(alphabet="abcdxz", min_size=1, max_size=6),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda x: x != int(x)).map(repr),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(INT_ARGS), NOT_INTS, st.booleans())
def test_any_wrong_typed_int_init_arg_is_one_line_naming_option_value_and_type(capsys, tmp_path, mechanism_arg, value, in_file):
    name, arg = mechanism_arg
    if in_file:
        path = _config(tmp_path / "run.yaml", _mechanism_yaml(name, arg, value))
        argv, where = ["fit", "--config", path], f"--config={path}: model.mechanism.init_args.{arg}={value}"
    else:
        argv, where = ["fit", f"--model.mechanism={name}", f"--model.mechanism.init_args.{arg}={value}"], f"--model.mechanism.init_args.{arg}={value}"
    _one_error(capsys, argv,
               f"swar-bench: error: {where}: expected an integer (an argument of swar_bench.mechanisms.{name})")


def test_a_later_mechanism_warns_about_the_init_args_it_drops(capsys):
    code = main(["fit", "--config", QUICKSTART, "--model.mechanism.init_args.n_layers=1", "--model.mechanism=GRU", "--print_config"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.splitlines() == [
        ("swar-bench: warning: --model.mechanism=GRU replaces --model.mechanism.init_args.n_layers=1 given before it "
        "(the new mechanism starts from its class's defaults); give init args after --model.mechanism to keep them")
    ]
    assert "n_layers: 2" in captured.out  # GRU's default: the warning tells the truth
    # init args after the mechanism are kept and warn about nothing
    code = main(["fit", "--config", QUICKSTART, "--model.mechanism=GRU", "--model.mechanism.init_args.n_layers=1", "--print_config"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err == ""
    assert "n_layers: 1" in captured.out


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(["n_layers", "d_model", "mlp_ratio"]), min_size=0, max_size=3),
    st.sampled_from(["GRU", "LSTM", "swar_bench.mechanisms.GRU"]),
    st.booleans(),
    st.sampled_from(["--config q.yaml", "--config=q.yaml", "--model.mechanism=LSTM", None]),
)
def test_replaced_init_args_names_exactly_those_given_before(args, name, spaced, first):
    from swar_bench.mechanisms.registry import replaced_init_args

    before = [f"--model.mechanism.init_args.{a}={i + 1}" for i, a in enumerate(args)]
    flag = ["--model.mechanism", name] if spaced else [f"--model.mechanism={name}"]
    after = ["--model.mechanism.init_args.d_model=8"]
    lines = replaced_init_args([*(first.split() if first else []), *before, *flag, *after], "--model.mechanism")
    if not args or first is None:  # nothing given, or given before any mechanism: they replace nothing
        assert lines == []
    else:
        assert lines == [
            (f"--model.mechanism={name} replaces {' '.join(before)} given before it (the new mechanism starts from its "
            "class's defaults); give init args after --model.mechanism to keep them")
        ]


def _no_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_a_cuda_config_on_a_cpu_machine_is_one_line_naming_the_file(monkeypatch, capsys):
    _no_gpu(monkeypatch)
    fsdp = Path(QUICKSTART).parent / "fsdp_cuda.yaml"
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--config", str(fsdp)],
               f"swar-bench: error: --config={fsdp}: trainer.accelerator=gpu: no CUDA device is available on this machine; "
               "expected cpu or auto")
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--trainer.accelerator=gpu"],
               "swar-bench: error: --trainer.accelerator=gpu: no CUDA device is available on this machine; expected cpu or auto")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["gpu", "cuda"]), st.sampled_from(["equals", "spaced", "file"]), st.sampled_from(["fit", "test"]))
def test_any_gpu_accelerator_without_a_gpu_is_one_line(monkeypatch, capsys, tmp_path, value, route, command):
    _no_gpu(monkeypatch)
    if route == "file":
        path = _config(tmp_path / "gpu.yaml", f"trainer:\n  accelerator: {value}\n")
        extra, where = ["--config", path], f"--config={path}: trainer.accelerator={value}"
    else:
        extra = [f"--trainer.accelerator={value}"] if route == "equals" else ["--trainer.accelerator", value]
        where = f"--trainer.accelerator={value}"
    _one_error(capsys, [command, "--config", QUICKSTART, *extra],
               f"swar-bench: error: {where}: no CUDA device is available on this machine; expected cpu or auto")


def test_an_inline_mapping_and_a_union_typed_arg_are_whole_lines(capsys):
    inline = '{"class_path": "GRU", "init_args": {"d_model": "abc"}}'
    _one_error(capsys, ["fit", "--config", QUICKSTART, f"--model.mechanism={inline}"],
               "swar-bench: error: --model.mechanism.init_args.d_model=abc: expected an integer "
               "(an argument of swar_bench.mechanisms.GRU)")
    _one_error(capsys, ["fit", "--model.mechanism=MultiScaleRetention", "--model.mechanism.init_args.decays=abc"],
               "swar-bench: error: --model.mechanism.init_args.decays: Expected one of list[float], None. Got value: abc "
               "(an argument of swar_bench.mechanisms.MultiScaleRetention)")


TYPED_OPTIONS = [("model.lr", " is invalid; expected a positive finite learning rate"), ("data.batch_size", ": expected an integer"),
                 ("model.tbptt_steps", " is invalid; expected an integer >= 1 (tokens per chunk)")]
"""Options and what follows ``option=value`` in their refusal of a word (the words of their range checks)."""


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(TYPED_OPTIONS), st.text(alphabet="abcdxz", min_size=1, max_size=6), st.booleans())
def test_any_wrong_typed_option_is_one_line_naming_the_option_or_file(capsys, tmp_path, option_type, value, in_file):
    option, expected = option_type
    if in_file:
        section, name = option.split(".")
        path = _config(tmp_path / "run.yaml", f"{section}:\n  {name}: {value}\n")
        argv, where = ["fit", "--config", QUICKSTART, "--config", path], f"--config={path}: {option}={value}"
    else:
        argv, where = ["fit", "--config", QUICKSTART, f"--{option}={value}"], f"--{option}={value}"
    _one_error(capsys, argv, f"swar-bench: error: {where}{expected}")


def test_init_args_before_any_mechanism_are_one_line_saying_so(capsys):
    # reported (referee): "Parser key "mechanism": Problem with given class_path 'torch.nn.Module':
    # Option 'd_model' is not accepted" after the warning; fit said "not an argument of torch.nn.Module"
    from swar_bench.referee.cli import main as referee_main

    code = referee_main(["--mechanism.init_args.d_model=8", "--mechanism=GRU"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err == [  # one line: no warning that the later --mechanism drops them as well
        ("swar-bench referee: error: --mechanism.init_args.d_model: given before any mechanism was chosen; "
         "expected --mechanism=NAME (or a --config naming one) before the mechanism's init args"),
    ]
    _one_error(capsys, ["fit", "--model.mechanism.init_args.d_model=8"],
               "swar-bench: error: --model.mechanism.init_args.d_model: given before any mechanism was chosen; "
               "expected --model.mechanism=NAME (or a --config naming one) before the mechanism's init args")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(INT_ARGS), st.sampled_from(["fit", "referee"]), st.sampled_from(["init_args", "short", "spaced"]),
       st.booleans())
def test_any_init_arg_before_any_mechanism_is_one_line_naming_it(capsys, mechanism_arg, command, form, then_mechanism):
    from swar_bench.referee.cli import main as referee_main

    name, arg = mechanism_arg
    flag = "--model.mechanism" if command == "fit" else "--mechanism"
    given = {"init_args": [f"{flag}.init_args.{arg}=8"], "short": [f"{flag}.{arg}=8"],
             "spaced": [f"{flag}.init_args.{arg}", "8"]}[form]
    argv = [*given, *([f"{flag}={name}"] if then_mechanism else [])]
    code = main(["fit", *argv]) if command == "fit" else referee_main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]
    assert code == 2
    assert lines == [
        (f"swar-bench{' referee' if command == 'referee' else ''}: error: {flag}.init_args.{arg}: given before any "
        f"mechanism was chosen; expected {flag}=NAME (or a --config naming one) before the mechanism's init args")
    ]


# arguments whose range a constructor checks (not their type, which the parser checks)
RANGE_CHECKED = [("model.lr", "-1"), ("model.lr", "0"), ("model.tbptt_steps", "0"), ("model.grad_clip", "-1"),
                 ("data.batch_size", "0"), ("data.eval_batch_size", "-3"),
                 ("model.mechanism.init_args.d_model", "-4"), ("model.mechanism.init_args.n_layers", "0")]


def test_the_reported_init_arg_out_of_range_names_its_option(capsys):
    # reported: "swar-bench: error: d_model must be a positive integer, got -4" named no option
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--model.mechanism.init_args.d_model=-4"],
               "swar-bench: error: --model.mechanism.init_args.d_model=-4: d_model must be a positive integer, got -4")


def test_the_reported_width_that_heads_do_not_divide_names_the_width_not_the_heads(capsys):
    # reported: d_model=-3 gave "--config=.../quickstart.yaml: model.mechanism.init_args.n_heads:
    # n_heads=2 must divide d_model=-3", blaming the config file and n_heads
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--model.mechanism.init_args.d_model=-3"],
               "swar-bench: error: --model.mechanism.init_args.d_model=-3: d_model must be a positive integer, got -3")


def _size_args(name: str) -> list[str]:
    """The mechanism's size arguments: its int (or optional int) init args, but ``conv_size``,
    where 0 is valid (no short convolution; its refusals are tests/mechanisms/test_conv_size.py's)."""
    hints = typing.get_type_hints(getattr(mechanisms, name).__init__)
    return [arg for arg, hint in hints.items() if (hint is int or hint == int | None) and arg != "conv_size"]


SIZE_ARGS = [(name, arg) for name in mechanisms.MECHANISMS for arg in _size_args(name)]


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SIZE_ARGS), st.integers(max_value=0), st.booleans())
def test_any_non_positive_size_is_one_line_naming_its_own_option(capsys, tmp_path, mechanism_arg, value, in_file):
    # checked before any relation between sizes (n_heads divides d_model, head_dim divides
    # expand * d_model), so the message never names another argument or where that one was set
    name, arg = mechanism_arg
    what = f"{arg} must be a positive integer, got {value}"
    if in_file:
        path = _config(tmp_path / "run.yaml", _mechanism_yaml(name, arg, value))
        argv, line = ["fit", "--config", path], f"--config={path}: model.mechanism.init_args.{arg}: {what}"
    else:
        argv = ["fit", f"--model.mechanism={name}", f"--model.mechanism.init_args.{arg}={value}"]
        line = f"--model.mechanism.init_args.{arg}={value}: {what}"
    _one_error(capsys, argv, f"swar-bench: error: {line}")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(RANGE_CHECKED), st.booleans())
def test_any_value_a_constructor_refuses_is_one_line_led_by_its_option_or_file(capsys, tmp_path, case, in_file):
    option, value = case
    if in_file:
        *sections, name = option.split(".")
        text, indent = "", ""
        for section in sections:
            text += f"{indent}{section}:\n"
            indent += "  "
            if section == "mechanism":
                text += f"{indent}class_path: GatedDeltaNet\n"
        text += f"{indent}{name}: {value}\n"
        path = _config(tmp_path / "run.yaml", text)
        argv, lead = ["fit", "--config", QUICKSTART, "--config", path], f"swar-bench: error: --config={path}: {option}: "
    else:
        argv, lead = ["fit", "--config", QUICKSTART, f"--{option}={value}"], f"swar-bench: error: --{option}="
    code, err = _lines(capsys, argv)
    assert code == 2 and len(err) == 1 and err[0].startswith(lead), (option, value, err)


NON_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "+inf", "Infinity", "-Infinity"])


def test_the_reported_nan_learning_rate_names_the_option_and_what_it_expects(capsys):
    _one_error(capsys, ["fit", "--config", QUICKSTART, "--trainer.max_steps=2", "--model.lr=nan"],
               "swar-bench: error: --model.lr=nan is invalid; expected a positive finite learning rate")


@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(NON_FINITE, st.sampled_from(["fit", "referee"]))
def test_any_non_finite_learning_rate_is_one_line_naming_the_option(capsys, value, command):
    from swar_bench.cli import main as swar_main

    referee = str(Path(QUICKSTART).parent / "referee" / "quick.yaml")
    argv = (["fit", "--config", QUICKSTART, "--trainer.max_steps=2", f"--model.lr={value}"] if command == "fit"
            else ["referee", "--config", referee, "--out", "/nonexistent-never-written", f"--lr={value}"])
    assert swar_main(argv) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    option, prog = ("--model.lr", "swar-bench") if command == "fit" else ("--lr", "swar-bench referee")
    assert err == [f"{prog}: error: {option}={value} is invalid; expected a positive finite learning rate"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["--trainer.logger.init_args.save_dir", "--model.lr", "--data.source", "--ckpt_path"]))
def test_any_option_given_dashes_is_one_line_naming_it(capsys, option):
    _one_error(capsys, ["fit", "--config", QUICKSTART, f"{option}=--"],
               f"swar-bench: error: argument {option}: expected one value; got '--'")
