"""Run folders named after config and mechanism: a sweep keeps every run, test reports land in the
run they test, a forced version continues one TensorBoard run, the built model is printed."""

from __future__ import annotations

import string
from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench import runs
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
