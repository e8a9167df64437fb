"""A misspelt ``init_args`` key of a class under ``trainer`` in a ``--config`` file (a logger,
whose ``**kwargs`` jsonargparse resolves, or a callback) is named with "did you mean", as
``model.mechanism``'s are, not jsonargparse's "Expected one of ... Got value"."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.config_errors import class_arguments, value_keys

TENSORBOARD = "lightning.pytorch.loggers.TensorBoardLogger"
CSV = "lightning.pytorch.loggers.CSVLogger"


def test_reported_logger_typo(capsys, tmp_path, monkeypatch):
    from swar_bench.lightning_cli import main

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text(f"trainer:\n  logger:\n    class_path: {TENSORBOARD}\n    init_args:\n      save_dirr: runs\n")
    assert main(["fit", "--model.mechanism=GRU", "--config", str(config)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert err == [
        (f"swar-bench: error: --config={config}: unknown key trainer.logger.init_args.save_dirr (did you mean "
        "trainer.logger.init_args.save_dir?); expected options of swar-bench fit (swar-bench fit --help), and for "
        f"trainer.logger.init_args the arguments of {TENSORBOARD} (comment, default_hp_metric, filename_suffix, "
        "flush_secs, log_graph, max_queue, name, prefix, purge_step, save_dir, sub_dir, version)")
    ]


def test_forwarded_kwargs_the_parser_takes_pass():
    """``max_queue`` reaches ``SummaryWriter`` through ``**kwargs``: the parser takes it, so does the check."""
    logger = {"class_path": TENSORBOARD, "init_args": {"save_dir": "runs", "max_queue": 5, "flush_secs": 3}}
    assert value_keys("trainer.logger", logger, {}) == []
    assert class_arguments(TENSORBOARD) is None  # outside trainer: **kwargs are not followed (unchanged)


@pytest.fixture(scope="module")
def accepted():
    return {path: class_arguments(path, follow_kwargs=True) for path in (TENSORBOARD, CSV)}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), path=st.sampled_from([TENSORBOARD, CSV]), listed=st.booleans())
def test_any_misspelt_logger_argument_gets_a_suggestion(accepted, data, path, listed):
    """Any argument of a logger (alone or in a list) with one letter doubled: named at its dotted
    place with a "did you mean" naming one of the logger's arguments."""
    names = accepted[path]
    name = data.draw(st.sampled_from(names))
    i = data.draw(st.integers(0, len(name) - 1))
    typo = name[:i] + name[i] + name[i:]
    logger = {"class_path": path, "init_args": {typo: 1}}
    found = value_keys("trainer.logger", [logger] if listed else logger, {})
    where = "trainer.logger[0].init_args" if listed else "trainer.logger.init_args"
    assert len(found) == 1 and found[0][0] == f"{where}.{typo}"
    assert found[0][1] is not None and found[0][1].removeprefix(where + ".") in names
