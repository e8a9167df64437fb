"""Run folders named after config and mechanism: a sweep keeps every run, test reports land in the
run they test, a forced version continues one TensorBoard run, the built model is printed."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.harness import runs
from swar_bench.lightning_cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = ["--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1", "--data.batch_size=2",
         "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2", "--model.tbptt_steps=1000",
         "--trainer.val_check_interval=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def _argv(tmp_path, command, *extra):
    return [command, "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}",
            *extra, *SMALL]


def test_a_sweep_keeps_every_run_and_test_reports_into_the_run(tmp_path, capsys):
    assert main(_argv(tmp_path, "fit", "--model.mechanism=GRU", "--trainer.max_steps=2")) == 0
    assert main(_argv(tmp_path, "fit", "--model.mechanism=LSTM", "--trainer.max_steps=2")) == 0
    assert main(_argv(tmp_path, "fit", "--model.mechanism=GRU", "--trainer.max_steps=1")) == 0
    out = capsys.readouterr().out
    gru, lstm = tmp_path / "quickstart" / "GRU", tmp_path / "quickstart" / "LSTM"
    assert sorted(p.name for p in gru.iterdir()) == ["version_0", "version_1"]
    assert sorted(p.name for p in lstm.iterdir()) == ["version_0"]
    assert torch.load(gru / "version_0/checkpoints/last.ckpt", weights_only=False)["global_step"] == 2
    assert torch.load(gru / "version_1/checkpoints/last.ckpt", weights_only=False)["global_step"] == 1
    assert torch.load(lstm / "version_0/checkpoints/last.ckpt", weights_only=False)["global_step"] == 2
    # the built model and its folder, one line per run
    lines = [ln for ln in out.splitlines() if ln.startswith("swar-bench fit: ")]
    assert lines[0] == ("swar-bench fit: GRU (swar_bench.mechanisms.recurrent.GRU): 1,608 params, state 32 bytes/sequence; "
                        f"run folder {gru / 'version_0'}")
    assert lines[1].startswith("swar-bench fit: LSTM (swar_bench.mechanisms.recurrent.LSTM): ")
    assert lines[1].endswith(f"state 64 bytes/sequence; run folder {lstm / 'version_0'}")

    # test a checkpoint: its reports go into that run's folder, each path printed
    ckpt = gru / "version_0" / "checkpoints" / "last.ckpt"
    assert main(_argv(tmp_path, "test", "--model.mechanism=GRU", f"--ckpt_path={ckpt}")) == 0
    out = capsys.readouterr().out
    wrote = [ln.removeprefix("wrote ") for ln in out.splitlines() if ln.startswith("wrote ")]
    assert str(gru / "version_0" / "answer_type_accuracy.csv") in wrote
    assert str(gru / "version_0" / "calibration.md") in wrote
    assert all(Path(p).is_file() and Path(p).parent == gru / "version_0" for p in wrote)
    assert (gru / "version_0" / "config.yaml").read_text() != (gru / "version_0" / "test_config.yaml").read_text()
    # `--ckpt_path last`: the newest run of this config and mechanism
    assert main(_argv(tmp_path, "test", "--model.mechanism=LSTM", "--ckpt_path=last")) == 0
    assert (lstm / "version_0" / "answer_type_accuracy.md").is_file()


def test_a_forced_version_continues_the_same_run(tmp_path, capsys):
    forced = ["--model.mechanism=GRU", "--trainer.logger.init_args.version=slurm_1234", "--ckpt_path=last"]
    assert main(_argv(tmp_path, "fit", *forced, "--trainer.max_steps=2")) == 0  # nothing to resume: fresh start
    assert main(_argv(tmp_path, "fit", *forced, "--trainer.max_steps=4")) == 0  # requeued: resumes
    run = tmp_path / "quickstart" / "GRU" / "slurm_1234"
    assert [p.name for p in run.parent.iterdir()] == ["slurm_1234"]
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 4
    assert len(list(run.glob("events.out.tfevents.*"))) == 2  # one TensorBoard run, two sessions
    out = capsys.readouterr().out
    assert out.count(f"run folder {run}") == 2


def test_test_with_last_and_no_run_is_one_line(tmp_path, capsys):
    assert main(_argv(tmp_path, "test", "--model.mechanism=GRU", "--ckpt_path=last")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [(f"swar-bench: error: --ckpt_path=last: no last.ckpt in {tmp_path}/quickstart/GRU/*/checkpoints; "
                   "expected a fit run of this config and mechanism first, or a checkpoint file")]
    assert not (tmp_path / "quickstart").exists()


def test_both_swap_routes_build_the_same_model(capsys):
    """`--model.mechanism=GRU` starts from GRU's defaults (not the quickstart's n_layers: 1), as
    `--config configs/mechanisms/gru.yaml` does."""
    import yaml

    shown = []
    for route in (["--model.mechanism", "GRU"], ["--config", str(CONFIGS / "mechanisms" / "gru.yaml")]):
        assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), *route, "--print_config"]) == 0
        shown.append(yaml.safe_load(capsys.readouterr().out)["model"]["mechanism"])
    assert shown[0] == shown[1]
    assert shown[0]["init_args"] == {"vocab_size": 40, "d_model": 64, "n_layers": 2, "mlp_ratio": 4}


def test_each_mechanism_config_is_its_class_at_the_defaults():
    """configs/mechanisms/<snake_name>.yaml sets only the class's defaults, so both swap routes agree
    for every mechanism (a variant such as ..._learned.yaml has its own name)."""
    import re

    import yaml

    from swar_bench.mechanisms.registry import class_defaults, resolve_class

    checked = 0
    for config in sorted((CONFIGS / "mechanisms").glob("*.yaml")):
        entry = yaml.safe_load(config.read_text())["model"]["mechanism"]
        name = entry["class_path"].rsplit(".", 1)[-1]
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
        if config.stem.replace("_", "") != snake.replace("_", ""):
            continue
        defaults = class_defaults(resolve_class(entry["class_path"]))
        differ = {k: (v, defaults.get(k)) for k, v in (entry.get("init_args") or {}).items() if defaults.get(k) != v}
        assert not differ, f"{config.name}: (config, default) {differ}"
        checked += 1
    assert checked >= 10


@settings(max_examples=50, deadline=None)
@given(name=st.text(string.ascii_letters + "_/", max_size=20), mech=st.text(string.ascii_letters, min_size=1, max_size=12))
def test_run_name_is_idempotent_and_names_the_mechanism(name, mech):
    once = runs.run_name(name, mech)
    assert runs.run_name(once, mech) == once
    assert mech in once


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.integers(0, 10**6), st.text(string.ascii_letters + "_-", min_size=1, max_size=12)))
def test_version_folder_round_trips(version):
    if isinstance(version, str) and runs.VERSION_RE.fullmatch(version):
        return
    assert runs.parse_version(runs.version_folder(version)) == version


# --- a run stopped before it produced anything leaves no folder behind -----------------------


@pytest.fixture(scope="module")
def event_files(tmp_path_factory):
    """Bytes of the TensorBoard event files a TensorBoardLogger writes: when it is created (the
    file_version record alone), at set-up (the hyperparameters and the placeholder hp_metric),
    and with a logged metric."""
    from lightning.pytorch.loggers import TensorBoardLogger

    made = {}
    for kind in ("header", "setup", "metric"):
        logger = TensorBoardLogger(tmp_path_factory.mktemp(kind), name="", version=0)
        _ = logger.experiment
        if kind != "header":
            logger.log_hyperparams({"lr": 0.003})
        if kind == "metric":
            logger.log_metrics({"train/loss": 2.5}, step=19)
        logger.finalize("failed")
        (events,) = Path(logger.log_dir).glob("events.out.tfevents.*")
        made[kind] = events.read_bytes()
    return made


SETUP_ITEMS = ("config.yaml", "test_config.yaml", "hparams.yaml", "events_setup", "events_header", "checkpoints/",
               ".tmp-x1last.ckpt")
RESULT_ITEMS = ("events_metric", "checkpoints/last.ckpt", "answer_type_accuracy.csv", "metrics.csv", "notes/config.yaml")


def _write_item(folder: Path, item: str, event_files) -> None:
    if item == "checkpoints/":
        (folder / "checkpoints").mkdir(exist_ok=True)
    elif item.startswith("events_"):
        kind = item.removeprefix("events_")
        (folder / f"events.out.tfevents.1.host.{kind}").write_bytes(event_files[kind])
    else:
        (folder / item).parent.mkdir(parents=True, exist_ok=True)
        (folder / item).write_text("x")


def test_the_reported_interrupted_fit_folder_holds_nothing(tmp_path, event_files):
    # The reported example: fit stopped before its first checkpoint left version_0 holding
    # config.yaml, hparams.yaml and an event file with the hyperparameters only.
    run = tmp_path / "runs" / "quickstart" / "GRU" / "version_0"
    run.mkdir(parents=True)
    for item in ("config.yaml", "hparams.yaml", "events_setup"):
        _write_item(run, item, event_files)
    assert runs.holds_results(run) is False
    assert runs.discard_empty_run(run, tmp_path / "runs") is True
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    setup=st.sets(st.sampled_from(SETUP_ITEMS)),
    results=st.sets(st.sampled_from(RESULT_ITEMS)),
    depth=st.integers(0, 3),
    neighbour=st.booleans(),
)
def test_a_stopped_run_folder_goes_only_when_it_holds_nothing_produced(tmp_path, event_files, setup, results, depth, neighbour):
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        base = Path(base)
        parts = ["runs", "quickstart", "GRU"][:depth]
        run = base.joinpath(*parts, "version_0")
        created = runs.first_missing(run)
        assert created == (base / parts[0] if parts else run)
        run.mkdir(parents=True)
        if neighbour and depth:  # another run wrote beside this one meanwhile
            (run.parent / "version_1").mkdir()
        for item in sorted(setup | results):
            _write_item(run, item, event_files)
        assert runs.holds_results(run) is bool(results)
        removed = runs.discard_empty_run(run, created)
        assert removed is not bool(results)
        assert run.exists() is bool(results)
        if removed:  # the folders this run created go with it, unless another run wrote there
            assert created.exists() is (neighbour and depth > 0)
            assert sorted(p.name for p in base.iterdir()) == ([parts[0]] if neighbour and depth else [])
        # a folder the run did not create (a resumed run) is never removed
        run.mkdir(parents=True, exist_ok=True)
        assert runs.discard_empty_run(run, None) is False and run.exists()


def _fit_until_announced(save_dir: Path, signum: int, *extra: str) -> tuple[int, str]:
    """Start `swar-bench fit` in a child process, wait for its announced run folder (the
    logger has written config.yaml and its event file), send ``signum``; (exit status, stderr)."""
    import sys

    from harness.processes import child, stop

    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", str(CONFIGS / "quickstart.yaml"),
            "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
            "--trainer.max_steps=100000", f"--trainer.logger.init_args.save_dir={save_dir}",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", *extra]
    with child(argv) as proc:
        for line in proc.stdout:  # the event: the run announces its folder (ends at EOF if the run died)
            if "; run folder " in line:
                break
        assert proc.poll() is None, proc.communicate()
        assert (save_dir / "quickstart" / "GRU" / "version_0" / "config.yaml").is_file()
        err = stop(proc, signum)
    return proc.returncode, err


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_fit_stopped_before_it_produced_anything_leaves_no_folder(tmp_path, signame):
    import signal

    signum = getattr(signal, signame)
    # no checkpoint and no logged step before step 100,000: whenever the signal lands, nothing was produced
    code, err = _fit_until_announced(tmp_path / "runs", signum, "--trainer.val_check_interval=100000",
                                     "--trainer.log_every_n_steps=100000")
    assert code == 128 + signum, err[-2000:]
    assert err.strip().splitlines()[-1] == ("swar-bench: interrupted" if signame == "SIGINT" else "swar-bench: terminated (SIGTERM)")
    assert list(tmp_path.iterdir()) == []  # runs/ was created by this run and goes with it


def _nan_fit(tmp_path, after: int, *extra: str) -> list[str]:
    """Files left by a fit whose loss turns non-finite at step ``after`` (exit status 1)."""
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--model.mechanism=harness.nan_mechanism.NaNAfter", f"--model.mechanism.init_args.after={after}",
            "--model.tbptt_steps=1000", "--data.batch_size=2", "--trainer.max_steps=10",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", *extra]
    assert main(argv) == 1
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())


def test_a_fit_ended_by_an_error_keeps_its_folder_only_when_it_produced_something(tmp_path):
    # a non-finite loss at the first step, nothing logged or saved: no folder
    assert _nan_fit(tmp_path / "a", 0, "--trainer.val_check_interval=1000", "--trainer.log_every_n_steps=1000") == []
    assert not (tmp_path / "a").exists()
    # three steps logged before the loss turned non-finite, no checkpoint: the log is kept
    kept = _nan_fit(tmp_path / "b", 3, "--trainer.val_check_interval=1000", "--trainer.log_every_n_steps=1")
    assert "quickstart/NaNAfter/version_0/config.yaml" in kept
    assert any(p.startswith("quickstart/NaNAfter/version_0/events.out.tfevents.") for p in kept)
    assert runs.holds_results(tmp_path / "b" / "quickstart" / "NaNAfter" / "version_0")


# --- a checkpoint inside a run folder anywhere: test / validate report into that folder ---------


def test_the_reported_test_of_a_run_under_another_save_dir_reports_into_that_run(tmp_path, capsys, monkeypatch, recwarn):
    """The reported commands: fit with --trainer.logger.init_args.save_dir=/tmp/r (its run
    version_1), then test its checkpoint with the config's own save_dir (runs): the reports go
    into /tmp/r/quickstart/LSTM/version_1, nothing appears under runs, no Lightning warning. A
    validate of the same checkpoint spelled relative (the fit stored an absolute dirpath) too."""
    monkeypatch.chdir(tmp_path)  # the config's save_dir `runs` is relative to the working folder
    config = ["--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=LSTM"]
    assert main(["fit", *config, f"--trainer.logger.init_args.save_dir={tmp_path / 'r'}",
                 "--trainer.logger.init_args.version=version_1", "--trainer.max_steps=1", *SMALL]) == 0
    run = tmp_path / "r" / "quickstart" / "LSTM" / "version_1"
    capsys.readouterr()
    for command, ckpt, shown in (("test", run / "checkpoints" / "last.ckpt", run),
                                 ("validate", "r/quickstart/LSTM/version_1/checkpoints/last.ckpt", "r/quickstart/LSTM/version_1")):
        assert main([command, *config, "--ckpt_path", str(ckpt), *SMALL]) == 0
        out = capsys.readouterr().out
        announced = [ln for ln in out.splitlines() if ln.startswith(f"swar-bench {command}: ")]
        assert len(announced) == 1 and announced[0].endswith(f"; run folder {shown}")
        assert (run / f"{command}_config.yaml").is_file()
    assert not (tmp_path / "runs").exists()
    assert [p.name for p in run.parent.iterdir()] == ["version_1"]
    wrote = {p.name for p in run.iterdir()}
    assert {"answer_type_accuracy.csv", "calibration.md", "config.yaml", "hparams.yaml"} <= wrote
    assert [str(w.message) for w in recwarn if "dirpath has changed" in str(w.message)] == []


SEGMENT = st.text(string.ascii_letters + string.digits + "_-.", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    above=st.lists(SEGMENT, max_size=3),
    name=st.lists(SEGMENT, max_size=2),
    version=st.one_of(st.integers(0, 99), SEGMENT),
    marker=st.sampled_from(["hparams.yaml", "metrics.csv", "events.out.tfevents.1.host.0", None]),
    ckpt=st.sampled_from(["last.ckpt", "epoch=0-step=5.ckpt", "hpc_ckpt_1.ckpt"]),
    relative=st.booleans(),
    configured=st.sampled_from(["same", "other", "none"]),
)
def test_a_checkpoint_in_a_run_folder_anywhere_names_that_folder(tmp_path, monkeypatch, above, name, version, marker, ckpt,
                                                                 relative, configured):
    """Any save_dir, name, version and nesting: a checkpoint in ``<run>/checkpoints/`` with a
    logger's file beside it names ``<run>``, and the logger's (save_dir, name, version) give back
    ``<run>`` as Lightning joins them (the configured name kept when the run lies under it); a
    checkpoint without a logger's file beside it (a --checkpoint.dirpath of its own) names none."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as base:
        monkeypatch.chdir(base)
        root = Path(*above, *name) if (above or name) else Path()
        run = root / runs.version_folder(version)
        (run / "checkpoints").mkdir(parents=True)
        (run / "checkpoints" / ckpt).write_bytes(b"x")
        (run / "config.yaml").write_text("x")  # LightningCLI's copy alone does not make a run folder
        if marker:
            (run / marker).write_text("x")
        path = (run if relative else Path(base) / run) / "checkpoints" / ckpt
        found = runs.run_folder_of_checkpoint(path)
        if marker is None:
            assert found is None
            return
        assert found == path.parent.parent
        name_given = {"same": "/".join(name), "other": "elsewhere/GRU", "none": ""}[configured]
        save_dir, logger_name, logger_version = runs.logger_location(found, name_given)
        assert logger_version == version
        assert Path(os.path.join(save_dir, logger_name, runs.version_folder(logger_version))) == found
        if configured == "same" and name and above:
            assert (save_dir, logger_name) == (str(path.parents[2 + len(name)]), "/".join(name))
        runs.check_path_component(logger_version, "--trainer.logger.init_args.version")
        runs.check_path_component(logger_name, "--trainer.logger.init_args.name", nested=True)


@pytest.mark.parametrize(("option", "value"), [("version", "../../../escape"), ("version", "a/b"), ("version", ".."),
                                                ("name", "../up"), ("name", "/abs/GRU"), ("name", "quickstart/../..")])
def test_a_version_or_name_outside_save_dir_is_refused_in_one_line(tmp_path, capsys, option, value):
    save_dir = tmp_path / "save"
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU",
            f"--trainer.logger.init_args.save_dir={save_dir}", f"--trainer.logger.init_args.{option}={value}",
            "--trainer.max_steps=1", *SMALL]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"swar-bench: error: --trainer.logger.init_args.{option}={value}: not inside ")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["a", "GRU", "version_0", ".", "..", "", "x.y"]), min_size=1, max_size=4), st.booleans())
def test_only_values_that_stay_inside_save_dir_pass(parts, nested):
    """A version passes when it is one folder name, a name when each of its parts is one (a
    trailing '/' aside): exactly the values that ``<save_dir>/<value>`` keeps as written inside
    ``save_dir`` (no '..', '.', empty part or leading '/')."""
    import os

    value = "/".join(parts)
    text = value.rstrip("/") if nested else value
    spelled = "/save/" + text
    keeps = text != "" and not text.startswith("/") and os.path.normpath(spelled) == spelled and (nested or "/" not in text)
    try:
        runs.check_path_component(value, "--x", nested=nested)
    except ValueError as err:
        assert str(err).startswith(f"--x={value}: not inside ")
        assert not keeps and not (nested and value == "")
    else:
        assert keeps or (nested and value == "")


@pytest.mark.parametrize("option", ["name", "version"])
def test_the_reported_too_long_logger_name_is_refused_before_anything_runs(tmp_path, capsys, option):
    """Fault: a logger name of 300 characters failed with `File name too long` after the model was
    built, leaving save_dir behind."""
    save_dir = tmp_path / "save"
    value = "a" * 300
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU",
            f"--trainer.logger.init_args.save_dir={save_dir}", f"--trainer.logger.init_args.{option}={value}",
            "--trainer.max_steps=1", *SMALL]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [(f"swar-bench: error: --trainer.logger.init_args.{option}={'a' * 60}... (300 characters): a folder "
                    "name of 300 bytes; expected names of at most 255 bytes (the file system's limit)")]
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "é", "字"]), st.integers(1, 300)), min_size=1, max_size=3),
       st.booleans())
def test_a_part_longer_than_the_file_systems_limit_is_refused_by_its_bytes(parts, nested):
    """The kind: any name (nested parts) or version whose some part is longer than 255 bytes as
    the file system counts them (UTF-8: `é` is 2 bytes, `字` 3), and only those, is refused in one
    line giving that part's bytes."""
    names = [char * count for char, count in parts]
    value = "/".join(names) if nested else names[0]
    sizes = [len(n.encode()) for n in (names if nested else names[:1])]
    try:
        runs.check_path_component(value, "--x", nested=nested)
    except ValueError as err:
        first = next(s for s in sizes if s > 255)
        assert str(err) == (f"--x={value[:60]}... ({len(value)} characters): a folder name of {first} bytes; "
                            "expected names of at most 255 bytes (the file system's limit)")
    else:
        assert max(sizes) <= 255
