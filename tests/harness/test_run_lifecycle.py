"""Run lifecycle at the CLI: `fit --ckpt_path last` with nothing to resume says it starts from
scratch, an evaluation without a checkpoint says its weights are untrained, a mechanism without
trainable parameters is not fitted."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench import mechanisms
from swar_bench.lightning_cli import check_trainable, main
from swar_bench.mechanisms.registry import resolve_class
from swar_bench.module import TBPTTModule

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TINY = ["--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1"]
SMALL = ["--data.batch_size=2", "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2",
         "--model.tbptt_steps=1000", "--trainer.val_check_interval=2", "--trainer.enable_progress_bar=false",
         "--trainer.enable_model_summary=false"]


def _argv(tmp_path, command, *extra):
    return [command, "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}",
            *extra, *SMALL]


def test_fit_with_last_and_no_run_says_it_starts_from_scratch(tmp_path, capsys):
    # the reported command: no earlier run of this config and mechanism
    argv = _argv(tmp_path, "fit", "--model.mechanism=CausalAttention", *TINY, "--ckpt_path", "last", "--trainer.max_steps=1")
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    runs_of = tmp_path / "quickstart" / "CausalAttention"
    assert err == [f"swar-bench fit: no checkpoint to resume in {runs_of}/*/checkpoints; starting from scratch"]
    ckpt = runs_of / "version_0" / "checkpoints" / "last.ckpt"
    assert torch.load(ckpt, weights_only=False)["global_step"] == 1
    # the second time there is a run to resume: no notice, training goes on from step 1
    assert main([*argv[:-1], "--trainer.max_steps=2"]) == 0
    assert "starting from scratch" not in capsys.readouterr().err
    assert torch.load(ckpt, weights_only=False)["global_step"] == 2
    assert [p.name for p in runs_of.iterdir()] == ["version_0"]


def test_fit_with_last_and_an_empty_checkpoint_folder_says_it_starts_from_scratch(tmp_path, capsys):
    folder = tmp_path / "ckpts"
    argv = _argv(tmp_path, "fit", "--model.mechanism=GRU", *TINY, "--ckpt_path=last", f"--checkpoint.dirpath={folder}",
                 "--trainer.max_steps=1")
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"swar-bench fit: no checkpoint to resume in {folder}; starting from scratch"]
    assert torch.load(folder / "last.ckpt", weights_only=False)["global_step"] == 1


def test_test_without_a_checkpoint_warns_that_the_weights_are_untrained(tmp_path, capsys):
    assert main(_argv(tmp_path, "test", "--model.mechanism=GRU", *TINY)) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        ("swar-bench test: warning: no --ckpt_path, so GRU's randomly initialised (untrained) weights are evaluated; "
        "pass --ckpt_path last or <run>/checkpoints/last.ckpt to test a fit run")
    ]
    assert any(line.startswith("wrote ") for line in captured.out.splitlines())  # an untrained baseline still runs


def test_fit_of_the_oracle_is_refused_in_one_line(tmp_path, capsys):
    argv = ["fit", "--config", str(CONFIGS / "oracle.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_steps=1"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        (f"swar-bench: error: --config={CONFIGS / 'oracle.yaml'}: model.mechanism=swar_bench.mechanisms.oracle.Oracle has "
        "no trainable parameters: nothing to train; expected a learned mechanism, or `swar-bench test` (e.g. --config configs/oracle.yaml) to evaluate it")
    ]
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
    # testing it is what it is for: no warning about untrained weights
    test = ["test", *argv[1:-1], "--data.test_configs=[32]", "--data.eval_examples=2", "--trainer.enable_progress_bar=false",
            "--trainer.enable_model_summary=false"]
    assert main(test) == 0
    assert "warning" not in capsys.readouterr().err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(mechanisms.MECHANISMS),
    subcommand=st.sampled_from(["fit", "validate", "test", "predict"]),
    ckpt_path=st.sampled_from([None, "last", "runs/x/checkpoints/last.ckpt"]),
)
def test_only_learned_mechanisms_are_fitted_and_only_untrained_evaluations_warn(name, subcommand, ckpt_path, capsys):
    model = TBPTTModule(resolve_class(name)())
    trainable = any(p.requires_grad for p in model.mechanism.parameters())
    capsys.readouterr()
    try:
        check_trainable(model, subcommand, ckpt_path)
        refused = None
    except ValueError as err:
        refused = str(err)
    assert (refused is not None) is (subcommand == "fit" and not trainable)
    if refused:
        assert refused.startswith(f"--model.mechanism={type(model.mechanism).__module__}.{name} has no trainable parameters")
    warned = capsys.readouterr().err
    assert bool(warned) is (subcommand != "fit" and ckpt_path is None and trainable)
    if warned:
        assert warned.count("\n") == 1 and f"{name}'s randomly initialised (untrained) weights" in warned


# --- a run stopped before it produced anything leaves an existing run folder as it was ----------


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes()) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def event_bytes(tmp_path_factory):
    """Event files as a TensorBoardLogger writes them: at set-up (hyperparameters and hp_metric
    only; key False) and with a logged metric (key True)."""
    from lightning.pytorch.loggers import TensorBoardLogger

    made = {}
    for metric in (False, True):
        logger = TensorBoardLogger(tmp_path_factory.mktemp("tb"), name="", version=0)
        logger.log_hyperparams({"lr": 0.003})
        if metric:
            logger.log_metrics({"test/loss": 2.5}, step=0)
        logger.finalize("failed")
        (events,) = Path(logger.log_dir).glob("events.out.tfevents.*")
        made[metric] = events.read_bytes()
    return made


SETUP_ADDED = ("test_config.yaml", "hparams.yaml", "config.yaml", "events", ".tmp-x1answer_type_accuracy.csv", "newdir/")
RESULTS_ADDED = ("answer_type_accuracy.csv", "events_metric", "checkpoints/last.ckpt", "checkpoints/epoch=0-step=9.ckpt")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(earlier_test=st.booleans(), setup=st.sets(st.sampled_from(SETUP_ADDED)), results=st.sets(st.sampled_from(RESULTS_ADDED)))
def test_a_stopped_run_into_an_existing_folder_leaves_it_as_it_was(tmp_path, event_bytes, earlier_test, setup, results):
    import tempfile

    from swar_bench.harness import runs

    events = event_bytes
    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        run = Path(base) / "version_0"  # a fit's folder
        (run / "checkpoints").mkdir(parents=True)
        (run / "config.yaml").write_text("fit: config\n")
        (run / "hparams.yaml").write_text("lr: 0.003\n")
        (run / "events.out.tfevents.1.host.fit").write_bytes(events[True])
        (run / "checkpoints" / "last.ckpt").write_bytes(b"weights")
        if earlier_test:
            (run / "test_config.yaml").write_text("an earlier test\n")
            (run / "answer_type_accuracy.csv").write_text("an earlier report\n")
        was = _tree(run)
        before = runs.snapshot(run)
        # the stopped run writes into it
        for item in sorted(setup | results):
            if item.endswith("/"):
                (run / item).mkdir()
            elif item.startswith("events"):
                (run / f"events.out.tfevents.2.host.{item}").write_bytes(events[item == "events_metric"])
            else:
                (run / item).write_text(f"written by the stopped run: {item}\n")
        produced = bool(results)
        assert runs.holds_results(run, since=before) is produced
        assert runs.holds_results(run) is True  # the fit's own results are there either way
        assert runs.discard_stopped_additions(run, before) is not produced
        if produced:
            assert all(item.startswith("events") or (run / item).exists() for item in results)  # all is kept
        else:
            assert _tree(run) == was
        assert runs.discard_stopped_additions(run, None) is False


def test_the_reported_interrupted_test_leaves_the_fit_folder_as_it_was(tmp_path):
    """`swar-bench test --ckpt_path last` stopped by Ctrl-C before any report: exit 130, and the
    fit's folder holds what it held before (no test_config.yaml, no event file of the test)."""
    import signal
    import sys

    from harness.processes import child, stop

    fit = _argv(tmp_path, "fit", "--model.mechanism=GRU", *TINY, "--trainer.max_steps=1")
    assert main(fit) == 0
    run = tmp_path / "quickstart" / "GRU" / "version_0"
    was = _tree(run)
    argv = [sys.executable, "-m", "swar_bench.cli", "test", "--config", str(CONFIGS / "quickstart.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp_path}", "--model.mechanism=GRU", *TINY, "--ckpt_path", "last",
            "--data.test_configs=[1024,2048,4096]", "--data.eval_examples=100000", "--data.eval_batch_size=2",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
    with child(argv) as proc:
        for line in proc.stdout:  # the event: the test announces the fit's folder (its config is written)
            if "; run folder " in line:
                break
        assert proc.poll() is None, proc.communicate()
        assert line.strip().endswith(f"run folder {run}")
        assert (run / "test_config.yaml").is_file()
        err = stop(proc, signal.SIGINT)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "swar-bench: interrupted"
    assert _tree(run) == was


def test_the_demo_of_the_oracle_is_refused_in_one_line(tmp_path, capsys):
    from swar_bench.demo import main as demo_main

    code = demo_main(["--config", str(CONFIGS / "oracle.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}"])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        (f"swar-bench demo: error: --config={CONFIGS / 'oracle.yaml'}: model.mechanism=swar_bench.mechanisms.oracle.Oracle "
         "has no trainable parameters: "
         "nothing to train; expected a learned mechanism, or `swar-bench test` (e.g. --config configs/oracle.yaml) to "
         "evaluate it")
    ]
    assert list(tmp_path.iterdir()) == []


# --- the model summary shows the mechanism's FLOPs per token, not Lightning's 0 ------------------


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(record.getMessage())


def _summary_lines(run) -> list[str]:
    """The lines Lightning's model summary logs while ``run()`` runs."""
    from lightning.pytorch.callbacks import ModelSummary

    handler, logger = _Lines(), logging.getLogger(ModelSummary.__module__)
    logger.addHandler(handler)
    try:
        run()
    finally:
        logger.removeHandler(handler)
    return "\n".join(handler.text).strip().splitlines()


def test_the_fit_summary_shows_flops_per_token_instead_of_total_flops_0(tmp_path):
    argv = [a for a in _argv(tmp_path, "fit", "--model.mechanism=GRU", *TINY, "--trainer.max_steps=1")
            if a != "--trainer.enable_model_summary=false"]
    lines = _summary_lines(lambda: main(argv))
    assert lines[0].split("|")[1:] == [" Name      ", " Type       ", " Params ", " Mode "]  # no FLOPs column
    assert "Total Flops" not in "\n".join(lines)
    # GRU(d_model=8, n_layers=1): 2 * 1,288 matmul weights per token
    assert lines[-1] == "2.6 K     Forward FLOPs per token (flops_per_token)"


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(mechanisms.MECHANISMS))
def test_every_mechanism_summary_names_its_flops_per_token(name):
    from lightning.pytorch.utilities.model_summary import summarize
    from lightning.pytorch.utilities.model_summary.model_summary import get_human_readable_count

    from swar_bench.lightning_cli import FlopsPerTokenSummary

    model = TBPTTModule(resolve_class(name)())
    callback = FlopsPerTokenSummary()
    callback.flops_per_token = float(model.mechanism.flops_per_token)
    summary = summarize(model, max_depth=1)
    lines = _summary_lines(lambda: callback.summarize(
        summary._get_summary_data(), summary.total_parameters, summary.trainable_parameters, summary.model_size,
        summary.total_training_modes, summary.total_flops))
    assert "FLOPs |" not in lines[0] and not lines[0].rstrip().endswith("FLOPs")
    assert "Total Flops" not in "\n".join(lines)
    assert lines[-1] == f"{get_human_readable_count(int(model.mechanism.flops_per_token)):<10}Forward FLOPs per token (flops_per_token)"
    assert f"{get_human_readable_count(summary.total_parameters):<10}Total params" in lines


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    saved=st.sets(st.sampled_from(["version_0", "version_1", "slurm_7"])),
    forced=st.sampled_from([None, "slurm_7", "version_1"]),
    subcommand=st.sampled_from(["fit", "test"]),
)
def test_last_resumes_the_run_asked_for_or_says_there_is_none(tmp_path, capsys, saved, forced, subcommand):
    """`--ckpt_path last` over the runs of one config and mechanism: the newest last.ckpt (of the
    forced version, when one is given) is resumed; with none, fit says in one line that it starts
    from scratch and test refuses in one line."""
    import os
    import tempfile

    import pytest
    from jsonargparse import Namespace

    from swar_bench.lightning_cli import SwarBenchCLI

    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        root = Path(base) / "quickstart" / "GRU"
        for i, version in enumerate(sorted(saved)):
            ckpt = root / version / "checkpoints" / "last.ckpt"
            ckpt.parent.mkdir(parents=True)
            torch.save({"global_step": 3, "state_dict": {}}, ckpt)
            os.utime(ckpt, (1000 + i, 1000 + i))  # the newest is the last in sorted order
        logger = Namespace(class_path="lightning.pytorch.loggers.TensorBoardLogger",
                           init_args=Namespace(save_dir=base, name="quickstart", version=forced))
        cfg = Namespace(trainer=Namespace(logger=logger), ckpt_path="last", checkpoint=Namespace(dirpath=None),
                        model=Namespace(mechanism=Namespace(class_path="swar_bench.mechanisms.GRU")))
        want = forced if forced is not None else (max(saved) if saved else None)
        found = want in saved
        capsys.readouterr()
        cli = SwarBenchCLI.__new__(SwarBenchCLI)
        where = root / (forced or "*") / "checkpoints"
        if not found and subcommand == "test":
            with pytest.raises(ValueError, match=r"^--ckpt_path=last: no last\.ckpt in ") as err:
                cli._configure_run_folder(cfg, subcommand)
            assert str(err.value).startswith(f"--ckpt_path=last: no last.ckpt in {where}; ")
            return
        cli._configure_run_folder(cfg, subcommand)
        notice = capsys.readouterr().err
        if found:
            assert cfg.ckpt_path == str(root / want / "checkpoints" / "last.ckpt") and notice == ""
            assert str(logger.init_args.version) == want.removeprefix("version_")
        else:
            assert cfg.ckpt_path is None
            assert notice == f"swar-bench fit: no checkpoint to resume in {where}; starting from scratch\n"
