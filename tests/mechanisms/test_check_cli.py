"""``swar-bench check-mechanism``: a mechanism named in a --config file is named with the file,
CLASS_PATH and a --config naming another mechanism are refused, and a mechanism that needs a
CUDA device is one line (exit 2) before any check runs."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from swar_bench import mechanisms
from swar_bench.mechanisms.check_cli import main as check_main

ROOT = Path(__file__).resolve().parents[2]
ZOO = list(mechanisms.MECHANISMS)


def _err(capsys, argv):
    try:
        code = check_main(argv)
    except SystemExit as exit:  # a value the parser refuses ends as argparse's errors do
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.err.splitlines(), captured.out


def test_an_unknown_mechanism_in_a_config_names_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  mechanism: GRUU\n")
    code, err, out = _err(capsys, ["--config", str(bad)])
    assert code == 2 and out == ""
    assert err == [
        (f"swar-bench check-mechanism: error: --config={bad}: model.mechanism.class_path=GRUU: unknown mechanism; "
        f"expected one of {', '.join(ZOO)} or a class path module.Class; did you mean 'GRU'?")
    ]
    entry = tmp_path / "entry.yaml"
    entry.write_text("class_path: no_such_module.Layer\n")
    code, err, _ = _err(capsys, ["--config", str(entry)])
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"swar-bench check-mechanism: error: --config={entry}: class_path=no_such_module.Layer: cannot import module")


def test_class_path_and_a_config_naming_another_mechanism_are_refused(tmp_path, capsys):
    short = tmp_path / "short.yaml"
    short.write_text("model:\n  mechanism: GRU\n")
    code, err, out = _err(capsys, ["LSTM", "--config", str(short)])
    assert code == 2 and out == ""
    assert err == [
        (f"swar-bench check-mechanism: error: CLASS_PATH=LSTM conflicts with model.mechanism.class_path=GRU in "
        f"--config={short}; expected one mechanism: leave out CLASS_PATH to check the file's, or use a --config "
        "without model.mechanism")
    ]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ZOO), st.sampled_from(ZOO), st.booleans())
def test_class_path_and_config_agree_or_are_refused(tmp_path, capsys, given_name, file_name, full):
    """Any pair: the same class (by short name or full path) is accepted, another is refused
    in one line before anything is built."""
    config = tmp_path / "run.yaml"
    file_value = f"swar_bench.mechanisms.{file_name}" if full else file_name
    config.write_text(f"model:\n  mechanism: {file_value}\n")
    if given_name == file_name:
        # the same class: no conflict (an unknown option stops it before any check runs)
        code, err, _ = _err(capsys, [given_name, "--config", str(config), "--seq-len", "1"])
        assert err == ["swar-bench check-mechanism: error: --seq-len=1: expected an integer >= 2"]
    else:
        code, err, _ = _err(capsys, [given_name, "--config", str(config)])
        assert err == [
            (f"swar-bench check-mechanism: error: CLASS_PATH={given_name} conflicts with model.mechanism.class_path="
            f"{file_value} in --config={config}; expected one mechanism: leave out CLASS_PATH to check the file's, "
            "or use a --config without model.mechanism")
        ]
    assert code == 2


class _FakeFlaLayer(nn.Module):
    """Stands in for ``fla.layers.GatedDeltaNet`` where flash-linear-attention is not installed:
    the same constructor; check-mechanism must stop before calling it."""

    def __init__(self, hidden_size, layer_idx=0, num_heads=1, head_dim=8, mode="chunk"):
        super().__init__()
        self.proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, *args, **kwargs):  # pragma: no cover - the point is that no check runs
        raise AssertionError("a check ran")


def test_a_cuda_only_mechanism_on_the_cpu_is_one_line_before_any_check(capsys, monkeypatch):
    try:
        import fla.layers
    except ImportError:
        fla = types.ModuleType("fla")
        layers = types.ModuleType("fla.layers")
        layers.GatedDeltaNet = _FakeFlaLayer
        fla.layers = layers
        monkeypatch.setitem(sys.modules, "fla", fla)
        monkeypatch.setitem(sys.modules, "fla.layers", layers)
    monkeypatch.chdir(ROOT)
    code, err, out = _err(capsys, ["--config", "configs/fla_layer_cuda.yaml"])
    assert code == 2
    assert out == ""  # no row: not a conformance failure
    assert err == [
        "swar-bench check-mechanism: error: swar_bench.mechanisms.FlaLM: FlaLayer fla.layers.GatedDeltaNet runs "
        "fla's Triton kernels, which need a CUDA device; got cpu"
        + ("" if _cuda() else " (no CUDA device on this machine)")
        + "; the checks run on the CPU"
    ]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize("name", ["GRU", "swar_bench.mechanisms.GRU"])
def test_a_config_and_the_same_class_path_still_check(capsys, tmp_path, name):
    config = tmp_path / "gru.yaml"
    config.write_text("model:\n  mechanism: {class_path: GRU, init_args: {d_model: 8, n_layers: 1}}\n")
    code, err, out = _err(capsys, [name, "--config", str(config), "--seq-len", "16", "--long-len", "64"])
    assert code == 0 and err == []
    assert out.splitlines()[0] == "check-mechanism swar_bench.mechanisms.GRU(d_model=8, n_layers=1)"


MAX_SEED = 2**63 - 3  # the checks use example seeds seed .. seed + 2


@pytest.mark.parametrize("seed", ["-1", "9223372036854775808", "9223372036854775807"])
def test_the_reported_seeds_are_one_line_naming_the_range_that_works(capsys, seed):
    code, err, out = _err(capsys, ["GRU", "--seed", seed])
    assert code == 2 and out == ""
    assert err == [f"swar-bench check-mechanism: error: --seed={seed}: expected an integer in [0, {MAX_SEED}]"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_SEED + 1)))
def test_any_seed_outside_the_range_is_refused_before_any_check(capsys, seed):
    code, err, out = _err(capsys, ["GRU", "--seed", str(seed)])
    assert (code, out) == (2, "")
    assert err == [f"swar-bench check-mechanism: error: --seed={seed}: expected an integer in [0, {MAX_SEED}]"]


@settings(max_examples=8, deadline=None)
@given(st.one_of(st.integers(0, 3), st.integers(MAX_SEED - 3, MAX_SEED)))
def test_every_seed_the_range_names_runs_every_check(seed):
    """The range is the one that works: at both of its ends every check runs, none raises."""
    from swar_bench.mechanisms import GRU
    from swar_bench.mechanisms.conformance import check_mechanism, max_seed

    assert max_seed() == MAX_SEED
    results = check_mechanism(lambda: GRU(d_model=8, n_layers=1), seq_len=4, long_len=300, seed=seed)
    assert [r.detail for r in results if "raised" in r.detail] == []


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stop=st.sampled_from(["sigterm", "ctrl-c"]), swallowed=st.booleans())
def test_check_mechanism_stopped_says_so_in_one_line(monkeypatch, capsys, stop, swallowed):
    """Reported: `check-mechanism GRU` sent SIGTERM while it ran exited 143 without a word (or
    ran on to exit 0). Stopped inside its checks, raised there or swallowed there and only
    recorded, it now ends with one line and 143 / 130, and prints no report."""
    import signal as signals

    from swar_bench.mechanisms import check_cli
    from swar_bench.utils import interrupts

    signum = signals.SIGTERM if stop == "sigterm" else signals.SIGINT

    def checks(*args, **kwargs):
        handler = signals.getsignal(signum)
        try:
            handler(signum, None)  # the signal arriving in the checks
        except (KeyboardInterrupt, interrupts.Terminated):
            if not swallowed:
                raise
        return []

    monkeypatch.setattr("swar_bench.mechanisms.conformance.check_mechanism", checks)
    status = check_cli.main(["GRU", "--init_args", '{"d_model": 8, "n_layers": 1}'])
    captured = capsys.readouterr()
    said = "terminated (SIGTERM)" if stop == "sigterm" else "interrupted"
    assert (status, captured.err, captured.out) == (143 if stop == "sigterm" else 130,
                                                    f"swar-bench check-mechanism: {said}\n", "")
