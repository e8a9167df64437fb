"""A numeric option given a value of the wrong type (a word, a fraction for an integer, nan or inf,
a list) is refused as its range check refuses it, by `referee` and by `fit` (fault: `referee
--seed=1.5` said jsonargparse's "--seed: Expected int. Got value: 1.5", `--grad_clip=nan` "Expected
one of float, None. Got value: nan", `fit --model.grad_clip=inf` the same, `--ranges abc` suggested
`--ranges=[abc]`)."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.referee.cli import main
from tests.harness.cli_lines import QUICKSTART
from tests.referee.test_option_lines import FLOATS, INTEGERS, QUICK, SEEDS, _line

CLIP = "is invalid; expected a max gradient norm > 0 (null: no clipping)"


def test_the_reported_referee_values_are_said_as_their_range_is(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for typed, line in [
        (["--seed=1.5"], f"--seed=1.5: {SEEDS}"),
        (["--seed=abc"], f"--seed=abc: {SEEDS}"),
        (["--grad_clip=nan"], f"--grad_clip=nan {CLIP}"),
        (["--grad_clip=inf"], f"--grad_clip=inf {CLIP}"),
        (["--ranges=[abc]"], "--ranges=[abc]: ranges[0]=abc: expected an integer >= 6"),
        (["--ranges", "abc"], "--ranges=abc: expected a list, e.g. --ranges=[32, 64]"),
    ]:
        assert swar_main(["referee", "--config", str(QUICK), *typed]) == 2
        assert _line(capsys) == f"swar-bench referee: error: {line}"
    assert list(tmp_path.iterdir()) == []


def test_a_non_finite_clip_norm_from_a_config_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("grad_clip: .inf\n")
    assert main(["--config", str(QUICK), "--out", str(tmp_path / "o"), "--config", str(bad)]) == 2
    assert _line(capsys) == f"swar-bench referee: error: --config={bad}: grad_clip=inf {CLIP}"


WORDS = st.text(alphabet="abcxyz", min_size=1, max_size=5).filter(lambda w: w not in ("y", "yes", "n", "no"))
NUMBERS = sorted(set(FLOATS) - {"grad_clip", "lr"}) + ["grad_clip", "lr"]


@st.composite
def wrong_values(draw):
    """(option, value as typed, what follows ``option=value`` in its refusal)."""
    option = draw(st.sampled_from(sorted(INTEGERS) + NUMBERS))
    if option in INTEGERS:
        expected = INTEGERS[option][2]
        value = draw(st.one_of(WORDS, st.sampled_from(["1.5", "-0.5", "true", "[1]", "nan", "inf"])))
    else:
        expected = FLOATS[option][1]
        value = draw(st.one_of(WORDS, st.sampled_from(["nan", "inf", "-inf", "true", "[1]"])))
    return option, value, expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=wrong_values(), where=st.sampled_from(["--option=value", "--option value", "--config file"]))
def test_any_referee_number_of_the_wrong_type_is_said_as_its_range_is(tmp_path_factory, capsys, case, where):
    """Every numeric referee option, given a word, a fraction for an integer, nan or inf, a bool or
    a list, on the command line or in a --config file: the option and the value as typed (or the
    file and its key), then what the option expects."""
    option, value, expected = case
    root = tmp_path_factory.mktemp("run")
    argv = ["--config", str(QUICK), "--out", str(root / "out")]
    if where == "--config file":
        config = root / "bad.yaml"
        config.write_text(f"{option}: {value}\n")
        argv += ["--config", str(config)]
    elif where == "--option value" and not value.startswith("-"):
        argv += [f"--{option}", value]
    else:
        argv += [f"--{option}={value}"]
    assert main(argv) == 2
    line = _line(capsys)
    if where == "--config file":
        assert line.startswith(f"swar-bench referee: error: --config={config}: {option}="), line
        assert line.endswith(expected), line
    else:
        assert line == f"swar-bench referee: error: --{option}={value}{expected}"
    assert "Expected" not in line and "Got value" not in line
    assert not (root / "out").exists()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hops=st.integers(1, 5), items=st.lists(st.sampled_from(["8", "64", "abc", "x", "1.5e", "null"]), min_size=1, max_size=3))
def test_any_distance_of_the_wrong_type_is_named_with_its_index(tmp_path_factory, capsys, hops, items):
    bad = next((i for i, item in enumerate(items) if item not in ("8", "64")), None)
    if bad is None or items[bad] == "null":
        return  # a list of numbers: the range checks' lines (test_option_lines); null: jsonargparse's None
    root = tmp_path_factory.mktemp("run")
    typed = "[" + ",".join(items) + "]"
    assert main(["--config", str(QUICK), "--out", str(root / "o"), f"--hops={hops}", f"--ranges={typed}"]) == 2
    assert _line(capsys) == (f"swar-bench referee: error: --ranges={typed}: ranges[{bad}]={items[bad]}: expected an "
                             f"integer >= {max(2, 2 * hops)}")


FIT = {  # option: what follows "--option=value" in its refusal (its range check's words)
    "model.lr": " is invalid; expected a positive finite learning rate",
    "model.grad_clip": " is invalid; expected a max gradient norm > 0 (0 or null: no clipping)",
    "model.warmup_steps": " is invalid; expected an integer >= 0",
    "model.min_lr_ratio": " is invalid; expected a value in [0, 1]",
    "model.weight_decay": ": expected a finite number >= 0",
    "model.max_steps": ": expected null (trainer.max_steps) or an integer >= 1",
    "trainer.max_steps": ": expected -1 (no limit) or an integer >= 1",
    "trainer.accumulate_grad_batches": ": expected an integer >= 1",
    "seed_everything": ": expected true, false or an integer in [0, 4294967295] (numpy's seeds)",
    "data.batch_size": ": expected an integer",
    "trainer.gradient_clip_val": ": expected null or a finite number",
    "collective_timeout": " is invalid; expected a positive number of seconds",
}
FLOAT_OPTIONS = {"model.lr", "model.grad_clip", "model.min_lr_ratio", "model.weight_decay", "trainer.gradient_clip_val",
                 "collective_timeout"}


def test_the_reported_fit_values_are_said_as_their_range_is(tmp_path, capsys, monkeypatch):
    from tests.harness.cli_lines import one_error_line

    monkeypatch.chdir(tmp_path)
    for typed, line in [("--model.grad_clip=inf", f"--model.grad_clip=inf{FIT['model.grad_clip']}"),
                        ("--trainer.max_steps=abc", f"--trainer.max_steps=abc{FIT['trainer.max_steps']}")]:
        assert swar_main(["fit", "--config", QUICKSTART, typed]) == 2
        assert one_error_line(capsys, "swar-bench") == f"swar-bench: error: {line}"
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(sorted(FIT)), data=st.data(), in_file=st.booleans())
def test_any_fit_number_of_the_wrong_type_is_said_as_its_range_is(tmp_path_factory, capsys, monkeypatch, option, data, in_file):
    from tests.harness.cli_lines import one_error_line

    bad = ["nan", "inf", "-inf"] if option in FLOAT_OPTIONS else ["1.5", "[2]"]
    value = data.draw(st.one_of(WORDS, st.sampled_from(bad)))
    work = tmp_path_factory.mktemp("w")
    monkeypatch.chdir(work)
    if in_file:
        extra = work / "extra.yaml"
        extra.write_text(yaml.safe_dump(_nested(option, yaml.safe_load(value) if value in ("[2]",) else value)))
        argv = ["fit", "--config", QUICKSTART, "--config", str(extra)]
    else:
        argv = ["fit", "--config", QUICKSTART, f"--{option}={value}"]
    assert swar_main(argv) == 2
    line = one_error_line(capsys, "swar-bench")
    if in_file:
        assert line.startswith(f"swar-bench: error: --config={extra}: {option}="), line
        assert line.endswith(FIT[option]), line
    else:
        assert line == f"swar-bench: error: --{option}={value}{FIT[option]}"
    assert sorted(p.name for p in Path(work).iterdir()) == (["extra.yaml"] if in_file else [])


def _nested(option: str, value):
    """``{"model": {"lr": value}}`` for ``model.lr``."""
    node = value
    for part in reversed(option.split(".")):
        node = {part: node}
    return node
