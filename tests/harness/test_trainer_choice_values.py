"""``--trainer.profiler`` naming no profiler and a negative ``--trainer.fast_dev_run`` are one line
naming the value and what is taken (a did-you-mean for a close profiler name), before Lightning
builds the Trainer and says it in its own words after its device notices."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonargparse import Namespace

from swar_bench.harness.values import PROFILERS, check_values
from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")
EXPECTED = "expected one of simple, advanced, pytorch, xla or a Profiler class path"


def _lines(capsys, argv):
    code = main(["fit", "--config", QUICKSTART, "--trainer.max_steps=2", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.strip()]


def test_the_reported_profiler_name_is_one_line(capsys):
    assert _lines(capsys, ["--trainer.profiler=NoSuchProfiler"]) == (
        2, [f"swar-bench: error: --trainer.profiler=NoSuchProfiler: {EXPECTED}"])


def test_the_reported_profiler_typo_in_a_config_file_is_named_with_a_suggestion(capsys, tmp_path):
    config = tmp_path / "pr.yaml"
    config.write_text("trainer:\n  profiler: simpel\n")
    assert _lines(capsys, ["--config", str(config)]) == (
        2, [f"swar-bench: error: --config={config}: trainer.profiler=simpel: {EXPECTED} (did you mean simple?)"])


def test_the_reported_negative_fast_dev_run_is_one_line(capsys):
    assert _lines(capsys, ["--trainer.fast_dev_run=-1"]) == (
        2, ["swar-bench: error: --trainer.fast_dev_run=-1: expected true, false or a number of batches >= 0"])


def _cfg(**trainer):
    return Namespace(trainer=Namespace(**trainer))


@settings(max_examples=60, deadline=None)
@given(name=st.text(alphabet="abcdelmpisxyz", min_size=1, max_size=10).filter(lambda n: n not in PROFILERS))
def test_any_unknown_profiler_name_is_refused_naming_it(name):
    with pytest.raises(ValueError, match=None) as refused:
        check_values(_cfg(profiler=name), [])
    assert str(refused.value).startswith(f"--trainer.profiler={name}: {EXPECTED}")


@settings(max_examples=30, deadline=None)
@given(value=st.one_of(st.integers(max_value=-1).map(lambda v: (v, False)), st.integers(0, 10**6).map(lambda v: (v, True)),
                       st.booleans().map(lambda v: (v, True)), st.sampled_from(PROFILERS).map(lambda v: (v, True))))
def test_any_negative_fast_dev_run_is_refused_and_good_values_pass(value):
    given_value, passes = value
    cfg = _cfg(profiler=given_value) if isinstance(given_value, str) else _cfg(fast_dev_run=given_value)
    if passes:
        check_values(cfg, [])
        return
    with pytest.raises(ValueError) as refused:
        check_values(cfg, [])
    assert str(refused.value) == f"--trainer.fast_dev_run={given_value}: expected true, false or a number of batches >= 0"
