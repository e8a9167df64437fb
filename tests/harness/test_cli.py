"""LightningCLI: one-line config errors, the Oracle config end to end, mechanism swap and resume."""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _error_line(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    err = [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]
    return code, err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["fit", "--model.mechanism=NoSuchMixer"], r"--model\.mechanism=NoSuchMixer: unknown mechanism; expected one of .*GatedDeltaNet"),
        (["fit", "--model.mechanism=GRU", "--model.tbptt_steps=0"], r"tbptt_steps=0 is invalid; expected an integer >= 1"),
        (["fit", "--model.mechanism=GRU", "--data.test_configs=[32,100]"], r"^swar-bench: error: --data\.test_configs=\[32,100\]: 100 is not an allowed N; expected one of 32, 64,"),
        (["test", "--model.mechanism=GRU", "--data.eval_batch_size=-3"], r"eval_batch_size=-3 is invalid; expected a positive integer$"),
        (["test", "--model.mechanism=GRU", "--ckpt_path=/nonexistent/x.ckpt"], r"^swar-bench: error: --ckpt_path=/nonexistent/x\.ckpt: no such file; expected a checkpoint file written by swar-bench fit"),
        (["fit", "--model.mechanism=GRU", "--model.grad_clip=-1"], r"grad_clip=-1\.0 is invalid; expected a max gradient norm"),
        (["fit", "--model.mechanism=GRU", "--trainer.max_steps=-5"], r"^swar-bench: error: --trainer\.max_steps=-5: expected -1 \(no limit\) or an integer >= 1$"),
        (["fit", "--model.mechanism=GRU", "--trainer.max_time=abc"], r"^swar-bench: error: --trainer\.max_time=abc: expected DD:HH:MM:SS"),
        (["fit", "--model.mechanism=GRU", "--trainer.val_check_interval=0"],
         r"--trainer\.val_check_interval=0: expected training batches between validations"),
        (["test", "--model.mechanism=GRU", "--ckpt_path", str(CONFIGS)],
         r"--ckpt_path=.*configs: a folder, not a checkpoint; expected a \.ckpt file"),
    ],
)
def test_bad_config_is_one_line(capsys, argv, expected):
    code, err = _error_line(capsys, argv)
    assert code == 2
    assert len(err) == 1
    import re

    assert re.search(expected, err[0]), err[0]


def test_empty_config_file_is_named_in_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing set yet\n")
    code, err = _error_line(capsys, ["fit", "--config", str(empty)])
    assert code == 2
    assert err == [f"swar-bench: error: --config={empty}: the file is empty; expected a YAML mapping of options such as configs/quickstart.yaml"]


def test_config_that_is_not_a_mapping_is_named(tmp_path, capsys):
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n")
    code, err = _error_line(capsys, ["fit", f"--config={listed}"])
    assert code == 2
    assert err == [f"swar-bench: error: --config={listed}: holds a YAML list, not a mapping of options; expected e.g. configs/quickstart.yaml"]


def test_malformed_config_file_is_named_with_its_line(tmp_path, capsys):
    bad = tmp_path / "malformed.yaml"
    bad.write_text("model: [\n  bad")
    code, err = _error_line(capsys, ["fit", "--config", str(bad)])
    assert code == 2
    assert err == [
        (
            f"swar-bench: error: --config={bad}: not valid YAML (expected ',' or ']', but got '<stream end>' "
            "at line 2, column 6); expected a YAML mapping of options such as configs/quickstart.yaml"
        )
    ]


_VALID_LINE = st.from_regex(r"[a-z]{1,8}: [0-9]{1,3}", fullmatch=True)
_BROKEN_LINE = st.sampled_from(["key: [1, 2", "key: {a: 1", "key: 'open", 'key: "open', "key: : :", "- a\nb: 1", "\tkey: 1"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.lists(_VALID_LINE, max_size=4), broken=_BROKEN_LINE, after=st.lists(_VALID_LINE, max_size=3))
def test_any_malformed_config_is_one_line_naming_file_and_line(tmp_path, capsys, before, broken, after):
    import yaml

    text = "\n".join([*before, broken, *after]) + "\n"
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as err:
        line = err.problem_mark.line + 1
    else:
        assume(False)
    bad = tmp_path / "malformed.yaml"
    bad.write_text(text)
    for command in ("fit", "test"):
        code, err = _error_line(capsys, [command, f"--config={bad}"])
        assert code == 2
        assert len(err) == 1
        assert err[0].startswith(f"swar-bench: error: --config={bad}: not valid YAML (")
        assert f" at line {line}, column " in err[0]
    from swar_bench.demo import main as demo_main

    code = demo_main(["--config", str(bad)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"swar-bench demo: error: --config={bad}: not valid YAML (") and f" at line {line}, column " in err[0]


def test_resume_with_another_optimizer_layout_names_the_cause(tmp_path, capsys):
    base = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--data.eval_examples=2", "--trainer.val_check_interval=2", *_common(tmp_path)]
    assert main([*base, "--trainer.max_steps=2"]) == 0
    capsys.readouterr()
    code, err = _error_line(capsys, [*base, "--trainer.max_steps=4", "--ckpt_path", "last", "--model.weight_decay=0"])
    assert code == 2 and len(err) == 1
    assert "a resumed fit keeps the checkpoint's optimizer and schedule" in err[0]
    assert "--model.weight_decay=0.0 (trained with 0.01)" in err[0]


@pytest.mark.parametrize("option, shown", [("--model.weight_decay=0.5", "--model.weight_decay=0.5 (trained with 0.01)"),
                                           ("--model.lr=0.5", "--model.lr=0.5 (trained with 0.003)")])
def test_resume_with_another_lr_or_weight_decay_is_refused_not_ignored(tmp_path, capsys, option, shown):
    # Reported: the optimizer's restored state kept the old value while the run's hparams recorded the new one
    base = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
            "--data.eval_examples=2", "--trainer.val_check_interval=2", *_common(tmp_path)]
    assert main([*base, "--trainer.max_steps=2"]) == 0
    before = (tmp_path / "ckpt" / "last.ckpt").read_bytes()
    capsys.readouterr()
    code, err = _error_line(capsys, [*base, "--trainer.max_steps=4", "--ckpt_path", "last", option])
    assert code == 2 and len(err) == 1 and shown in err[0], err
    assert (tmp_path / "ckpt" / "last.ckpt").read_bytes() == before  # nothing trained or written


_hp = st.fixed_dictionaries({"lr": st.floats(1e-5, 1.0), "weight_decay": st.floats(0, 1.0),
                             "betas": st.tuples(st.floats(0, 0.99), st.floats(0, 0.999)),
                             "warmup_steps": st.integers(0, 100), "max_steps": st.integers(1, 10_000),
                             "min_lr_ratio": st.floats(0, 1)})


@settings(max_examples=60, deadline=None)
@given(saved=_hp, now=_hp)
def test_a_resume_is_refused_exactly_when_an_optimizer_option_changed(saved, now):
    from swar_bench.lightning_cli import RESUME_FIXED, resumed_optimizer_changes

    changed = resumed_optimizer_changes(now, saved)
    differs = [k for k in RESUME_FIXED if now[k] != saved[k]]
    assert (changed is None) == (not differs)
    for key in differs:
        assert f"--model.{key}=" in changed
    # the same values as a list (a config file) and a tuple (the checkpoint) are no change
    assert resumed_optimizer_changes({**saved, "betas": list(saved["betas"])}, saved) is None


def test_vocabulary_smaller_than_the_task_stops_before_anything_is_written(tmp_path, capsys):
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism.init_args.vocab_size=10",
            "--trainer.max_steps=2", *_common(tmp_path)]
    code, err = _error_line(capsys, argv)
    assert code == 2
    assert err == [("swar-bench: error: vocab_size=10 of GatedDeltaNet is too small for passkey_swar; expected >= 40 "
                    "(8 specials + n_keys + n_values)")]
    assert list(tmp_path.iterdir()) == []


def test_evaluating_last_without_a_checkpoint_is_one_line(tmp_path, capsys):
    empty = tmp_path / "no_checkpoints_here"
    code, err = _error_line(capsys, ["test", "--model.mechanism=GRU", "--ckpt_path=last", f"--checkpoint.dirpath={empty}"])
    assert code == 2 and len(err) == 1
    assert err[0] == f"swar-bench: error: --ckpt_path=last: no last*.ckpt in --checkpoint.dirpath={empty}; expected the folder of a fit run, or a checkpoint file"


def test_a_file_that_is_not_a_checkpoint_is_one_line(tmp_path, capsys):
    bogus = tmp_path / "notes.ckpt"
    bogus.write_text("not a checkpoint")
    code, err = _error_line(capsys, ["test", "--model.mechanism=GRU", f"--ckpt_path={bogus}"])
    assert code == 2 and len(err) == 1
    assert "not a checkpoint file torch can read" in err[0] and "`" not in err[0]


def test_errors_come_without_the_args_warning_or_the_seed_banner(capsys, caplog, monkeypatch):
    import warnings

    argv = ["fit", "--model.mechanism=GRU", "--model.tbptt_steps=0"]
    monkeypatch.setattr("sys.argv", ["swar-bench", *argv])  # what the console script sees
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO):
        warnings.simplefilter("always")
        code, err = _error_line(capsys, argv)
    assert code == 2 and len(err) == 1
    assert not [w for w in caught if "args parameter is intended" in str(w.message)]
    assert not [r for r in caplog.records if r.getMessage().startswith("Seed set to")]


def test_output_folder_that_cannot_be_created_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    argv = ["fit", "--model.mechanism=GRU", f"--trainer.logger.init_args.save_dir={blocker}/logs",
            f"--checkpoint.dirpath={tmp_path / 'ckpt'}"]
    code, err = _error_line(capsys, argv)
    assert code == 2
    assert err == [f"swar-bench: error: --trainer.logger.init_args.save_dir={blocker}/logs: the folder cannot be created ({blocker} is not a folder); expected a folder path that is not under a file"]
    argv = ["fit", "--model.mechanism=GRU", f"--trainer.logger.init_args.save_dir={tmp_path}", f"--checkpoint.dirpath={blocker}/ck"]
    code, err = _error_line(capsys, argv)
    assert code == 2 and err == [f"swar-bench: error: --checkpoint.dirpath={blocker}/ck: the folder cannot be created ({blocker} is not a folder); expected a folder path that is not under a file"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing written, no probe left


def test_missing_data_source_ends_before_the_logger_writes(tmp_path, capsys):
    argv = ["fit", "--model.mechanism=GRU", f"--data.source={tmp_path / 'nowhere'}", *_common(tmp_path / "out")]
    code, err = _error_line(capsys, argv)
    assert code == 2 and len(err) == 1 and "nowhere" in err[0], err
    assert list(tmp_path.iterdir()) == []  # no log folder, no config.yaml, no checkpoint folder


def test_check_output_folder_leaves_nothing(tmp_path):
    from swar_bench.lightning_cli import check_output_folder

    check_output_folder(tmp_path / "x" / "y", "--flag")
    check_output_folder(tmp_path, "--flag")
    assert list(tmp_path.iterdir()) == []


def test_without_a_logger_everything_lands_under_runs(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    argv = ["test", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32]", "--data.eval_examples=4",
            "--trainer.logger=false", "--trainer.enable_progress_bar=false"]
    with caplog.at_level(logging.INFO):
        assert main(argv) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    written = {p.name for p in (tmp_path / "runs").iterdir()}
    assert {"test_config.yaml", "answer_type_accuracy.csv", "calibration.md"} <= written
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("Seed set to")] == ["Seed set to 0"]


def _common(tmp_path):
    return [
        f"--trainer.logger.init_args.save_dir={tmp_path}", f"--checkpoint.dirpath={tmp_path / 'ckpt'}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
    ]


def test_oracle_config_scores_one_everywhere(tmp_path):
    argv = ["test", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32,128]", "--data.eval_examples=24",
            "--data.eval_batch_size=8", *_common(tmp_path)]
    assert main(argv) == 0
    (table,) = tmp_path.glob("oracle/Oracle/version_*/answer_type_accuracy.csv")
    rows = list(csv.DictReader(table.open()))
    assert {r["n_writes"] for r in rows} == {"32", "128"}
    checked = [r for r in rows if int(r["count"]) > 0]
    assert {r["answer_type"] for r in checked} >= {"ar_valid", "ar_expired", "ar_expired_stale", "passkey", "passkey_exact"}
    assert all(float(r["accuracy"]) == 1.0 for r in checked)


def test_mechanism_swap_and_resume_from_last(tmp_path, caplog):
    base = ["--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=swar_bench.mechanisms.GRU",
            "--model.mechanism.init_args.d_model=8", "--model.mechanism.init_args.n_layers=1",
            "--data.train_configs=[32]", "--data.batch_size=2", "--data.val_configs=[32]", "--data.eval_examples=2",
            "--model.tbptt_steps=1000", "--trainer.val_check_interval=2", *_common(tmp_path)]
    assert main(["fit", *base, "--trainer.max_steps=2"]) == 0
    last = tmp_path / "ckpt" / "last.ckpt"
    first = torch.load(last, weights_only=False)
    assert first["global_step"] == 2
    assert first["hyper_parameters"]["tbptt_steps"] == 1000
    gru = __import__("swar_bench.mechanisms", fromlist=["GRU"]).GRU(d_model=8, n_layers=1)
    assert sorted(first["state_dict"]) == sorted(f"mechanism.{k}" for k in gru.state_dict())
    assert first["mechanism_class"] == "swar_bench.mechanisms.recurrent.GRU"
    with caplog.at_level(logging.INFO):
        assert main(["fit", *base, "--trainer.max_steps=4", "--ckpt_path", "last"]) == 0
    assert any("Restored all states from the checkpoint" in r.getMessage() for r in caplog.records)
    second = torch.load(last, weights_only=False)
    assert second["global_step"] == 4
    stream = second["PasskeySwarDataModule"]["train_stream"]
    assert stream["consumed"] == 4 and stream["counters"] == {32: stream["issued"]}
    assert stream["issued"] - stream["consumed"] == len(stream["pending"])
    # the resumed run replaced last.ckpt in place (no last-v1.ckpt beside it)
    assert sorted(p.name for p in last.parent.glob("last*.ckpt")) == ["last.ckpt"]
    # a new run into the same folder would destroy this run: refused (tests/harness/test_fresh_start.py)
    assert main(["fit", *base, "--trainer.max_steps=1"]) == 2
    assert torch.load(last, weights_only=True)["global_step"] == 4


def test_checkpoint_of_another_mechanism_is_one_line(tmp_path, capsys):
    base = ["--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism.init_args.d_model=8",
            "--model.mechanism.init_args.n_layers=1", "--data.train_configs=[32]", "--data.batch_size=2",
            "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2", "--model.tbptt_steps=1000",
            "--trainer.val_check_interval=2", *_common(tmp_path)]

    def with_mechanism(name: str, *extra: str) -> list[str]:  # init args after the mechanism are kept
        return [*base[:2], f"--model.mechanism={name}", *base[2:], *extra]

    assert main(["fit", *with_mechanism("GRU", "--trainer.max_steps=1")]) == 0
    last = tmp_path / "ckpt" / "last.ckpt"
    capsys.readouterr()
    expected = (
        rf"^swar-bench: error: --ckpt_path={last}: the checkpoint's weights \(it was trained with "
        r"swar_bench\.mechanisms\.recurrent\.GRU\) do not fit the configured mechanism swar_bench\.mechanisms\.recurrent\.LSTM: "
        r"\d+ missing, \d+ unexpected and \d+ differently shaped tensor\(s\)"
    )
    import re

    # a file path: found before the Trainer or the logger exist
    versions = sorted(tmp_path.glob("quickstart/*/version_*"))
    code, err = _error_line(capsys, ["test", *with_mechanism("LSTM", f"--ckpt_path={last}")])
    assert code == 2 and len(err) == 1 and re.search(expected, err[0]), err
    assert sorted(tmp_path.glob("quickstart/*/version_*")) == versions
    # "last", resolved by Lightning: the failed strict load becomes the same one line
    code, err = _error_line(capsys, ["fit", *with_mechanism("LSTM", "--trainer.max_steps=2", "--ckpt_path=last")])
    assert code == 2 and len(err) == 1 and re.search(expected, err[0]), err


def test_non_finite_loss_ends_the_cli_with_one_line(tmp_path, capsys):
    argv = ["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=harness.nan_mechanism.NaNAfter",
            "--model.mechanism.init_args.after=2", "--model.tbptt_steps=1000", "--data.batch_size=2",
            "--data.val_configs=[32]", "--data.eval_examples=2", "--trainer.val_check_interval=1",
            "--checkpoint.every_n_train_steps=1", *_common(tmp_path)]
    code, err = _error_line(capsys, argv)
    assert code == 1
    assert len(err) == 1 and "non-finite training loss (nan) at global step 2" in err[0]
    # checkpoints exist up to step 2, all finite; nothing was written after the bad step
    saved = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=False)
    assert saved["global_step"] == 2
    assert all(torch.isfinite(v).all() for v in saved["state_dict"].values() if v.is_floating_point())


def test_predict_writes_the_outputs(tmp_path):
    out = tmp_path / "pred"
    argv = ["predict", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32,64]", "--data.eval_examples=3",
            f"--predictions.output_dir={out}", *_common(tmp_path)]
    assert main(argv) == 0
    batches = torch.load(out / "predictions_rank0.pt", weights_only=True)  # plain dicts of tensors and ints
    keys = ["pred", "target", "loss", "confidence", "answer_kind", "key_age", "row", "n_writes", "batch_size"]
    assert all(list(b) == keys for b in batches)
    assert [b["n_writes"] for b in batches] == [32, 64] and [b["batch_size"] for b in batches] == [3, 3]
    assert all(torch.equal(b["pred"], b["target"]) and b["pred"].numel() > 12 for b in batches)


def test_predict_prints_what_it_wrote_or_that_it_kept_nothing(tmp_path, capsys):
    out = tmp_path / "pred"
    base = ["predict", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32]", "--data.eval_examples=2", *_common(tmp_path)]
    assert main([*base, f"--predictions.output_dir={out}"]) == 0
    assert f"wrote {out / 'predictions_rank0.pt'}" in capsys.readouterr().out.splitlines()
    assert main(base) == 0
    assert "predict: outputs not kept; give --predictions.output_dir DIR to save them" in capsys.readouterr().out


@pytest.mark.parametrize("subcommand, title", [("test", "Test"), ("validate", "Validation")])
def test_evaluation_prints_the_per_n_table_not_lightnings_dump(tmp_path, capsys, subcommand, title):
    # the Oracle answers every query right: every observed cell of the table reads 1.000
    argv = [subcommand, "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32,64]", "--data.val_configs=[32,64]",
            "--data.eval_examples=3", *_common(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{title} accuracy per N x answer kind:" in out
    accuracy = out.split(f"{title} accuracy per N x answer kind:")[1].split("Calibration:")[0]
    rows = [ln for ln in accuracy.splitlines() if ln.startswith(("| n32 ", "| n64 "))]
    assert len(rows) == 2 and all("1.000" in r for r in rows), rows
    assert "DataLoader 0" not in out and "Test metric" not in out and "Validate metric" not in out
    if subcommand == "test":
        assert "Calibration:" in out
        assert any(ln.startswith("wrote ") and ln.endswith("answer_type_accuracy.md") for ln in out.splitlines())


def test_oracle_rules_follow_the_data_or_the_run_stops(tmp_path, capsys):
    base = ["test", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[128]", "--data.eval_examples=6",
            "--data.task_params={\"w\": 8}", *_common(tmp_path)]
    # the rules given as a plain dict are honoured: 1.0 everywhere at w=8
    assert main([*base, "--model.mechanism.init_args.params={\"w\": 8}"]) == 0
    (table,) = tmp_path.glob("oracle/Oracle/version_*/answer_type_accuracy.csv")
    checked = [r for r in csv.DictReader(table.open()) if int(r["count"]) > 0]
    assert {r["answer_type"] for r in checked} >= {"ar_valid", "ar_expired_stale", "passkey_exact"}
    assert all(float(r["accuracy"]) == 1.0 for r in checked)
    # an Oracle built for the card's w=16 on w=8 data would score below 1 without a word
    code, err = _error_line(capsys, base)
    assert code == 2
    assert err == [("swar-bench: error: Oracle reads the stream with w=16 but the data have w=8; expected "
                    "--model.mechanism.init_args.params to match --data.task_params (or the data folder's params.json)")]


@pytest.mark.parametrize(
    "command, signame, saved",
    [("fit", "SIGINT", True), ("fit", "SIGTERM", False), ("demo", "SIGINT", False), ("demo", "SIGTERM", True)],
)
def test_a_stopped_run_says_so_with_its_exit_status(tmp_path, command, signame, saved):
    # The resume hint names the checkpoint `fit --ckpt_path last` would load, and only when one
    # exists: following a hint with none would silently start from scratch.
    import signal
    import sys
    import time

    from harness.processes import child, stop

    signum = getattr(signal, signame)
    argv = [sys.executable, "-m", "swar_bench.cli", command]
    if command == "demo":
        argv += ["--threads", "1"]
    else:
        argv += ["--config", str(CONFIGS / "quickstart.yaml")]
    argv += ["--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8", "--data.eval_examples=2",
             "--trainer.max_steps=100000", "--trainer.log_every_n_steps=1", *_common(tmp_path)]
    # saved: a checkpoint after every step; else none (no validation, no step interval)
    argv += ["--checkpoint.every_n_train_steps=1"] if saved else ["--trainer.val_check_interval=100000"]
    last = tmp_path / "ckpt" / "last.ckpt"
    with child(argv) as proc:
        deadline = time.monotonic() + 300  # a bound on a hang, not a timing assumption
        ready = (lambda: last.exists()) if saved else (lambda: any(tmp_path.glob("quickstart/GRU/version_0/events.out.tfevents.*")))
        while not ready():  # the event: a checkpoint saved / the logger set up (training starts)
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        err = stop(proc, signum)
    assert proc.returncode == 128 + signum, err[-2000:]
    prog = "swar-bench demo" if command == "demo" else "swar-bench"
    what = "terminated (SIGTERM)" if signame == "SIGTERM" else "interrupted"
    hint = f"; fit --ckpt_path last resumes from {last}" if saved else ""
    assert err.strip().splitlines()[-1] == f"{prog}: {what}{hint}"
    assert "Detected KeyboardInterrupt" not in err  # Lightning's line: the run says it once, above
    assert "Traceback" not in err
    assert last.exists() == saved
    if saved:  # a run that saved a checkpoint keeps its folder (a stopped run with nothing in it would not)
        assert (tmp_path / "quickstart" / "GRU" / "version_0" / "config.yaml").is_file()


def test_resume_hint_names_the_newest_last_checkpoint_of_the_trainer(tmp_path):
    from lightning.pytorch import Trainer
    from lightning.pytorch.callbacks import ModelCheckpoint

    from swar_bench.lightning_cli import resume_checkpoint

    trainer = Trainer(logger=False, callbacks=[ModelCheckpoint(dirpath=tmp_path / "a", save_last=True)],
                      enable_progress_bar=False, enable_model_summary=False)
    assert resume_checkpoint(trainer) is None and resume_checkpoint(None) is None
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "epoch=0.ckpt").write_bytes(b"x")  # not what `--ckpt_path last` loads
    assert resume_checkpoint(trainer) is None
    for name, mtime in (("last.ckpt", 100), ("last-v1.ckpt", 200)):
        (tmp_path / "a" / name).write_bytes(b"x")
        os.utime(tmp_path / "a" / name, (mtime, mtime))
    assert resume_checkpoint(trainer) == str(tmp_path / "a" / "last-v1.ckpt")


def test_a_folder_name_too_long_is_named_before_any_work(tmp_path, capsys):
    long_dir = tmp_path / ("y" * 300)
    code, err = _error_line(capsys, ["fit", "--model.mechanism=GRU", f"--checkpoint.dirpath={long_dir}", *_common(tmp_path)[:1]])
    assert code == 2 and len(err) == 1
    assert err[0].startswith("swar-bench: error: --checkpoint.dirpath=") and "a name of 300 bytes; the file system allows" in err[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--max-minutes", "nan"], "swar-bench demo: error: --max-minutes=nan: expected a positive number of minutes"),
        (["--max-minutes", "inf"], "swar-bench demo: error: --max-minutes=inf: expected a positive number of minutes"),
        (["--trainer.max_steps=-5"], "swar-bench demo: error: --trainer.max_steps=-5: expected -1 (no limit) or an integer >= 0"),
    ],
)
def test_demo_bad_input_is_one_line(tmp_path, capsys, argv, expected):
    from swar_bench.demo import main as demo_main

    try:
        code = demo_main([*argv, *_common(tmp_path)])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(expected), err
    assert "Traceback" not in "\n".join(err)


def test_max_time_is_days_hours_minutes_seconds():
    from swar_bench.demo import _max_time

    assert _max_time(10) == "00:00:10:00"
    assert _max_time(1500.5) == "01:01:00:30"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terminal=st.booleans(), flag=st.sampled_from([None, "true", "false"]))
def test_the_progress_bar_is_on_only_on_a_terminal_unless_set(tmp_path, monkeypatch, terminal, flag):
    # Reported: `make demo > log` wrote thousands of progress-bar refreshes into the log. Lightning's
    # own switch (enable_progress_bar) is off by default when stdout is no terminal; a config or
    # --trainer.enable_progress_bar still decides.
    from swar_bench import lightning_cli
    from swar_bench.harness import stops

    monkeypatch.setattr(lightning_cli.sys.stdout, "isatty", lambda: terminal)
    argv = ["test", "--config", str(CONFIGS / "oracle.yaml"), "--data.test_configs=[32]", "--data.eval_examples=8",
            "--data.eval_batch_size=8", f"--trainer.logger.init_args.save_dir={tmp_path}",
            f"--checkpoint.dirpath={tmp_path / 'ckpt'}", "--trainer.enable_model_summary=false"]
    if flag is not None:
        argv.append(f"--trainer.enable_progress_bar={flag}")
    assert main(argv) == 0
    expected = terminal if flag is None else flag == "true"
    assert (stops.run_trainer().progress_bar_callback is not None) == expected


def test_a_demo_piped_to_a_log_writes_no_progress_bar(tmp_path, monkeypatch, capfd):
    from swar_bench import demo

    monkeypatch.chdir(tmp_path)
    code = demo.main(["--max-minutes", "1", "--trainer.max_steps=2", "--model.mechanism.init_args.d_model=8",
                      "--data.eval_examples=8", "--trainer.enable_model_summary=false",
                      f"--trainer.logger.init_args.save_dir={tmp_path}"])
    out, err = capfd.readouterr()
    assert code == 3, err  # the target is not reached in 2 steps (exit 3), the report is printed
    assert "Test accuracy per N x answer kind:" in out
    for bar in ("it/s]", "s/it]", "Epoch 0:", "Testing DataLoader", "\r"):
        assert bar not in out and bar not in err
