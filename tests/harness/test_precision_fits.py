"""A fit at each precision Lightning runs on CPU trains and validates (reported: `fit
--trainer.precision=64-true`, `16-true` and `bf16-true` ended at the first batch in "A frozen
dataclass was passed to `apply_to_collection`": the precision plugins pass every batch through
``convert_input``; the property over plugins and batches is in test_handoffs.py)."""

from __future__ import annotations

import pytest
import torch

from swar_bench.cli import main as swar_main
from tests.harness.cli_lines import QUICKSTART


@pytest.mark.parametrize("precision", ["64-true", "16-true", "bf16-true"])
def test_a_fit_at_a_true_precision_trains_and_validates(tmp_path, monkeypatch, capsys, precision):
    monkeypatch.chdir(tmp_path)
    status = swar_main(["fit", "--config", QUICKSTART, f"--trainer.precision={precision}", "--trainer.max_steps=2",
                        "--trainer.val_check_interval=2", "--trainer.limit_val_batches=1", "--trainer.enable_progress_bar=false"])
    err = capsys.readouterr().err
    assert status == 0, err[-2000:]
    [last] = tmp_path.glob("runs/**/last.ckpt")
    checkpoint = torch.load(last, map_location="cpu", weights_only=False)
    assert checkpoint["global_step"] == 2  # two optimizer steps taken, then validated and saved
