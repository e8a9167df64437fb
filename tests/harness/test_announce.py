"""The announce line names only a folder the run writes (fault: `fit --trainer.fast_dev_run=true`
printed "run folder runs", and nothing was written there: Lightning's fast_dev_run writes no logs
and no checkpoints)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")
SMALL = [
    "--model.mechanism=GRU",
    "--model.mechanism.init_args.d_model=8",
    "--data.batch_size=2",
    "--data.val_configs=[32]",
    "--data.test_configs=[32]",
    "--data.eval_examples=8",
    "--data.eval_batch_size=8",
    "--trainer.max_steps=1",
    "--trainer.limit_val_batches=1",
    "--trainer.limit_predict_batches=1",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
]


def _announced(out: str, subcommand: str) -> str:
    lines = [
        ln
        for ln in out.splitlines()
        if ln.startswith(f"swar-bench {subcommand}: ") and "params" in ln
    ]
    assert len(lines) == 1, out
    return lines[0]


def _files(root: Path) -> list[Path]:
    return [Path(d, f) for d, _, names in os.walk(root) for f in names]


def test_the_reported_fast_dev_run_fit_names_no_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "fit",
                "--config",
                QUICKSTART,
                "--trainer.fast_dev_run=true",
                "--trainer.enable_progress_bar=false",
            ]
        )
        == 0
    )
    assert _announced(capsys.readouterr().out, "fit") == (
        "swar-bench fit: GatedDeltaNet (swar_bench.mechanisms.delta_net.GatedDeltaNet): 59,620 params, state 10,496 "
        "bytes/sequence; fast_dev_run: no run folder is written (no logs, no checkpoints)"
    )
    assert _files(tmp_path) == []  # as it says


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(subcommand=st.sampled_from(["fit", "validate", "test", "predict"]), fast=st.booleans())
def test_the_announced_folder_is_where_the_run_writes(capsys, tmp_path_factory, subcommand, fast):
    """The kind: whatever the subcommand, with or without ``fast_dev_run``, the folder the announce
    line names holds every file the run wrote (and at least one), and a line that names none
    comes from a run that wrote nothing."""
    cwd = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        capsys.readouterr()
        assert (
            main(
                [
                    subcommand,
                    "--config",
                    QUICKSTART,
                    *SMALL,
                    f"--trainer.fast_dev_run={str(fast).lower()}",
                ]
            )
            == 0
        )
    line = _announced(capsys.readouterr().out, subcommand)
    written = _files(cwd)
    if line.endswith("fast_dev_run: no run folder is written (no logs, no checkpoints)"):
        assert fast and written == []
        return
    folder = cwd / line.rsplit(" ", 1)[1]
    assert "; run folder " in line or (
        fast and subcommand == "test" and "only the test reports, into" in line
    )
    assert written and all(folder in path.parents for path in written), (line, written)
