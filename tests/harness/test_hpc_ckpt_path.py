"""``--ckpt_path=hpc`` with no HPC checkpoint is one line in the words of ``--ckpt_path=last``
without a ``last.ckpt``: the keyword, where Lightning looked and what works instead."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness.checkpoints import ckpt_path_expected, hpc_missing_line
from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")


def test_the_reported_test_with_no_hpc_checkpoint_is_one_line(capsys, tmp_path):
    code = main(["test", "--config", QUICKSTART, "--ckpt_path=hpc", f"--trainer.default_root_dir={tmp_path}",
                 f"--trainer.logger.init_args.save_dir={tmp_path}"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert code == 2
    assert [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")] == [
        (f"swar-bench: error: --ckpt_path=hpc: no HPC checkpoint (hpc_ckpt_<N>.ckpt, saved when SLURM stops a run) in "
        f"--trainer.default_root_dir={tmp_path}; expected {ckpt_path_expected('test')}")]


@settings(max_examples=40, deadline=None)
@given(fn=st.sampled_from(["fit", "validate", "test", "predict"]),
       folder=st.one_of(st.none(), st.text(alphabet="abc/_{}.-", min_size=1, max_size=12)))
def test_any_missing_hpc_checkpoint_is_one_line(fn, folder):
    # Lightning's own words (trainer/connectors/checkpoint_connector.py)
    message = (f'`.{fn}(ckpt_path="hpc")` is set but no HPC checkpoint was found. Please pass an exact checkpoint path to '
               f"`.{fn}(ckpt_path=...)`")
    line = hpc_missing_line(message, folder)
    where = f" in --trainer.default_root_dir={folder}" if folder else ""
    assert line == (f"--ckpt_path=hpc: no HPC checkpoint (hpc_ckpt_<N>.ckpt, saved when SLURM stops a run){where}; "
                    f"expected {ckpt_path_expected(fn)}")
    assert hpc_missing_line("another error", folder) is None
