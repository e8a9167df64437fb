"""scripts/results.py refuses bad options in one line, before any run starts."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import shlex
import shutil
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "results.py"


def _results():
    spec = importlib.util.spec_from_file_location("results_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--jobs", "0"], "--jobs=0 is invalid; expected an integer >= 1"),
        (["--steps", "0"], "--steps=0 is invalid; expected an integer >= 1"),
        (["--lrs=-1e-3"], "--lrs='-1e-3' is invalid; expected positive learning rates"),
        (["--test-configs", "32,33"], "--test-configs='32,33': '33' is not an allowed N"),
        (["--mechanisms", "Transformer"], "unknown mechanism 'Transformer'"),
        (["--config", "configs/nope.yaml"], "--config='configs/nope.yaml' does not exist"),
        (["--tag", "a/b"], "--tag='a/b' is invalid"),
        (["--docs", "README.md"], "the folder cannot be created (/"),
        (["--docs", "/proc/x"], "--docs=/proc/x: the folder cannot be created"),
        (["--mechanisms", ""], "--mechanisms='' names no mechanism"),
    ],
)
def test_bad_options_stop_before_any_run(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        _results().main([*argv, "--out", str(tmp_path / "runs")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]
    assert not (tmp_path / "runs").exists()


def test_tag_names_the_outputs(tmp_path):
    results = _results()
    text = results.markdown({}, [32], [], {"lrs": [1e-3]}, prefix="results_passkey")
    assert "figures/results_passkey_ar_valid.png" in text and "figures/results_ar_valid.png" not in text


def _fake_runner(results, calls, accuracy_by_seed):
    """Stands in for ``swar-bench`` subprocesses: records each command and writes what the real one
    leaves behind (checkpoint, validation event file, the test CSV from the real ``accuracy_csv``)."""
    import numpy as np

    from swar_bench.callbacks.answer_type_accuracy import KINDS, AccuracyReport, accuracy_csv

    def run(args, log, threads):
        calls.append(args)
        get = lambda prefix: next(a.split("=", 1)[1] for a in args if a.startswith(prefix))
        save_dir, name = Path(get("--trainer.logger.init_args.save_dir=")), get("--trainer.logger.init_args.name=")
        seed = int(get("--seed_everything="))
        if args[0] == "fit":
            ckpt = Path(get("--checkpoint.dirpath=")) / "last.ckpt"
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            ckpt.write_text("")
        elif args[0] == "validate":
            (save_dir / name).mkdir(parents=True, exist_ok=True)
            (save_dir / name / f"events.out.tfevents.{seed}").write_text(str(seed))
        else:
            correct = np.zeros((1, len(KINDS)), dtype=np.int64)
            count = np.full((1, len(KINDS)), 10, dtype=np.int64)
            correct[0, KINDS.index("ar_valid")] = accuracy_by_seed[seed]
            count[0, KINDS.index("ar_expired_stale")] = 0
            report = AccuracyReport((32,), correct, count, np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64))
            out = Path(get("--accuracy.out_dir="))
            out.mkdir(parents=True, exist_ok=True)
            (out / "answer_type_accuracy.csv").write_text(accuracy_csv(report))
        return 0, results.command_line(args)

    return run


def _name(call: list[str]) -> str:
    return next(a for a in call if a.startswith("--trainer.logger.init_args.name=")).split("=", 1)[1]


def test_seeds_train_each_configuration_per_seed_and_report_the_spread(tmp_path, monkeypatch):
    results = _results()
    calls: list[list[str]] = []
    # ar_valid at n32: 7, 8, 9 of 10 answer tokens right in seeds 0, 1, 2. The first seed chooses
    # the learning rate: 1e-3 validates better there (0.6 vs 0.4); seeds 1 and 2 run at 1e-3 only.
    monkeypatch.setattr(results, "swar_bench", _fake_runner(results, calls, {0: 7, 1: 8, 2: 9}))
    val = {("0.001", 0): 0.6, ("0.001", 1): 0.7, ("0.001", 2): 0.5, ("0.003", 0): 0.4}

    def scalars(folder):
        lr, seed = folder.name.split("_lr")[1].split("_seed")
        return {"score": val[(lr, int(seed.split("_")[0]))]}

    monkeypatch.setattr(results, "last_scalars", scalars)
    monkeypatch.setattr(results, "validation_score", lambda s, val_n: s["score"])
    monkeypatch.setattr(results, "training_tokens", lambda ckpt: 1000)
    monkeypatch.setattr(results, "mechanism_facts", lambda m: {"n_params": 10, "state_bytes": 4})
    records, runs = tmp_path / "records", tmp_path / "runs"
    argv = ["--mechanisms", "GRU", "--lrs", "1e-3,3e-3", "--seeds", "0,1,2", "--test-configs", "32",
            "--out", str(runs), "--docs", str(tmp_path / "docs"), "--records", str(records)]
    assert results.main(argv) == 0
    fits = [c for c in calls if c[0] == "fit"]
    assert sorted(_name(c) for c in fits) == ["GRU_lr0.001_seed0", "GRU_lr0.001_seed1", "GRU_lr0.001_seed2",
                                              "GRU_lr0.003_seed0"]
    assert len([c for c in calls if c[0] == "test"]) == 3
    for c in fits:
        seed = next(a for a in c if a.startswith("--seed_everything=")).split("=")[1]
        assert f"--data.seed={seed}" in c and _name(c).endswith(f"_seed{seed}")
    tests = [c for c in calls if c[0] == "test"]
    assert all("GRU_lr0.001_seed" in next(a for a in c if a.startswith("--ckpt_path=")) for c in tests)
    table = (tmp_path / "docs" / "results_tables.md").read_text()
    # mean 0.8, min 0.7, max 0.9, t_{0.975,2} * 0.1 / sqrt(3) = 0.2484: CI 0.552-1.048, clipped to 0.552-1.000
    assert "| GRU | 0.800 (0.700–0.900; CI 0.552–1.000; 3 seeds) |" in table
    assert "| GRU | none |" in table  # no stale query at n32 in any seed
    assert "| 0.600 | 0.400 | 0.001 |" in table  # the first seed's validation score per lr, the chosen lr
    assert "first seed (0), which chooses the learning rate" in table
    raw = json.loads((runs / "results.json").read_text())
    spread = raw["GRU"]["spread"]["32/ar_valid"]
    assert spread["values"] == [0.7, 0.8, 0.9] and spread["ci_high"] == 1.0
    assert (tmp_path / "docs" / "figures" / "results_ar_valid.png").stat().st_size > 0
    assert sorted(p.name for p in records.iterdir()) == sorted(
        [f"GRU_lr0.001_seed{s}{x}.json" for s in (0, 1, 2) for x in ("", ".test")] + ["GRU_lr0.003_seed0.json"])
    before = table.split("## Commands")[0]
    # --resume keeps every finished run: nothing runs again, and the tables are the same
    calls.clear()
    assert results.main([*argv, "--resume"]) == 0
    assert calls == []
    assert (tmp_path / "docs" / "results_tables.md").read_text().split("## Commands")[0] == before
    # on another machine (no run folders, only the records) nothing runs either
    shutil.rmtree(runs)
    assert results.main([*argv, "--resume"]) == 0
    assert calls == []
    assert (tmp_path / "docs" / "results_tables.md").read_text().split("## Commands")[0] == before
    # one test's record lost and no checkpoint here: that seed is trained and tested again, nothing else
    (records / "GRU_lr0.001_seed2.test.json").unlink()
    assert results.main([*argv, "--resume"]) == 0
    assert [(c[0], _name(c)) for c in calls] == [("fit", "GRU_lr0.001_seed2"), ("validate", "GRU_lr0.001_seed2_val"),
                                                 ("test", "GRU_lr0.001_seed2_test")]
    # its checkpoint is here now: losing the test record again only runs the test
    calls.clear()
    (records / "GRU_lr0.001_seed2.test.json").unlink()
    (runs / "GRU_lr0.001_seed2" / "test" / "answer_type_accuracy.csv").unlink()
    assert results.main([*argv, "--resume"]) == 0
    assert [(c[0], _name(c)) for c in calls] == [("test", "GRU_lr0.001_seed2_test")]
    # one seed's fit record lost (its run folder gone too): that seed is trained and tested again
    calls.clear()
    (records / "GRU_lr0.001_seed1.json").unlink()
    assert results.main([*argv, "--resume"]) == 0
    assert [(c[0], _name(c)) for c in calls] == [("fit", "GRU_lr0.001_seed1"), ("validate", "GRU_lr0.001_seed1_val"),
                                                 ("test", "GRU_lr0.001_seed1_test")]
    assert (tmp_path / "docs" / "results_tables.md").read_text().split("## Commands")[0] == before
    # a record of another command (another step count) is not reused: everything runs again
    calls.clear()
    assert results.main([*argv, "--resume", "--steps", "7"]) == 0
    assert len([c for c in calls if c[0] == "fit"]) == 4 and len([c for c in calls if c[0] == "test"]) == 3


def test_one_seed_cells_carry_wilson_intervals():
    results = _results()
    r = {"seeds": {None: {"accuracy": {(32, "ar_valid"): (81 / 263, 263, 81), (32, "passkey_exact"): (1.0, 29, 29)}}}}
    assert results.cell_text(r, 32, "ar_valid") == "0.308 [0.255, 0.366] (263)"  # Newcombe (1998)
    assert results.cell_text(r, 32, "passkey_exact") == "1.000 [0.883, 1.000] (29)*"
    assert results.cell_text(r, 64, "ar_valid") == "none (0)"
    _, low, high = results.band(r, 32, "ar_valid")
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    text = results.markdown({"GRU": {**r, "n_params": 1, "state_bytes": 1, "tokens": 1, "scores": {1e-3: 0.5},
                                     "lr": 1e-3}}, [32], [], {"lrs": [1e-3]})
    assert "fewer than 30 items" in text and "| GRU | 0.308 [0.255, 0.366] (263) |" in text


@pytest.mark.parametrize(("value", "error"), [
    ("a", "--seeds='a' is invalid; expected distinct integers >= 0"),
    ("-1", "--seeds='-1' is invalid; expected distinct integers >= 0"),
    ("", "--seeds='' is invalid; expected distinct integers >= 0"),
    ("0,0", "--seeds='0,0' names 0 twice; expected distinct values"),
    ("1,2,01", "--seeds='1,2,01' names 1 twice; expected distinct values"),
])
def test_bad_seeds_stop_before_any_run(value, error, tmp_path, capsys):
    with pytest.raises(SystemExit):
        _results().main(["--seeds", value, "--out", str(tmp_path / "runs")])
    assert error in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_every_registered_mechanism_config_exists_and_fixed_decays_are_fixed():
    import yaml

    results = _results()
    root = SCRIPT.parents[1]
    for name, path in results.MECHANISM_CONFIGS.items():
        spec = yaml.safe_load((root / path).read_text())["model"]["mechanism"]
        assert spec["class_path"].rsplit(".", 1)[1] == name.split("_")[0], path
    for d in results.FIXED_DECAYS:
        args = yaml.safe_load((root / results.MECHANISM_CONFIGS[f"ScalarDecayLinearAttention_decay{d}"]).read_text())
        init = args["model"]["mechanism"]["init_args"]
        assert init["decay"] == float(d) and init["learn_decay"] is False
    assert set(results.FRONTIER) <= set(results.MECHANISM_CONFIGS)
    assert {"GatedLinearAttention", "RWKV7", "KimiDeltaAttention", "mLSTM", "GatedDeltaNet", "DeltaNet", "Mamba2",
            "ScalarDecayLinearAttention_learned"} <= set(results.FRONTIER)


def test_forgetting_score_is_zero_for_all_null_and_all_value_answers():
    results = _results()
    assert results.forgetting_score(0.0, 1.0) == 0.0  # NULL to everything: stale all right, valid all wrong
    assert results.forgetting_score(1.0, 0.0) == 0.0  # a value to everything
    assert results.forgetting_score(0.9, 0.75) == 0.75
    assert math.isnan(results.forgetting_score(math.nan, 1.0))


@settings(max_examples=50, deadline=None)
@given(valid=st.floats(0, 1), stale=st.floats(0, 1))
def test_forgetting_score_is_bounded_by_both_answer_kinds(valid, stale):
    score = _results().forgetting_score(valid, stale)
    assert score <= valid and score <= stale and score in (valid, stale)
    assert _results().forgetting_score(0.0, stale) == 0.0  # the all-NULL model's ar_valid is 0


def _fake_results(seeds: dict[str, dict[str, tuple[int, int]]]) -> dict:
    """A results.json mapping: per seed, ``kind -> (correct, count)`` at n256 (accuracy = correct/count)."""
    return {"seeds": {s: {"tokens": 1, "accuracy": {f"256/{k}": [c / n, n, c] for k, (c, n) in cells.items()}}
                      for s, cells in seeds.items()}}


ALL_NULL = {"passkey_exact": (0, 400), "ar_valid": (0, 3000), "ar_expired_stale": (900, 900)}


def test_frontier_points_by_hand():
    results = _results()
    raw = {
        "AllNull": _fake_results({"0": ALL_NULL, "1": ALL_NULL}),
        # seeds: passkey 0.9 / 0.8 / 0.7, valid 0.5 / 0.6 / 0.9, stale 0.8 / 0.7 / 0.6 -> score 0.5 / 0.6 / 0.6
        "Good": _fake_results({"0": {"passkey_exact": (360, 400), "ar_valid": (50, 100), "ar_expired_stale": (80, 100)},
                               "1": {"passkey_exact": (320, 400), "ar_valid": (60, 100), "ar_expired_stale": (70, 100)},
                               "2": {"passkey_exact": (280, 400), "ar_valid": (90, 100), "ar_expired_stale": (60, 100)}}),
        "One": _fake_results({"config": {"passkey_exact": (200, 400), "ar_valid": (81, 263), "ar_expired_stale": (29, 29)}}),
        "Untested": {"seeds": {"0": {"accuracy": {"128/passkey_exact": [1.0, 1, 1]}}}},
    }
    points = results.frontier_points(raw, 256)
    assert set(points) == {"AllNull", "Good", "One"}
    assert points["AllNull"]["y"] == (0.0, 0.0, 0.0) and points["AllNull"]["x"] == (0.0, 0.0, 0.0)
    x, y = points["Good"]["x"], points["Good"]["y"]
    assert x[0] == pytest.approx(0.8) and y[0] == pytest.approx(17 / 30)
    assert points["Good"]["per_seed"] == [(0.9, 0.5), (0.8, 0.6), (0.7, 0.6)]  # the figure's hollow markers
    assert points["Good"]["ar_valid"] == pytest.approx(2 / 3) and points["Good"]["ar_expired_stale"] == pytest.approx(0.7)
    # t_{0.975,2} = 4.302653; sd of (0.9, 0.8, 0.7) = 0.1: half-width 0.248414
    assert (x[1], x[2]) == (pytest.approx(0.8 - 0.248414, abs=1e-6), 1.0)  # 0.8 + 0.248414, clipped to [0, 1]
    # one seed: Wilson 200/400 = [0.4512, 0.5488]; y = min(81/263 [0.2553, 0.3662], 29/29 [0.8830, 1])
    x, y = points["One"]["x"], points["One"]["y"]
    assert (round(x[1], 4), round(x[2], 4)) == (0.4512, 0.5488)
    assert (round(y[0], 4), round(y[1], 4), round(y[2], 4)) == (0.308, 0.2553, 0.3662)


def test_spread_labels_by_hand():
    spread = _results().spread_labels
    # three crowded points near 0 and one apart: 0.0 stays, 0.05 is already 0.03 above it and stays,
    # 0.06 climbs to 0.05 + 0.03; 0.9 is far from all and stays
    assert spread([0.05, 0.0, 0.06, 0.9], 0.03) == pytest.approx([0.05, 0.0, 0.08, 0.9])
    assert spread([], 0.03) == []
    with pytest.raises(ValueError, match=r"gap=-0.1 is invalid; expected a number >= 0"):
        spread([0.0], -0.1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=25), st.floats(0, 0.2))
def test_spread_labels_keep_order_gap_and_stay_at_or_above_their_points(ys, gap):
    placed = _results().spread_labels(ys, gap)
    assert len(placed) == len(ys)
    assert all(h >= y for h, y in zip(placed, ys))  # never below its own point
    order = sorted(range(len(ys)), key=lambda i: (ys[i], i))
    heights = [placed[i] for i in order]
    assert all(b - a >= gap - 1e-12 for a, b in itertools.pairwise(heights))  # the gap, in the points' order
    # as low as that allows: each label sits on its own point or exactly one gap above the one below
    assert all(math.isclose(h, ys[i]) or math.isclose(h, prev + gap)
               for i, h, prev in zip(order[1:], heights[1:], heights))
    if ys:
        assert math.isclose(heights[0], ys[order[0]])


def test_frontier_writer_on_a_fake_results_json(tmp_path, capsys):
    results = _results()
    raw = {"AllNull": _fake_results({"0": ALL_NULL}),
           "Keeper": {**_fake_results({"0": {"passkey_exact": (400, 400), "ar_valid": (100, 100),
                                              "ar_expired_stale": (95, 100)}}), "n_params": 114056, "state_bytes": 20992}}
    out = tmp_path / "runs"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(raw))
    argv = ["--config", "configs/results_frontier.yaml", "--tag", "frontier", "--out", str(out),
            "--docs", str(tmp_path / "docs"), "--frontier-only"]
    assert results.main(argv) == 0
    table = (tmp_path / "docs" / "results_frontier_frontier.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "seeds" not in line]
    assert rows == ["| Keeper | 1 | 1.000 [0.990, 1.000] | 1.000 | 1.000 | 0.950 | 0.950 [0.888, 0.978] | 20,992 | 114,056 |",
                    "| AllNull | 1 | 0.000 [0.000, 0.010] | 0.000 | 0.000 | 1.000 | 0.000 [0.000, 0.001] | none | none |"]
    assert "at n256 (4x the longest training N, n64)" in table
    png = (tmp_path / "docs" / "figures" / "results_frontier_frontier.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # a config whose test N lacks 4x the training N is refused before anything is written
    with pytest.raises(SystemExit):
        results.main([*argv, "--test-configs", "32,64"])
    assert "which is not among the test N [32, 64]" in capsys.readouterr().err


def _config(name: str) -> dict:
    import yaml

    return yaml.safe_load((SCRIPT.parents[1] / "configs" / name).read_text())


def test_frontier_config_has_the_issue_rigour():
    from swar_bench.callbacks.length_curriculum import expected_tokens_per_example

    cfg = _config("results_frontier.yaml")
    data = cfg["data"]
    assert data["eval_examples"] >= 400 and 4 * max(data["train_configs"]) in data["test_configs"]
    # one TBPTT chunk per training sequence: the longest n64 sequence is ~300 tokens (mean 252)
    assert cfg["model"]["tbptt_steps"] >= 2 * expected_tokens_per_example(max(data["train_configs"]))


def test_curriculum_configs_spend_one_equal_flop_budget():
    from swar_bench.callbacks.length_curriculum import expected_tokens_per_example

    budgets, val = {}, set()
    for variant in ("bandit", "bandit_free", "uniform", "short"):
        cfg = _config(f"results_curriculum_{variant}.yaml")
        callbacks = {c["class_path"].rsplit(".", 1)[1]: c["init_args"] for c in cfg["trainer"]["callbacks"]}
        stops = [a["budget_flops"] for a in callbacks.values() if a.get("budget_flops") is not None]
        assert len(stops) == 1, variant  # exactly one rule ends the run: the ledger or FlopBudget
        budgets[variant] = float(stops[0])
        assert ("LengthCurriculum" in callbacks) == variant.startswith("bandit")
        if "LengthCurriculum" in callbacks:
            assert callbacks["LengthCurriculum"]["n_writes_values"] == cfg["data"]["train_configs"]
        assert cfg["trainer"]["max_steps"] > 3 * cfg["model"]["max_steps"]  # a cap, never the stop
        assert cfg["model"]["tbptt_steps"] > 1.2 * expected_tokens_per_example(max(cfg["data"]["train_configs"]))
        assert {1024, 4096} <= set(cfg["data"]["test_configs"]) and cfg["data"]["eval_examples"] >= 400
        val.add(tuple(cfg["data"]["val_configs"]))
    assert set(budgets.values()) == {4.6e12} and len(val) == 1
    assert _config("results_curriculum_short.yaml")["data"]["train_configs"] == [32, 64]
    assert _config("results_curriculum_uniform.yaml")["data"]["train_configs"] == [32, 64, 128, 256]


def test_help_shows_every_default_and_the_danger(capsys):
    results = _results()
    with pytest.raises(SystemExit) as done:
        results.main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for default in ("(default: 3e-3,1e-2)", "(default: 2)", "(default: 1)", "(default: runs/results)",
                    f"(default: {results.CONFIG})", "(default: docs, where the committed tables and figures are",
                    "(default: results/<tag>, or results/main with no tag", "(default: off, everything runs)",
                    "(default: none, results_tables.md", "(default: one run per configuration"):
        assert default in text, default
    assert "a run there overwrites them" in text and "(default: )" not in text


TRIAL = st.sampled_from([("--steps", st.integers(1, 10**6).map(str)),
                          ("--eval-examples", st.integers(1, 10**6).map(str)),
                          ("--test-configs", st.sampled_from(["32", "32,64", "256,1024"]))])


ROOT = SCRIPT.parents[1]
COMMITTED_SPELLINGS = {  # the committed folders, spelled as a user might: relative, absolute, with '..', inside
    "--docs": ["docs", "./docs", "docs/../docs", str(ROOT / "docs"), "docs/figures", "scripts/../docs/x"],
    "--records": ["results", "results/frontier", "./results/x", str(ROOT / "results" / "y"), "docs/../results/main"],
}


@settings(max_examples=40, deadline=None)
@given(data=st.data(), docs=st.sampled_from(["absent", "other", "committed"]),
       records=st.sampled_from(["absent", "other", "committed"]))
def test_a_trial_setting_never_writes_into_the_committed_folders(data, docs, records, tmp_path_factory):
    """Every option that changes the config's protocol (--steps, --eval-examples, --test-configs)
    without both --docs and --records naming folders outside the committed docs/ and results/ (however
    spelled: ./docs, an absolute path, '..', a folder inside them) is refused before anything runs
    (exit 2, one line naming the option and the folders that are missing or committed); --out alone
    does not count."""
    import contextlib
    import io

    flag, values = data.draw(TRIAL)
    value = data.draw(values)
    tmp = tmp_path_factory.mktemp("trial")
    argv = [flag, value, "--out", str(tmp / "runs")]
    for option, how in (("--docs", docs), ("--records", records)):
        if how == "other":
            argv += [option, str(tmp / option[2:])]
        elif how == "committed":
            argv += [option, data.draw(st.sampled_from(COMMITTED_SPELLINGS[option]))]
    missing = [option for option, how in (("--docs", docs), ("--records", records)) if how != "other"]
    assume(missing)  # both elsewhere: an allowed trial, which would run
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        _results().main(argv)
    assert stop.value.code == 2
    line = err.getvalue().strip().splitlines()[-1]
    assert line.endswith(f"{flag}={value} is a trial setting (it changes the config's protocol): it would overwrite "
                         "the committed tables, figures and records in docs/ and results/; expected "
                         f"{' and '.join(missing)} naming other folders")
    assert list(tmp.iterdir()) == []


def test_the_reported_trial_into_explicit_committed_folders_is_refused(tmp_path, capsys):
    """The reported inputs: --docs docs and --records results/frontier, given explicitly with --steps."""
    for extra, missing in ((["--docs", "docs", "--records", str(tmp_path / "r")], "--docs"),
                           (["--docs", str(tmp_path / "d"), "--records", "results/frontier"], "--records")):
        with pytest.raises(SystemExit) as stop:
            _results().main(["--steps", "1", "--out", str(tmp_path / "o"), "--mechanisms", "GRU", *extra])
        assert stop.value.code == 2
        assert capsys.readouterr().err.strip().endswith(f"expected {missing} naming other folders")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=30, deadline=None)
@given(flag=st.sampled_from(["--out", "--records", "--docs"]), value=st.sampled_from(["", " ", "  ", "\t"]))
def test_an_empty_folder_option_is_refused(flag, value):
    """An empty (or blank) folder option would be the current folder: refused in one line, exit 2."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        _results().main([f"{flag}={value}"])
    assert stop.value.code == 2
    assert err.getvalue().strip().splitlines()[-1].endswith(f"{flag}={value!r} is empty; expected a folder path")


@pytest.mark.parametrize("trial", [["--steps", "3"], ["--eval-examples", "8"]])
def test_frontier_only_refuses_settings_it_would_ignore(trial, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        _results().main(["--config", "configs/results_frontier.yaml", "--out", str(tmp_path), "--frontier-only", *trial])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        f"{trial[0]}={trial[1]} has no effect with --frontier-only, which runs nothing; expected it without {trial[0]}")


def test_frontier_only_writes_the_committed_docs_only_from_a_committed_protocol_sweep(tmp_path, monkeypatch, capsys):
    """--frontier-only with the default --docs reads a results.json that says it was written by a sweep
    of the same config without trial settings; any other (a 5-step trial, an older file) is refused."""
    results = _results()
    committed = {"config": "configs/results_frontier.yaml", "trial": []}
    keeper = _fake_results({"0": {"passkey_exact": (400, 400), "ar_valid": (100, 100), "ar_expired_stale": (95, 100)}})
    out = tmp_path / "runs"
    out.mkdir()
    argv = ["--config", "configs/results_frontier.yaml", "--tag", "frontier", "--out", str(out), "--frontier-only"]
    docs = tmp_path / "docs"
    monkeypatch.setattr(results, "write_frontier", lambda raw, n, n_train, d, prefix: (d / "t.md", d / "f.png"))
    for protocol in (None, {**committed, "trial": ["--steps=5"]}, {**committed, "config": "configs/results.yaml"}):
        (out / "results.json").write_text(json.dumps({"Keeper": {**keeper, **({"protocol": protocol} if protocol else {})}}))
        with pytest.raises(SystemExit) as stop:
            results.main(argv)
        assert stop.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
            f"--frontier-only: {out / 'results.json'} was not written by a sweep of configs/results_frontier.yaml "
            "without trial settings (--steps, --eval-examples, --test-configs), or by one that does not say so: it "
            "would overwrite the committed frontier in docs/; expected --docs naming another folder")
        assert results.main([*argv, "--docs", str(docs)]) == 0  # another folder: any results.json
        assert f"wrote {docs / 't.md'}" in capsys.readouterr().out
    (out / "results.json").write_text(json.dumps({"Keeper": {**keeper, "protocol": committed}}))
    assert results.main(argv) == 0
    assert f"wrote {SCRIPT.parents[1] / 'docs' / 't.md'}" in capsys.readouterr().out  # the stub wrote nothing
    for text, why in (("{", "cannot be read as JSON (JSONDecodeError)"), ("[1]", "is not a sweep's results.json")):
        (out / "results.json").write_text(text)
        with pytest.raises(SystemExit):
            results.main([*argv, "--docs", str(docs)])
        assert f"--frontier-only: {out / 'results.json'} {why}" in capsys.readouterr().err


def test_a_sweep_marks_its_results_json_with_its_protocol(tmp_path, monkeypatch):
    results = _results()
    calls: list[list[str]] = []
    _fake_sweep(results, monkeypatch, calls)
    runs = tmp_path / "runs"
    argv = ["--mechanisms", "GRU", "--lrs", "1e-3", "--seeds", "0", "--out", str(runs), "--docs", str(tmp_path / "docs"),
            "--records", str(tmp_path / "records")]
    assert results.main([*argv, "--test-configs", "32"]) == 0
    assert json.loads((runs / "results.json").read_text())["GRU"]["protocol"] == {
        "config": "configs/results.yaml", "trial": ["--test-configs=32"]}


@settings(max_examples=50, deadline=None)
@given(args=st.lists(st.text(min_size=1), max_size=6))
def test_printed_commands_paste_back_as_the_same_arguments(args):
    results = _results()
    assert shlex.split(results.shown(args)) == ["swar-bench", *args]
    assert results.command_line(args) == "swar-bench " + " ".join(args)  # the stored form --resume compares


def _fake_sweep(results, monkeypatch, calls):
    monkeypatch.setattr(results, "swar_bench", _fake_runner(results, calls, {0: 7}))
    monkeypatch.setattr(results, "last_scalars", lambda folder: {"score": 0.5})
    monkeypatch.setattr(results, "validation_score", lambda s, val_n: s["score"])
    monkeypatch.setattr(results, "training_tokens", lambda ckpt: 1000)
    monkeypatch.setattr(results, "mechanism_facts", lambda m: {"n_params": 10, "state_bytes": 4})
    monkeypatch.setattr(results, "plot", lambda *a, **k: [])  # the figures are not what this checks


def test_new_test_configs_rerun_only_the_tests_and_records_of_the_stored_form_are_reused(tmp_path, monkeypatch):
    results = _results()
    calls: list[list[str]] = []
    _fake_sweep(results, monkeypatch, calls)
    records, runs, docs = tmp_path / "records", tmp_path / "runs", tmp_path / "docs"
    argv = ["--mechanisms", "GRU", "--lrs", "1e-3", "--seeds", "0", "--out", str(runs), "--docs", str(docs),
            "--records", str(records), "--eval-examples", "5"]
    assert results.main([*argv, "--test-configs", "32"]) == 0
    name = "GRU_lr0.001_seed0"
    # the record stores the command as the sweeps so far did ("swar-bench " + args joined by spaces)
    fit = json.loads((records / f"{name}.json").read_text())["fit"]
    assert fit == (f"swar-bench fit --config configs/results.yaml --config configs/mechanisms/gru.yaml "
                   f"--trainer.logger.init_args.save_dir={runs} --trainer.logger.init_args.name={name} "
                   f"--checkpoint.dirpath={runs}/{name}/checkpoints --model.lr=0.001 --seed_everything=0 "
                   f"--data.seed=0 --data.eval_examples=5")
    test = json.loads((records / f"{name}.test.json").read_text())["test"]
    assert test.endswith("--data.eval_examples=5 --data.test_configs=[32]")
    # another test N: the fit is kept, only the test runs again (on this machine and on another)
    calls.clear()
    assert results.main([*argv, "--test-configs", "32,64", "--resume"]) == 0
    assert [(c[0], _name(c)) for c in calls] == [("test", f"{name}_test")]
    assert "--data.test_configs=[32,64]" in calls[0] and "--data.eval_examples=5" in calls[0]
    shutil.rmtree(runs)
    (records / f"{name}.test.json").write_text(json.dumps({"test": test, "accuracy": [[32, "ar_valid", 0.7, 10, 7]]}))
    calls.clear()
    assert results.main([*argv, "--test-configs", "32", "--resume"]) == 0
    assert calls == []  # records of the stored form, without any run folder: nothing runs
    # the tables print every command quoted: it pastes into a shell as it ran, whatever files are there
    table = (docs / "results_tables.md").read_text()
    assert "--seed_everything=0 --data.seed=0 --data.eval_examples=5 '--data.test_configs=[32]'" in table
    # another --eval-examples changes validation: the fit runs again
    assert results.main([*argv, "--test-configs", "32", "--resume", "--eval-examples", "6"]) == 0
    assert [c[0] for c in calls] == ["fit", "validate", "test"]


FAKE_CHILD = """
import os, signal, sys
name = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--trainer.logger.init_args.name="))
log = os.environ["FAKE_SWAR_BENCH_LOG"]
if "lr0.01_" in name + "_":  # this learning rate's run is stopped by a signal of its own (exit 130)
    sys.exit(130)
def stop(signum, frame):
    with open(log, "a") as handle:
        handle.write(f"stopped {name} {signum}\\n")
    os._exit(128 + signum)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
with open(log, "a") as handle:
    handle.write(f"started {name}\\n")
signal.alarm(120)  # a sweep that never stops it fails the test instead of hanging it (SIGALRM ends it)
while True:
    signal.pause()
"""


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "a run exits 130"])
def test_a_stop_ends_the_sweep_at_once(how, tmp_path, monkeypatch, capsys):
    """A real signal to this process while real (fake swar-bench) subprocesses run: no new run
    starts, the running ones get the signal, nothing is written, the old records stay."""
    import os
    import signal
    import sys
    import threading
    import time

    results = _results()
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD)
    log = tmp_path / "children.log"
    log.touch()
    monkeypatch.setenv("FAKE_SWAR_BENCH_LOG", str(log))
    monkeypatch.setattr(results, "SWAR_BENCH", [sys.executable, str(child)])
    records, runs, docs = tmp_path / "records", tmp_path / "runs", tmp_path / "docs"
    records.mkdir()
    kept = records / "Mamba2_lr0.003.json"
    kept.write_text('{"fit": "swar-bench fit", "score": 0.5}\n')
    # two slots: GRU and LSTM run, DeltaNet and Mamba2 wait; or GRU's two rates, 1e-2's run exits 130
    sweep = ["GRU", "3e-3,1e-2"] if how == "a run exits 130" else ["GRU,LSTM,DeltaNet,Mamba2", "3e-3"]
    argv = ["--mechanisms", sweep[0], "--lrs", sweep[1], "--jobs", "2", "--out", str(runs),
            "--docs", str(docs), "--records", str(records)]
    signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT

    def started() -> list[str]:
        return [line for line in log.read_text().splitlines() if line.startswith("started")]

    def send_when_both_run() -> None:  # an observable event: both children wrote that they wait
        deadline = time.monotonic() + 120
        while len(started()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signum)

    if how != "a run exits 130":
        threading.Thread(target=send_when_both_run, daemon=True).start()
    assert results.main(argv) == 128 + signum
    lines = log.read_text().splitlines()
    names = [line.split()[1] for line in started()]
    if how != "a run exits 130":
        assert sorted(names) == ["GRU_lr0.003", "LSTM_lr0.003"]  # DeltaNet and Mamba2 never started
    assert sorted(line for line in lines if line.startswith("stopped")) == sorted(
        f"stopped {n} {int(signum)}" for n in names)  # every started run was stopped, by the same signal
    err = capsys.readouterr().err.strip().splitlines()
    what = "SIGTERM" if how == "SIGTERM" else "Ctrl-C"
    assert err[-1] == (f"results: interrupted ({what}); nothing more was run or written; the runs finished so far "
                       f"keep their records in {records}; run the same command with --resume to continue")
    assert not any("failed" in line for line in err)
    assert sorted(p.name for p in records.iterdir()) == [kept.name]  # no record of a stopped run (no NaN score)
    assert kept.read_text() == '{"fit": "swar-bench fit", "score": 0.5}\n'
    assert not docs.exists() and not (runs / "results.json").exists()


BAD_CONFIGS = [
    ("", "is empty"),
    ("model:\n  lr: 1\n", "has no data: section"),
    ("data: [\n", "not valid YAML at line 2"),
    ("- 1\n", "holds a list, not a mapping"),
    ("data:\n  train_configs: [32]\n  val_configs: [32]\n", "data.test_configs is null"),
    ("data:\n  train_configs: [32, x]\n  val_configs: [32]\n  test_configs: [128]\n", 'data.train_configs is [32, "x"]'),
]


@pytest.mark.parametrize("text, why", BAD_CONFIGS)
def test_a_bad_config_is_one_line(text, why, tmp_path, capsys):
    """An empty file, one without data:, invalid YAML (the reported three), and lists of the wrong shape."""
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(SystemExit) as stop:
        _results().main(["--config", str(config), "--out", str(tmp_path / "runs")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"--config={config}: {why}; expected a YAML mapping with a data: section holding "
                            "train_configs, val_configs and test_configs") or (
        why.startswith("data.") and err[-1].endswith(f"--config={config}: {why}; expected a list of integers >= 1 (N values)"))
    assert "Traceback" not in capsys.readouterr().err and not (tmp_path / "runs").exists()


@settings(max_examples=30, deadline=None)
@given(cfg=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                            st.sampled_from(["data", "train_configs", "val_configs", "test_configs", "x"]), inner,
                            max_size=4), max_leaves=10))
def test_any_config_is_read_or_refused_in_one_line(cfg, tmp_path_factory):
    """Whatever YAML --config holds, load_config returns the three N lists or raises one ValueError line."""
    import yaml

    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    try:
        loaded = _results().load_config(path, "c.yaml")
    except ValueError as err:
        assert str(err).startswith("--config=c.yaml: ") and "\n" not in str(err) and "; expected " in str(err)
    else:
        assert all(isinstance(n, int) and n >= 1 for k in ("train_configs", "val_configs", "test_configs")
                   for n in loaded["data"][k])


GOOD_FIT = {"fit": "swar-bench fit x", "validate": "swar-bench validate x", "score": 0.5, "tokens": 1000}
GOOD_TEST = {"test": "swar-bench test x", "accuracy": [[32, "ar_valid", 0.7, 10, 7]]}


@pytest.mark.parametrize("name, record, why", [
    ("r.json", {**GOOD_FIT, "score": "high"}, "'score' is \"high\"; expected a number"),
    ("r.json", {**GOOD_FIT, "tokens": None}, "'tokens' is null; expected an integer >= 0"),
    ("r.test.json", {**GOOD_TEST, "accuracy": "oops"}, "'accuracy' is \"oops\"; expected a list"),
    ("r.test.json", {**GOOD_TEST, "accuracy": [[32, "ar_valid", 0.7, 10]]}, "'accuracy' row [32, \"ar_valid\", 0.7, 10]"),
    ("r.test.json", {**GOOD_TEST, "accuracy": [[32, "ar_valid", 0.7, 10, 11]]}, "0 <= correct <= count"),
    ("r.json", [1], "holds list; expected a JSON object"),
    ("r.json", "", "is empty; expected a JSON record"),
    ("r.json", "{", "is not JSON (Expecting property name"),
])
def test_an_unusable_record_is_named(name, record, why, tmp_path):
    path = tmp_path / name
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    with pytest.raises(ValueError) as err:
        _results().read_record(path)
    assert str(err.value).startswith(f"{path}: ") and why in str(err.value) and "\n" not in str(err.value)
    assert _results().read_record(tmp_path / "absent.json") is None


@settings(max_examples=40, deadline=None)
@given(test=st.booleans(), key=st.sampled_from(["fit", "validate", "score", "tokens", "test", "accuracy"]),
       value=st.none() | st.booleans() | st.text(max_size=3) | st.lists(st.integers(), max_size=2) | st.integers(-2, -1))
def test_a_record_field_of_the_wrong_type_is_refused(test, key, value, tmp_path_factory):
    """Every field --resume reads: a value of the wrong type (or a negative count) makes the record unusable."""
    good = GOOD_TEST if test else GOOD_FIT
    if key not in good or (key in ("fit", "validate", "test") and isinstance(value, str)) or (
            key == "accuracy" and value == []) or (key == "score" and isinstance(value, int) and not isinstance(value, bool)):
        return  # a value of the right type
    path = tmp_path_factory.mktemp("rec") / ("r.test.json" if test else "r.json")
    path.write_text(json.dumps({**good, key: value}))
    with pytest.raises(ValueError, match=f"'{key}'"):
        _results().read_record(path)


def test_every_committed_record_is_valid():
    """The records committed under results/ (the sweeps' resume state) all pass read_record."""
    files = sorted((SCRIPT.parents[1] / "results").rglob("*.json"))
    assert any(f.name.endswith(".test.json") for f in files) and any(not f.name.endswith(".test.json") for f in files)
    results = _results()
    for path in files:
        assert results.read_record(path) is not None, path


@pytest.mark.parametrize("field, value, why", [
    ("score", "high", "'score' is \"high\"; expected a number"),
    ("tokens", None, "'tokens' is null; expected an integer >= 0"),
    ("accuracy", "oops", "'accuracy' is \"oops\"; expected a list"),
])
def test_resume_redoes_a_run_whose_record_holds_wrong_types(field, value, why, tmp_path, monkeypatch, capsys):
    results = _results()
    calls: list[list[str]] = []
    _fake_sweep(results, monkeypatch, calls)
    records, runs = tmp_path / "records", tmp_path / "runs"
    argv = ["--mechanisms", "GRU", "--lrs", "1e-3", "--seeds", "0", "--out", str(runs), "--docs", str(tmp_path / "docs"),
            "--records", str(records), "--resume"]
    assert results.main(argv) == 0
    shutil.rmtree(runs)  # another machine: only the records
    name = "GRU_lr0.001_seed0"
    path = records / (f"{name}.test.json" if field == "accuracy" else f"{name}.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), field: value}))
    calls.clear()
    capsys.readouterr()
    assert results.main(argv) == 0
    assert [c[0] for c in calls] == ["fit", "validate", "test"]  # no checkpoint here: the test needs its fit
    err = capsys.readouterr().err
    assert f"results: warning: {path}: {why}; running it again" in err and "Traceback" not in err
    assert results.read_record(path) is not None  # written again, valid


@settings(max_examples=20, deadline=None)
@given(per_mech=st.lists(st.integers(1, 3), min_size=1, max_size=3), asked=st.integers(1, 3))
def test_the_legend_describes_the_cell_formats_used(per_mech, asked):
    """One tested seed -> the Wilson format's legend; several -> the t interval's; both when rows mix."""
    results = _results()
    cell = {(32, "ar_valid"): (0.7, 10, 7)}
    done = {f"M{i}": {"seeds": {s: {"accuracy": cell} for s in range(k)}, "n_params": 1, "state_bytes": 1, "tokens": 1,
                      "scores": {1e-3: 0.5}, "lr": 1e-3} for i, k in enumerate(per_mech)}
    text = results.markdown(done, [32], [], {"lrs": [1e-3], "seeds": list(range(asked))})
    has_one, has_many = 1 in per_mech, any(k > 1 for k in per_mech)
    assert ("accuracy [95% Wilson interval] (items)" in text) == has_one
    assert ("mean (min–max; CI low–high; seeds)" in text) == has_many
    assert "1 seeds" not in text


def test_one_seed_legend_matches_its_wilson_cells():
    """The reported input: --seeds 0 (one seed) printed the t-interval legend over Wilson cells."""
    results = _results()
    r = {"seeds": {0: {"accuracy": {(32, "ar_valid"): (2 / 29, 29, 2)}}}, "n_params": 1, "state_bytes": 1,
         "tokens": 1, "scores": {1e-3: 0.5}, "lr": 1e-3}
    text = results.markdown({"GRU": r}, [32], [], {"lrs": [1e-3], "seeds": [0]})
    assert "| GRU | 0.069 [0.019, 0.220] (29)* |" in text
    assert "Cells read `accuracy [95% Wilson interval] (items)`" in text and "Student-t" not in text


@pytest.mark.parametrize("flag, value, message", [
    ("--lrs", "1e-3,1e-3", "--lrs='1e-3,1e-3' names 0.001 twice; expected distinct values"),
    ("--lrs", "1e-3,0.001", "--lrs='1e-3,0.001' names 0.001 twice"),
    ("--mechanisms", "GRU,GRU", "--mechanisms='GRU,GRU' names 'GRU' twice; expected distinct values"),
    ("--mechanisms", "frontier,GRU", "--mechanisms='frontier,GRU' names 'GRU' twice"),
    ("--test-configs", "", "--test-configs='' names nothing; expected a comma-separated list"),
    ("--test-configs", "32,32", "--test-configs='32,32' names 32 twice"),
])
def test_list_options_refuse_duplicates_and_nothing(flag, value, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        _results().main([flag, value, "--out", str(tmp_path / "runs"), "--docs", str(tmp_path / "d"),
                         "--records", str(tmp_path / "r")])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=30, deadline=None)
@given(data=st.data(), flag=st.sampled_from(["--lrs", "--mechanisms", "--test-configs", "--seeds"]))
def test_any_list_option_with_a_repeat_is_refused(data, flag, tmp_path_factory):
    import contextlib
    import io

    pool = {"--lrs": ["1e-3", "3e-3", "1e-2"], "--mechanisms": ["GRU", "LSTM", "Mamba2"],
            "--test-configs": ["32", "64", "256"], "--seeds": ["0", "1", "2"]}[flag]
    items = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
    items = data.draw(st.permutations([*items, data.draw(st.sampled_from(items))]))
    tmp = tmp_path_factory.mktemp("dup")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        _results().main([flag, ",".join(items), "--out", str(tmp / "runs"), "--docs", str(tmp / "d"),
                         "--records", str(tmp / "r")])
    assert stop.value.code == 2
    line = err.getvalue().strip().splitlines()[-1]
    assert f"{flag}={','.join(items)!r}" in line and ("twice" in line or "distinct" in line)
    assert list(tmp.iterdir()) == []


def test_the_runs_table_shows_each_seeds_training_tokens():
    """Seeds train on streams of different lengths (6,815,568 / 6,876,672 / 6,774,480 tokens for
    every frontier mechanism): the runs table reads their min–max, and FLOPs likewise."""
    cells = _results().token_cells
    r = {"n_params": 100, "tokens": 6_876_672,
         "seeds": {"0": {"tokens": 6_815_568}, "1": {"tokens": 6_876_672}, "2": {"tokens": 6_774_480}}}
    assert cells(r) == ("6,774,480–6,876,672", "4.06e+09–4.13e+09")
    assert cells({**r, "seeds": {"0": {"tokens": 10}, "1": {"tokens": 10}}}) == ("10", "6e+03")
    assert cells({"n_params": 1, "tokens": 7, "seeds": {}}) == ("7", "42")
    # the free bandit's seeds: 6,722,544-6,727,920 tokens, 4.60e12 FLOPs to three digits in each
    assert cells({"n_params": 114_056, "tokens": 0, "seeds": {"0": {"tokens": 6_722_544}, "1": {"tokens": 6_727_920}}}) == (
        "6,722,544–6,727,920", "4.6e+12")
