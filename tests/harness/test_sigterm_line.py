"""A fit stopped by SIGTERM says so in one line of its own: Lightning's signal notices
("[rank: 0] Received SIGTERM: 15", "Bypassing SIGTERM: 15") are dropped inside quiet_output."""

from __future__ import annotations

import logging
import signal
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.utils.quiet import quiet_output

SIGNAL_LOGGER = "lightning.pytorch.trainer.connectors.signal_connector"  # Lightning's SIGTERM notices
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_a_fit_stopped_by_sigterm_prints_only_its_own_line(tmp_path):
    from harness.processes import child, stop

    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", str(CONFIGS / "quickstart.yaml"),
            "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
            "--trainer.max_steps=100000", f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
            "--checkpoint.every_n_train_steps=1"]
    with child(argv) as proc:
        deadline = time.monotonic() + 300  # a bound on a hang, not a timing assumption
        # the event: a checkpoint saved in the training loop, so Lightning's SIGTERM handler is installed
        while not list(tmp_path.glob("quickstart/GRU/version_0/checkpoints/last.ckpt")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        err = stop(proc, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    last = tmp_path / "quickstart" / "GRU" / "version_0" / "checkpoints" / "last.ckpt"
    ours = f"swar-bench: terminated (SIGTERM); fit --ckpt_path last resumes from {last}"
    assert [ln for ln in err.splitlines() if "SIGTERM" in ln] == [ours], err[-2000:]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rank=st.integers(0, 1023), signum=st.integers(1, 64), other=st.text(min_size=1, max_size=30))
def test_lightning_signal_notices_are_dropped_only_inside_quiet_output(caplog, rank, signum, other):
    from lightning.fabric.utilities.rank_zero import rank_prefixed_message

    logger = logging.getLogger(SIGNAL_LOGGER)
    notices = [rank_prefixed_message(f"Received SIGTERM: {signum}", rank), f"Bypassing SIGTERM: {signum}"]
    kept = f"requeing job {other}"  # what else the connector says is not hidden
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=SIGNAL_LOGGER):
        with quiet_output():
            for message in [*notices, kept]:
                logger.info(message)
        inside = [r.getMessage() for r in caplog.records]
        caplog.clear()
        for message in notices:  # outside: shown again
            logger.info(message)
        outside = [r.getMessage() for r in caplog.records]
    assert inside == [kept]
    assert outside == notices
