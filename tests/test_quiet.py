"""Quiet output: the library notices that say nothing about a run are dropped, by message, only
inside quiet_output; a fit and its resume print none of them."""

import logging
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.quiet import quiet_output

NOTICES = {
    "leafspec": ("`isinstance(treespec, LeafSpec)` is deprecated, use ... instead.", FutureWarning),
    "srun": ("The `srun` command is available on your system but is not used. HINT: ...", UserWarning),
    "ckpt": ("Checkpoint directory runs/x/checkpoints exists and is not empty.", UserWarning),
    "batch_indices": ("Couldn't infer the batch indices fetched from your dataloader: `DataLoader`", UserWarning),
}


@pytest.mark.parametrize(
    ("resuming", "silenced"), [(False, {"leafspec", "srun", "batch_indices"}), (True, {"leafspec", "srun", "ckpt", "batch_indices"})],
)
def test_each_notice_is_silenced_only_where_asked(resuming, silenced):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_output(resuming=resuming):
            for message, category in NOTICES.values():
                warnings.warn(message, category, stacklevel=1)
            warnings.warn("something else the library says", UserWarning, stacklevel=1)
        for message, category in NOTICES.values():  # outside: all shown again
            warnings.warn(message, category, stacklevel=1)
    shown = [str(w.message) for w in seen]
    inside, outside = shown[: len(shown) - len(NOTICES)], shown[len(shown) - len(NOTICES):]
    assert inside == [m for k, (m, _) in NOTICES.items() if k not in silenced] + ["something else the library says"]
    assert outside == [m for m, _ in NOTICES.values()]


def test_tips_are_dropped_other_info_kept(caplog):
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    with caplog.at_level(logging.INFO, logger="lightning.pytorch.utilities.rank_zero"):
        with quiet_output(messages=(r"^val/self_knowledge_correlation is NaN: ",)):
            log.info("💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](...)")
            log.info("💡 Tip: For seamless cloud uploads and versioning, try installing [litmodels](...)")
            log.info("val/self_knowledge_correlation is NaN: 1 evaluated N")
            log.info("\nDetected KeyboardInterrupt, attempting graceful shutdown ...")  # the CLI says it in one line
            log.info("Restored all states from the checkpoint at x.ckpt")
        log.info("💡 Tip: For seamless cloud logging, outside")
    assert [r.getMessage() for r in caplog.records] == [
        "Restored all states from the checkpoint at x.ckpt", "💡 Tip: For seamless cloud logging, outside"]


def test_a_fit_and_its_resume_print_no_notice(tmp_path, capfd, caplog):
    from swar_bench.lightning_cli import main

    config = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"
    argv = ["fit", "--config", str(config), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--model.mechanism.init_args.n_layers=1", "--data.eval_examples=2", "--trainer.val_check_interval=2",
            f"--trainer.logger.init_args.save_dir={tmp_path}", "--trainer.enable_progress_bar=false"]
    with warnings.catch_warnings(record=True) as seen, caplog.at_level(logging.INFO):
        warnings.simplefilter("always")
        assert main([*argv, "--trainer.max_steps=2"]) == 0
        assert main([*argv, "--trainer.max_steps=3", "--ckpt_path=last"]) == 0
    out, err = capfd.readouterr()
    text = "\n".join([out, err, *(str(w.message) for w in seen), *(r.getMessage() for r in caplog.records)])
    assert "Restored all states from the checkpoint" in text  # the resume happened
    for notice in ("💡 Tip", "LeafSpec", "`srun` command is available", "exists and is not empty"):
        assert notice not in text


def test_the_srun_hint_is_silenced_for_a_ddp_trainer_too(tmp_path, monkeypatch):
    # Reported: with `srun` installed, a DDP fit still printed Lightning's srun hint (it was
    # silenced only for one process). Our commands launch both; docs/CLUSTER.md says how to use srun.
    import lightning.pytorch as pl

    srun = tmp_path / "bin" / "srun"
    srun.parent.mkdir()
    srun.write_text("#!/bin/sh\nexit 0\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{srun.parent}:{__import__('os').environ['PATH']}")
    monkeypatch.delenv("SLURM_NTASKS", raising=False)

    def hints(quiet: bool) -> list[str]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with quiet_output() if quiet else warnings.catch_warnings():
                pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False,
                           enable_checkpointing=False, default_root_dir=tmp_path)
        return [str(w.message) for w in seen if "`srun` command" in str(w.message)]

    assert len(hints(quiet=False)) == 1  # Lightning says it for this Trainer
    assert hints(quiet=True) == []


@settings(max_examples=40, deadline=None)
@given(name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), other=st.text(min_size=1, max_size=40))
def test_the_batch_indices_notice_of_any_dataloader_is_silenced_and_nothing_else(name, other):
    """Lightning's predict notice, for any dataloader type: dropped inside ``quiet_output`` and
    shown outside; any other warning text that is not it is shown inside too."""
    from hypothesis import assume

    notice = f"Couldn't infer the batch indices fetched from your dataloader: `{name}`"
    assume(not other.startswith("Couldn't infer the batch indices") and not any(
        other.startswith(p) for p in ("`isinstance(treespec", "The `srun` command", "Checkpoint directory")))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_output():
            warnings.warn(notice, UserWarning, stacklevel=1)
            warnings.warn(other, UserWarning, stacklevel=1)
        warnings.warn(notice, UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == [other, notice]


def _fit_notices(tmp_path: Path, dirpath: Path, caplog) -> list[str]:
    from swar_bench.lightning_cli import main

    config = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"
    argv = ["fit", "--config", str(config), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--model.mechanism.init_args.n_layers=1", "--data.eval_examples=2", "--trainer.max_steps=1",
            f"--trainer.logger.init_args.save_dir={tmp_path}", f"--checkpoint.dirpath={dirpath}",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert main(argv) == 0
    return [str(w.message) for w in seen if "exists and is not empty" in str(w.message)]


def test_a_new_checkpoint_folder_is_not_said_to_be_non_empty_for_our_lock(tmp_path, caplog):
    """fault: `fit --checkpoint.dirpath=NEW` warned "Checkpoint directory NEW exists and is not
    empty": the run's own lock file (.swar-bench.lock) was all it held. A folder holding a file of
    the user's keeps Lightning's warning."""
    assert _fit_notices(tmp_path / "a", tmp_path / "new", caplog) == []
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("mine")
    assert _fit_notices(tmp_path / "b", tmp_path / "kept", caplog) == [
        f"Checkpoint directory {tmp_path / 'kept'} exists and is not empty."]


@settings(max_examples=40, deadline=None)
@given(files=st.lists(st.sampled_from([".swar-bench.lock", "notes.txt", "x.ckpt", ".hidden"]), unique=True),
       spelling=st.sampled_from(["absolute", "relative", "slash", "dot"]), resuming=st.booleans())
def test_the_not_empty_notice_is_dropped_only_for_a_folder_holding_nothing_but_our_lock(files, spelling, resuming):
    import os
    import tempfile

    from swar_bench.utils.quiet import silence_run_notices

    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "ck"
        folder.mkdir()
        for name in files:
            (folder / name).write_text("")
        given_as = {"absolute": str(folder), "relative": os.path.relpath(folder), "slash": f"{folder}/",
                    "dot": f"{folder}/./"}[spelling]
        notice = f"Checkpoint directory {os.path.realpath(folder)} exists and is not empty."  # as Lightning says it
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with quiet_output():
                silence_run_notices(resuming=resuming, locked_folder=given_as)
                warnings.warn(notice, UserWarning, stacklevel=1)
                warnings.warn(other := notice.replace(" exists", "-other exists"), UserWarning, stacklevel=1)
        shown = [str(w.message) for w in seen]
    ours_only = set(files) <= {".swar-bench.lock"}
    if resuming:  # writing into the run's own folder is the point of resuming: every such notice goes
        assert shown == []
    else:  # only the notice about this folder, and only when our lock is all it holds
        assert shown == ([] if ours_only else [notice]) + [other]
