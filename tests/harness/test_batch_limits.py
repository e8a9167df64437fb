"""A batch limit written as an integer is a number of batches (fault: `--trainer.limit_val_batches=1`,
one batch in Lightning's words, reached the Trainer as 1.0, every batch: jsonargparse reads
Lightning's `Union[int, float]` as a float)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.harness import stops
from swar_bench.harness.values import BATCH_LIMITS, integer_batch_limits
from swar_bench.lightning_cli import main

ORACLE = str(Path(__file__).resolve().parents[2] / "configs" / "oracle.yaml")


@pytest.mark.parametrize(("typed", "limit"), [("1", 1), ("1.0", 1.0), ("2", 2)])
def test_the_reported_limit_reaches_the_trainer_as_typed(tmp_path, monkeypatch, typed, limit):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--config", ORACLE, f"--trainer.limit_val_batches={typed}", "--trainer.logger=false"]) == 0
    trainer = stops.run_trainer()
    assert trainer.limit_val_batches == limit and type(trainer.limit_val_batches) is type(limit)
    assert trainer.num_val_batches == ([1] if typed == "1" else [16] if typed == "1.0" else [2])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(BATCH_LIMITS), settings_=st.lists(
    st.tuples(st.sampled_from(["flag", "config", "trainer file"]), st.integers(0, 5), st.booleans()),
    min_size=1, max_size=3))
def test_the_last_setting_decides_int_or_fraction(tmp_path_factory, option, settings_):
    """The kind: any batch-limit option set any number of times, on the command line, in a
    --config file or a --trainer file, as an integer or as a float: the last setting decides; an
    integer is given to the Trainer as an int, a float is left alone."""
    folder = tmp_path_factory.mktemp("l")
    argv = ["fit"]
    for i, (where, number, as_float) in enumerate(settings_):
        text = f"{number}.0" if as_float else str(number)
        if where == "flag":
            argv.append(f"--trainer.{option}={text}")
        elif where == "config":
            (folder / f"c{i}.yaml").write_text(f"trainer:\n  {option}: {text}\n")
            argv += ["--config", str(folder / f"c{i}.yaml")]
        else:
            (folder / f"t{i}.yaml").write_text(f"{option}: {text}\n")
            argv += ["--trainer", str(folder / f"t{i}.yaml")]
    _, number, as_float = settings_[-1]
    cfg = {"trainer": {option: float(number)}}  # what the parser hands on
    assert integer_batch_limits(cfg, argv) == ({} if as_float else {option: number})
