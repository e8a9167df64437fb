"""``swar-bench check-mechanism``: every mechanism of the zoo passes; broken layers fail on their row."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import swar_bench.mechanisms as mech
from swar_bench.mechanisms.check_cli import main as check_main
from swar_bench.mechanisms.conformance import Conformance, check_mechanism, format_report, passed
from tests.mechanisms import broken_layers
from tests.mechanisms.test_mechanisms import CASES, VARIANTS, class_name

FAST = {"seq_len": 24, "long_len": 300, "n_splits": 2}
ROWS = [name for name, _ in Conformance.CHECKS]


def small(name):
    """The zoo's class at the small sizes of the mechanism tests (its defaults when absent)."""
    cls = getattr(mech, class_name(name))
    return lambda: cls(**CASES.get(name, {}))


@pytest.mark.parametrize("name", [*mech.MECHANISMS, *sorted(VARIANTS)])
def test_every_mechanism_of_the_zoo_passes(name):
    results = check_mechanism(small(name), **FAST)
    assert [r.name for r in results] == ROWS
    assert passed(results), format_report(results, name)


def first_failure(results):
    return next(r for r in results if not r.passed)


@pytest.mark.parametrize(
    ("cls", "row", "numbers"),
    [
        (broken_layers.LyingStateBytes, "state_bytes", "init B=1: state_bytes 132, measured 128"),
        (broken_layers.StateNotCarried, "streaming, random splits", "max |logits diff|"),
        (broken_layers.GrowingState, "fixed size", "measured state 1,536 bytes at T=24, 19,200 at T=300: it grows"),
        (broken_layers.NoDetach, "detach_state", "2 state tensor(s) on the graph before, 2 after"),
    ],
)
def test_broken_layers_fail_on_their_row(cls, row, numbers):
    kwargs = {"d_model": 16} if cls is broken_layers.GrowingState else {"d_model": 16, "n_layers": 2}
    results = check_mechanism(lambda: cls(**kwargs), **FAST)
    failure = first_failure(results)
    assert failure.name == row
    assert numbers in failure.detail
    assert not passed(results)
    assert f"first failure: {row}:" in format_report(results, cls.__name__)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(offset=st.integers(-64, 64).filter(lambda n: n != 0), batch_scaled=st.booleans())
def test_any_lying_state_bytes_fails_on_the_state_bytes_row(offset, batch_scaled):
    class Lying(mech.GRU):
        def state_bytes(self, batch_size, seq_len=0, dtype=None):
            true = super().state_bytes(batch_size, seq_len, dtype)
            return true + (offset * batch_size if batch_scaled else offset)

    conformance = Conformance(lambda: Lying(d_model=8, n_layers=1), **FAST)
    results = {r.name: r for r in conformance.run()}
    assert not results["state_bytes"].passed
    assert [n for n, r in results.items() if not r.passed] == ["state_bytes"]


def test_a_random_init_without_seed_fails_the_seed_row():
    class Unseeded(mech.GRU):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with torch.no_grad():
                self.head.weight.add_(torch.randn(self.head.weight.shape, generator=torch.Generator().manual_seed(torch.seed() % 2**31)))

    results = check_mechanism(lambda: Unseeded(d_model=8, n_layers=1), **FAST)
    assert first_failure(results).name == "same seed"


def test_cli_exit_codes_and_rows(capsys):
    assert check_main(["GRU", "--init_args", '{"d_model": 8, "n_layers": 1}', "--seq-len", "16", "--long-len", "64"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "check-mechanism swar_bench.mechanisms.GRU(d_model=8, n_layers=1)"
    assert out.rstrip().endswith("all 12 checks passed")
    assert sum("  PASS  " in line for line in out.splitlines()) == 12

    code = check_main(["tests.mechanisms.broken_layers.LyingStateBytes", "--init_args", '{"d_model": 8, "n_layers": 1}',
                       "--seq-len", "16", "--long-len", "64"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED: 1 of 12 checks; first failure: state_bytes: init B=1: state_bytes 36, measured 32" in out


def test_cli_reads_the_mechanism_from_configs(capsys):
    code = check_main(["--config", "configs/quickstart.yaml", "--config", "configs/mechanisms/gru.yaml",
                       "--init_args", '{"d_model": 8}', "--seq-len", "16", "--long-len", "64"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "check-mechanism swar_bench.mechanisms.GRU(vocab_size=40, d_model=8, n_layers=2)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["GRUU"], "CLASS_PATH=GRUU: unknown mechanism; expected one of ScalarDecayLinearAttention,"),
        (["GRUU"], "did you mean 'GRU'?"),
        (["no_such_module.Layer"], "cannot import module 'no_such_module'"),
        (["GRU", "--init_args", "[1, 2]"], "--init_args=[1, 2]: expected a JSON object"),
        (["GRU", "--init_args", '{"d_modle": 8}'], "--init_args: d_modle is not an argument of swar_bench.mechanisms.GRU (did you mean d_model?)"),
        ([], "no mechanism given"),
        (["--config", "does/not/exist.yaml"], "--config=does/not/exist.yaml: No such file or directory"),
    ],
)
def test_cli_bad_input_is_one_line(capsys, argv, message):
    assert check_main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert message in err
