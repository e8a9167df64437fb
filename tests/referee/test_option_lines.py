"""`swar-bench referee` names a refused setting where the user set it (fault: `referee --config
configs/referee/quick.yaml --seed -1` said "seed=-1: expected an integer in [0, ...]", the keyword
of evaluate, not the option `--seed`; a value from a `--config` file named no file)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.referee.cli import main

QUICK = Path(__file__).resolve().parents[2] / "configs" / "referee" / "quick.yaml"
SEEDS = "expected an integer in [0, 18446744073709551615]"


def _line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.strip() and not ln.startswith("referee: ")]
    assert len(lines) == 1, captured.err
    return lines[0]


def test_the_reported_seed_names_the_option(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # quick.yaml's out: runs/referee/quick, made and taken back
    assert swar_main(["referee", "--config", str(QUICK), "--seed", "-1"]) == 2
    assert _line(capsys) == f"swar-bench referee: error: --seed=-1: {SEEDS}"
    assert list(tmp_path.iterdir()) == []


def test_a_seed_from_a_config_file_names_the_file_and_its_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: -1\n")
    argv = ["--config", str(QUICK), "--out", str(tmp_path / "o")]
    assert main([*argv, "--config", str(bad)]) == 2
    assert _line(capsys) == f"swar-bench referee: error: --config={bad}: seed=-1: {SEEDS}"
    assert main([*argv, "--config", str(bad), "--seed", "3", "--lr", "0"]) == 2  # the later --seed replaces it
    assert _line(capsys) == "swar-bench referee: error: --lr=0 is invalid; expected a positive finite learning rate"
    assert main([*argv, "--seed=-2", "--config", str(bad)]) == 2  # the later file replaces --seed
    assert _line(capsys) == f"swar-bench referee: error: --config={bad}: seed=-1: {SEEDS}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


INTEGERS = {  # option: (smallest accepted, largest accepted or None, the expectation after "option=value")
    "seed": (0, 2**64 - 1, f": {SEEDS}"),
    "init_seed": (-(2**63), 2**64 - 1, ": expected an integer in [-9223372036854775808, 18446744073709551615]"),
    "hops": (1, None, ": expected an integer >= 1"),
    "vocab": (3, None, ": expected an integer >= 3"),
    "n_train_steps": (0, None, ": expected an integer >= 0"),
    "n_eval_trials": (1, None, ": expected an integer >= 1"),
    "perplexity_steps": (0, None, ": expected an integer >= 0"),
    "curriculum_rounds": (0, None, ": expected an integer >= 0"),
    "batch_size": (1, None, ": expected an integer >= 1"),
    "tbptt_steps": (1, None, ": expected an integer >= 1"),
    "chunk_size": (1, None, ": expected an integer >= 1"),
    "threads": (1, None, ": expected a number of CPU threads >= 1"),
}
FLOATS = {  # option: (bad values, the expectation after "option=value"); jsonargparse refuses nan and inf but for lr
    "lr": (["0", "-1", "-0.5", "nan", "-inf"], " is invalid; expected a positive finite learning rate"),
    "state_budget_bytes": (["0", "-8", "-0.5"], ": expected a number of bytes > 0"),
    "compute_budget_flops": (["0", "-1e9", "-0.5"], ": expected a number of FLOPs > 0"),  # nan: jsonargparse's line
    "resample_prob": (["-0.5", "1.5", "2"], ": expected a probability in [0, 1]"),
    "grad_clip": (["0", "-1", "-0.25"], " is invalid; expected a max gradient norm > 0 (null: no clipping)"),
}


@st.composite
def bad_settings(draw):
    """(option, value as typed, the value as the refusal shows it, the expectation)."""
    option = draw(st.sampled_from(sorted(INTEGERS) + sorted(FLOATS)))
    if option in INTEGERS:
        low, high, expected = INTEGERS[option]
        below = st.integers(max_value=low - 1)
        value = draw(below if high is None else st.one_of(below, st.integers(min_value=high + 1)))
        return option, str(value), str(value), expected
    values, expected = FLOATS[option]
    typed = draw(st.sampled_from(values))
    return option, typed, repr(float(typed)), expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setting=bad_settings(), where=st.sampled_from(["--option=value", "--option value", "--config file"]))
def test_every_numeric_setting_is_named_where_it_was_set(tmp_path_factory, capsys, setting, where):
    """Each numeric referee setting out of range, set on the command line (either form) or in a
    --config file: one line naming the option and the value as typed, or the file and its key."""
    option, typed, shown, expected = setting
    root = tmp_path_factory.mktemp("run")
    argv = ["--config", str(QUICK), "--out", str(root / "out")]
    if where == "--config file":
        config = root / "bad.yaml"
        config.write_text(yaml.safe_dump({option: yaml.safe_load(typed) if option in INTEGERS else float(typed)}))
        argv += ["--config", str(config)]
        line = f"--config={config}: {option}={shown}{expected}"
    elif where == "--option value" and (not typed.startswith("-") or re.fullmatch(r"-\d+|-\d*\.\d+", typed)):
        argv += [f"--{option}", typed]  # argparse takes "-1" as a value, "-inf" as an option
        line = f"--{option}={typed}{expected}"
    else:
        argv += [f"--{option}={typed}"]
        line = f"--{option}={typed}{expected}"
    assert main(argv) == 2
    assert _line(capsys) == f"swar-bench referee: error: {line}"
    assert sorted(p.name for p in root.iterdir()) == (["bad.yaml"] if where == "--config file" else [])


def test_ranges_name_the_option_with_the_item(tmp_path, capsys):
    argv = ["--config", str(QUICK), "--out", str(tmp_path / "o")]
    assert main([*argv, "--ranges", "[-8,16]"]) == 2
    assert _line(capsys) == "swar-bench referee: error: --ranges=[-8,16]: ranges[0]=-8: expected an integer >= 6"
    assert main([*argv, "--ranges=[16, 8]"]) == 2
    assert _line(capsys) == "swar-bench referee: error: --ranges=[16, 8]: expected strictly increasing distances"
    assert main([*argv, "--train_protocol", "steps"]) == 2
    assert _line(capsys) == "swar-bench referee: error: --train_protocol=steps: expected one of fixed_steps, matched_flops"
