"""The evaluation callbacks' options are checked before anything runs, named as typed (faults:
`test ... --calibration.permutation_seed=-1` ran the whole test, replaced the run folder's
accuracy reports, then said `expected non-negative integer` (numpy) naming no option, and `fit`
trained with it; `--accuracy.n_writes_values=[33]` stopped the run at its first validation batch
with `n_writes=32: expected one of [33]`, leaving a run folder; `--calibration.n_bins=0` said
`n_bins=0: ...`, not the option)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main
from swar_bench.harness.values import CALLBACK_CHECKS
from swar_bench.tasks.passkey_swar import ALLOWED_N
from tests.harness.cli_lines import QUICKSTART, one_error_line

REPORTED = [
    ("--calibration.permutation_seed=-1", "--calibration.permutation_seed=-1: expected an integer >= 0 (numpy's seeds)"),
    ("--calibration.n_bins=0", "--calibration.n_bins=0: expected an integer >= 1"),
    ("--calibration.n_permutations=-1", "--calibration.n_permutations=-1: expected an integer >= 1"),
    ("--mqar_accuracy.gap_bin_upper=[8,4]",
     "--mqar_accuracy.gap_bin_upper=[8, 4]: expected strictly increasing integer gaps >= 1, e.g. [4, 16, 64]"),
    ("--accuracy.n_writes_values=[33]", ("--accuracy.n_writes_values=[33]: leaves out N={missing} of data.{configs}; "
                                        "expected every N the run evaluates")),
]


@pytest.mark.parametrize(("flag", "line"), REPORTED, ids=[f for f, _ in REPORTED])
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_the_reported_values_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch, subcommand, flag, line):
    monkeypatch.chdir(tmp_path)
    assert main([subcommand, "--config", QUICKSTART, flag]) == 2
    # the quickstart validates n32 and tests n32..n1024
    configs, missing = ("val_configs", "32") if subcommand == "fit" else ("test_configs", "32, 64, 128, 256, 512, 1024")
    assert one_error_line(capsys) == f"swar-bench: error: {line.replace('{configs}', configs).replace('{missing}', missing)}"
    assert list(tmp_path.iterdir()) == []  # no run folder, no report replaced


BAD = {
    "calibration.n_bins": st.integers(-5, 0),
    "calibration.n_permutations": st.integers(-5, 0),
    "calibration.permutation_seed": st.integers(-(2**40), -1),
    "calibration.n_writes_values": st.lists(st.integers(-3, 0), min_size=1, max_size=3),
    "accuracy.n_writes_values": st.lists(st.integers(-3, 0), min_size=1, max_size=3),
    "mqar_accuracy.gap_bin_upper": st.lists(st.integers(1, 9), min_size=2, max_size=4).filter(
        lambda v: any(a >= b for a, b in itertools.pairwise(v))),
}


def test_every_callback_check_has_bad_values_here():
    assert set(BAD) == set(CALLBACK_CHECKS)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), subcommand=st.sampled_from(["fit", "validate", "test"]), in_file=st.booleans())
def test_any_bad_callback_value_is_one_line_naming_it_before_anything_runs(tmp_path_factory, capsys, monkeypatch, data,
                                                                           subcommand, in_file):
    """The kind: any option of CALLBACK_CHECKS, any value it refuses, on the command line or in a
    --config file, in fit, validate or test: one line naming the option (and the file), exit 2,
    nothing written."""
    option = data.draw(st.sampled_from(sorted(BAD)), label="option")
    value = data.draw(BAD[option], label="value")
    typed = str(value).replace(" ", "") if isinstance(value, list) else str(value)
    folder = tmp_path_factory.mktemp("c")
    monkeypatch.chdir(folder)
    group, key = option.split(".")
    if in_file:
        config = folder / "cb.yaml"
        config.write_text(f"{group}:\n  {key}: {typed}\n")
        given, lead = ["--config", str(config)], f"--config={config}: {option}="
    else:
        given, lead = [f"--{option}={typed}"], f"--{option}="
    assert main([subcommand, "--config", QUICKSTART, *given]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"swar-bench: error: {lead}") and ": expected " in line, line
    assert sorted(p.name for p in folder.iterdir()) == (["cb.yaml"] if in_file else [])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), subcommand=st.sampled_from(["fit", "validate", "test"]),
       bad=st.integers(1, 20000).filter(lambda n: n not in ALLOWED_N), as_name=st.booleans())
def test_an_evaluated_n_that_is_not_allowed_is_named_by_its_data_option(tmp_path_factory, capsys, monkeypatch, data,
                                                                        subcommand, bad, as_name):
    """The kind of `fit --data.val_configs=[n32,n65]` (the callbacks' N-coverage check spoke first:
    `--accuracy.n_writes_values=[32, ..., 16384]: leaves out N=65`): an N no release holds, anywhere
    in the configs the subcommand evaluates, is named by that data option as not allowed."""
    good = data.draw(st.lists(st.sampled_from(sorted(ALLOWED_N)), max_size=3, unique=True), label="allowed")
    where = data.draw(st.integers(0, len(good)), label="position")
    configs = [*good[:where], bad, *good[where:]]
    typed = "[" + ",".join(f"n{n}" if as_name else str(n) for n in configs) + "]"
    option = "data.val_configs" if subcommand in ("fit", "validate") else "data.test_configs"
    monkeypatch.chdir(tmp_path_factory.mktemp("n"))
    assert main([subcommand, "--config", QUICKSTART, f"--{option}={typed}"]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"swar-bench: error: --{option}=") and "is not an allowed N" in line, line
    assert "leaves out" not in line, line
