"""The MQAR study (swar_bench.study.mqar): the file, the records, resuming and the report, on a
tiny version of Zoology's recipe (vocab 64, T 16, two learning rates, two epochs)."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import mqar, mqar_report
from swar_bench.study.cli import main as study_main
from swar_bench.study.config_files import content_hash
from swar_bench.study.runner import running_marker
from swar_bench.study.spec import StudyError

STUDY = "configs/studies/mqar_zoology.yaml"


def tiny_config(tmp_path):
    with open("configs/mqar/figure2_t64.yaml") as handle:
        cfg = yaml.safe_load(handle)
    inner = cfg["model"]["mechanism"]["init_args"]["mechanism"]["init_args"]
    inner.update(vocab_size=64, flops_seq_len=16)
    cfg["model"]["mechanism"]["init_args"]["max_position_embeddings"] = 16
    cfg["model"].update(max_steps=8, tbptt_steps=16)
    cfg["data"]["mqar"].update(vocab_size=64, input_seq_len=16, num_kv_pairs=2, num_train_examples=64,
                               num_test_examples=32, cache_dir=str(tmp_path / "cache"))
    cfg["data"].update(batch_size=16, eval_batch_size=16, examples_per_epoch=64, eval_examples=32)
    cfg["trainer"].update(max_epochs=2, enable_progress_bar=False)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_study(tmp_path, **changes):
    study = {
        "task": "mqar", "name": "tiny", "records": str(tmp_path / "records"), "out": str(tmp_path / "runs"),
        "learning_rates": [1.0e-2, 3.0e-3], "seed": 7,
        "entries": [{"name": "Att_d16", "config": str(tiny_config(tmp_path)), "d_model": 16,
                     "published": {"mixer": "Attention", "accuracy": 0.98}}],
    }
    study.update(changes)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def test_the_zoology_study_file_loads_and_sizes_its_states():
    study = mqar.load_mqar_study(STUDY)
    assert mqar.is_mqar_study(STUDY) and not mqar.is_mqar_study("configs/studies/frontier.yaml")
    assert sorted(study.learning_rates) == pytest.approx([1e-4, 4.641588833612782e-4, 2.154434690031884e-3, 1e-2])
    assert study.learning_rates[0] == pytest.approx(2.154434690031884e-3)
    facts = mqar.entry_facts(study.entry("Attention_T64_d64"))
    # the KV cache of 2 layers after 64 tokens, float32, plus the int64 position counter
    assert facts == {"seq_len": 64, "state_bytes": 2 * 2 * 64 * 64 * 4 + 8, "n_params": facts["n_params"],
                     "mechanism": "CausalAttention"}
    gdn = mqar.merged_config(study.entry("GatedDeltaNet_T64_d64"))
    inner = gdn["model"]["mechanism"]["init_args"]["mechanism"]
    assert inner["class_path"].endswith("GatedDeltaNet") and "flops_seq_len" not in inner["init_args"]
    assert gdn["model"]["mechanism"]["init_args"]["max_position_embeddings"] == 0


@pytest.mark.parametrize(("change", "message"), [
    ({"learning_rates": [0.0]}, "learning_rates[0]=0.0; expected a positive number such as 1e-3"),
    ({"learning_rates": []}, "learning_rates=[]; expected a non-empty list of distinct positive numbers"),
    # two rates that name the same run (3 significant digits) would share one record
    ({"learning_rates": [1.0e-2, 1.0001e-2]}, "learning_rates=[0.01, 0.010001]; expected a non-empty list of distinct"),
    ({"solved_at": 1.5}, "solved_at=1.5; expected an accuracy in (0, 1], e.g. 0.99"),
    ({"seed": -1}, "seed=-1; expected an integer >= 0"),
    ({"entries": []}, "entries=[]; expected a non-empty list"),
    ({"colour": 1}, "unknown key colour"),
    ({"entries": [{"name": "x", "config": "nope.yaml", "d_model": 8}]}, "config='nope.yaml'; expected an existing config file"),
])
def test_bad_study_files_are_refused_in_one_line(tmp_path, change, message):
    with pytest.raises(StudyError, match=re.escape(message)) as err:
        mqar.load_mqar_study(write_study(tmp_path, **change))
    assert "\n" not in str(err.value)


def integer_text(text: str) -> int | None:
    """The integer a text writes (``" 16"``: 16), as a study file reads it; None for any other text."""
    return int(text.strip()) if re.fullmatch(r"[-+]?[0-9]+", text.strip()) else None


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(allow_nan=True),
                 st.text(max_size=3).filter(lambda t: integer_text(t) is None or integer_text(t) < 1)))
def test_any_width_that_is_not_a_positive_integer_is_refused(tmp_path_factory, d_model):
    tmp = tmp_path_factory.mktemp("w")
    entry = {"name": "x", "config": "configs/mqar/figure2_t64.yaml", "d_model": d_model}
    with pytest.raises(StudyError, match="d_model=.*expected an integer >= 1"):
        mqar.load_mqar_study(write_study(tmp, entries=[entry]))


def test_run_records_reuses_and_reports(tmp_path, capsys):
    path = write_study(tmp_path)
    assert study_main(["run", str(path), "--jobs", "1"]) == 0
    records = sorted((tmp_path / "records").glob("*.fit.json"))
    assert [r.name for r in records] == ["Att_d16_lr0.003.fit.json", "Att_d16_lr0.01.fit.json"]
    record = json.loads(records[1].read_text())
    assert record["kind"] == "mqar_fit" and record["lr"] == 1.0e-2 and record["seed"] == 7
    assert record["epochs"] == 2 and 0.0 <= record["accuracy"] <= 1.0
    assert record["best_accuracy"] >= record["accuracy"]
    assert record["code"]["fingerprint"] and record["environment"]["torch"]
    config = str(tmp_path / "tiny.yaml")
    assert record["config_files"] == {config: content_hash(config)}
    assert record["state_bytes"] == 2 * 2 * 16 * 16 * 4 + 8 and record["seq_len"] == 16
    assert "--model.lr=0.01" in record["command"] and "--seed_everything=7" in record["command"]
    curve = (tmp_path / "records" / record["curve"]).read_text().splitlines()
    assert curve[0] == "step,tag,value" and sum(",val/mqar/acc," in line for line in curve) == 2
    capsys.readouterr()

    # a second run finds every record and trains nothing
    assert study_main(["run", str(path)]) == 0
    assert "study: fit" not in capsys.readouterr().out
    assert study_main(["status", str(path)]) == 0
    assert capsys.readouterr().out.count(": done, accuracy") == 2

    assert study_main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "tiny.md").read_text()
    best = max(json.loads(r.read_text())["accuracy"] for r in records)
    assert "| Att_d16 | CausalAttention | 16 | 16 | 4,104 | 2/2 |" in table and f"{best:.3f} | 0.98 | Attention |" in table
    assert (tmp_path / "report" / "tiny_recall_vs_state.png").read_bytes()[:4] == b"\x89PNG"


def test_a_stopped_run_resumes_from_its_last_checkpoint(tmp_path, capsys):
    path = write_study(tmp_path, learning_rates=[1.0e-2])
    study = mqar.load_mqar_study(path)
    entry = study.entries[0]
    # the first epoch only, as a run stopped after it would have left it
    runner = mqar.MQARRunner(study, log=lambda line: None)
    first = mqar.fit_args(study, entry, 1.0e-2)


    assert subprocess.call([*mqar.SWAR_BENCH, *first, "--trainer.max_epochs=1"]) == 0
    name = mqar.run_name(entry, 1.0e-2)
    (tmp_path / "runs" / f"{name}.command").write_text(
        shlex.join(["swar-bench", *first]) + "\n")
    lines = []
    runner.log = lines.append
    record = runner.fit(entry, 1.0e-2)
    assert lines[0] == f"study: fit {name} (resumed from last.ckpt)"
    assert record["resumed"] is True and record["epochs"] == 2  # epoch 1 from before, epoch 2 now


def test_status_of_the_zoology_study_ends_with_the_summary_line_of_every_study(capsys):
    # the reported input: `study status configs/studies/mqar_zoology.yaml` had no summary line
    assert study_main(["status", STUDY]) == 0
    lines = capsys.readouterr().out.splitlines()
    study = mqar.load_mqar_study(STUDY)
    n = sum(len(study.rates(e)) for e in study.entries)
    assert len(lines) == n + 1
    done = sum(": done, accuracy" in line for line in lines)
    skipped = sum(": skipped (" in line for line in lines)
    started = sum(": started" in line for line in lines)
    to_do = sum(line.endswith(": to do") for line in lines)
    shown = ", ".join(f"{count} {state}" for count, state in (
        (done, "done"), (started, "started"), (to_do, "to do"), (skipped, "skipped")) if count)
    assert lines[-1] == f"study: {shown} ({n} runs planned now)"


@settings(max_examples=15, deadline=None)
@given(states=st.lists(st.sampled_from(["done", "running", "started", "to do"]), min_size=2, max_size=2))
def test_any_mix_of_run_states_is_counted_in_the_last_line(tmp_path_factory, states):
    """The kind: whatever the runs' states, an MQAR study's status ends with the summary line
    ``study: N done, M started, K to do (T runs planned now)`` counting them, as a frontier study's
    ends with ``study: N done, ... (T runs planned now)`` (one function, status.summary_line)."""
    tmp_path = tmp_path_factory.mktemp("mqar_status")
    study = mqar.load_mqar_study(write_study(tmp_path))
    names = [mqar.run_name(e, lr) for e in study.entries for lr in study.learning_rates]
    for name, state in zip(names, states, strict=True):
        if state == "done":
            (tmp_path / "records").mkdir(exist_ok=True)
            (tmp_path / "records" / f"{name}.fit.json").write_text(json.dumps({"accuracy": 0.5, "epochs": 1}))
        elif state == "started":
            (tmp_path / "runs" / name).mkdir(parents=True)
        elif state == "running":  # this process stands for the fit: its pid is alive
            (tmp_path / "runs" / name).mkdir(parents=True)
            running_marker(tmp_path / "runs", name).write_text(f"{socket.gethostname()} {os.getpid()}\n")
    lines = mqar_report.status_lines(study)
    counts = {s: states.count(s) for s in ("done", "running", "started", "to do") if states.count(s)}
    assert lines[-1] == f"study: {', '.join(f'{n} {s}' for s, n in counts.items())} (2 runs planned now)"
    assert [re.search(r": (done|running|started|to do)\b", line).group(1) for line in lines[:-1]] == states


def test_a_fit_is_running_while_its_process_lives(tmp_path):
    """The reported input: `study status` of an MQAR study said "to do" / "started" for the fit its
    runner was training (a frontier study's says "running"). The runner now leaves
    ``<out>/<name>.running`` (host, pid of the fit) while the fit runs and removes it when it ends;
    status reads it: a live pid is "running"."""
    study = mqar.load_mqar_study(write_study(tmp_path))
    entry = study.entries[0]
    name = mqar.run_name(entry, 1.0e-2)
    marker = running_marker(tmp_path / "runs", name)
    seen = tmp_path / "seen"
    # the fit: waits for its marker (the event), copies it for the test, and fails (exit 3)
    wait = ("import pathlib, sys, time\n"
            "marker, seen = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])\n"
            "deadline = time.monotonic() + 300\n"
            "while not marker.is_file() and time.monotonic() < deadline: time.sleep(0.01)\n"
            "seen.write_text(marker.read_text() if marker.is_file() else 'none')\n"
            "sys.exit(3)\n")
    runner = mqar.MQARRunner(study, only=["Att_d16"], log=lambda line: None)
    original = mqar.SWAR_BENCH
    mqar.SWAR_BENCH = [sys.executable, "-c", wait, str(marker), str(seen)]
    try:
        assert runner.fit(entry, 1.0e-2) is None and runner.failed == [name]
    finally:
        mqar.SWAR_BENCH = original
    host, pid = seen.read_text().split()
    assert host == socket.gethostname() and int(pid) > 0  # the fit's own pid, as a frontier study's marker
    assert not marker.exists()  # removed when the fit ended
    assert mqar_report.status_lines(study)[0] == f"{name}: to do"  # the stand-in fit made no run folder
    marker.write_text(f"{socket.gethostname()} {os.getpid()}\n")
    assert mqar_report.status_lines(study)[0] == f"{name}: running"


def _record(tmp_path, name, accuracy, lr):
    (tmp_path / "records").mkdir(exist_ok=True)
    (tmp_path / "records" / f"{name}.fit.json").write_text(json.dumps({"accuracy": accuracy, "epochs": 2, "lr": lr, "seq_len": 16, "state_bytes": 4104, "mechanism": "CausalAttention"}))


def test_a_solved_entry_skips_its_other_rates_and_says_so(tmp_path, capsys):
    # Attention T64 d64 reached 0.9991 at 2.15e-3: its other rates cannot raise its best by more than 0.0009
    path = write_study(tmp_path, solved_at=0.99, learning_rates=[1.0e-2, 3.0e-3, 1.0e-3])
    study = mqar.load_mqar_study(path)
    entry = study.entries[0]
    _record(tmp_path, mqar.run_name(entry, 1.0e-2), 0.9991, 1.0e-2)
    lines = []
    runner = mqar.MQARRunner(study, log=lines.append)
    assert runner.fit(entry, 3.0e-3) is None and not (tmp_path / "runs").exists()  # nothing trained
    assert lines == [f"study: skip {mqar.run_name(entry, 3.0e-3)}: Att_d16 is solved (accuracy 0.9991 at lr 0.01, solved_at 0.99)"]
    status = mqar_report.status_lines(study)
    assert status[1] == "Att_d16_lr0.003: skipped (Att_d16 is solved: accuracy 0.9991 at lr 0.01)"
    assert status[-1] == "study: 1 done, 2 skipped (3 runs planned now)"
    assert study_main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "tiny.md").read_text()
    assert "| 1/3 (solved) | 0.01 | 2 / 2 | 0.999 | 0.98 | Attention |" in table and "within 0.01 of its score" in table


def test_runs_go_rate_by_rate_across_entries_with_each_entry_s_own_rates(tmp_path, monkeypatch):
    config = str(tiny_config(tmp_path))
    entries = [{"name": "A", "config": config, "d_model": 16},
               {"name": "B", "config": config, "d_model": 16, "learning_rates": [5.0e-3, 1.0e-3]}]
    study = mqar.load_mqar_study(write_study(tmp_path, entries=entries, learning_rates=[1.0e-2, 3.0e-3, 1.0e-4]))
    assert study.rates(study.entry("B")) == (5.0e-3, 1.0e-3)
    calls = []
    monkeypatch.setattr(mqar.MQARRunner, "fit", lambda self, e, lr: calls.append((e.name, lr)))
    assert mqar.MQARRunner(study, log=lambda line: None).run() == 0
    assert calls == [("A", 1.0e-2), ("B", 5.0e-3), ("A", 3.0e-3), ("B", 1.0e-3), ("A", 1.0e-4)]
    assert len(mqar_report.status_lines(study)) == 5 + 1


@settings(max_examples=25, deadline=None)
@given(accuracies=st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=3, max_size=3),
       solved_at=st.one_of(st.none(), st.floats(0.01, 1.0)))
def test_a_run_without_a_record_is_skipped_exactly_when_another_rate_reached_solved_at(
        tmp_path_factory, accuracies, solved_at):
    """The kind: whatever the records and the threshold, a rate without a record is skipped iff a
    record of its entry has final accuracy >= solved_at; runs with records stay done."""
    tmp_path = tmp_path_factory.mktemp("solved")
    study = mqar.load_mqar_study(write_study(tmp_path, solved_at=solved_at, learning_rates=[1.0e-2, 3.0e-3, 1.0e-3]))
    entry = study.entries[0]
    for lr, acc in zip(study.learning_rates, accuracies, strict=True):
        if acc is not None:
            _record(tmp_path, mqar.run_name(entry, lr), acc, lr)
    solved = solved_at is not None and any(a is not None and a >= solved_at for a in accuracies)
    states = [re.search(r": (done|skipped|to do)\b", line).group(1) for line in mqar_report.status_lines(study)[:-1]]
    assert states == ["done" if a is not None else ("skipped" if solved else "to do") for a in accuracies]


def _an_accuracy(text: str) -> bool:
    try:
        return 0 < float(text) <= 1
    except ValueError:
        return False


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True), st.booleans(),
                 st.text(max_size=3).filter(lambda t: not _an_accuracy(t)), st.lists(st.floats(0.1, 0.9), max_size=1)))
def test_any_solved_at_that_is_not_an_accuracy_is_refused_in_one_line(tmp_path_factory, solved_at):
    # a number written as text ("1", "0.5": how PyYAML reads 1e-3) is a number: the text drawn is none
    with pytest.raises(StudyError, match=r"solved_at=.*; expected an accuracy in \(0, 1\]") as err:
        mqar.load_mqar_study(write_study(tmp_path_factory.mktemp("s"), solved_at=solved_at))
    assert "\n" not in str(err.value)


def _budget_entry(tmp_path, max_epochs):
    return {"name": "Att_d16", "config": str(tiny_config(tmp_path)), "d_model": 16, "max_epochs": max_epochs}


def test_an_entry_budget_stops_its_runs_and_the_report_says_so(tmp_path, capsys):
    """``max_epochs: 1`` on an entry of a 2-epoch recipe: its run stops after 1 epoch (the
    command says so), status and the report name the budget beside the recipe's epochs."""
    path = write_study(tmp_path, learning_rates=[1.0e-2], entries=[_budget_entry(tmp_path, 1)])
    study = mqar.load_mqar_study(path)
    assert study.entries[0].max_epochs == 1 and mqar.recipe_epochs(study.entries[0]) == 2
    assert mqar.fit_args(study, study.entries[0], 1.0e-2)[-1] == "--trainer.max_epochs=1"
    assert study_main(["run", str(path), "--jobs", "1"]) == 0
    record = json.loads((tmp_path / "records" / "Att_d16_lr0.01.fit.json").read_text())
    assert record["epochs"] == 1 and record["command"].endswith(" --trainer.max_epochs=1")
    capsys.readouterr()
    assert study_main(["status", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"Att_d16_lr0.01: done, accuracy {record['accuracy']:.4f} after 1 epoch (the entry's budget)")
    assert study_main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "tiny.md").read_text()
    assert f"| 0.01 | 1 / 1 (budget; recipe 2) | {record['accuracy']:.3f} |" in table
    assert "an accuracy below the early stop's is what it reached in that many epochs" in table


@pytest.mark.parametrize("max_epochs", [0, 3, True, 1.5, "16"])
def test_a_budget_that_is_not_1_to_the_recipes_epochs_is_refused_in_one_line(tmp_path, max_epochs):
    path = write_study(tmp_path, entries=[_budget_entry(tmp_path, max_epochs)])
    with pytest.raises(StudyError) as err:
        mqar.load_mqar_study(path)
    assert str(err.value) == (
        f"{path}: entries[0] (Att_d16): max_epochs={max_epochs!r}; expected an integer from 1 to 2 (the recipe's "
        "trainer.max_epochs)")


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.integers(-5, 70), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3), st.none()))
def test_any_budget_loads_exactly_when_it_is_an_integer_within_the_recipe(tmp_path_factory, max_epochs):
    """Against the Zoology recipe's 64 epochs: 1..64 (or its text) load (None: no budget), anything
    else is refused."""
    tmp = tmp_path_factory.mktemp("b")
    entry = {"name": "x", "config": "configs/mqar/figure2_t64.yaml", "d_model": 8, "max_epochs": max_epochs}
    path = write_study(tmp, entries=[entry])
    value = integer_text(max_epochs) if isinstance(max_epochs, str) else max_epochs  # "16" is 16, as fit reads it
    ok = max_epochs is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 64)
    if ok:
        assert mqar.load_mqar_study(path).entries[0].max_epochs == value
    else:
        with pytest.raises(StudyError, match=r"max_epochs=.*; expected an integer from 1 to 64") as err:
            mqar.load_mqar_study(path)
        assert "\n" not in str(err.value)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=st.integers(1, 3), rates=st.integers(1, 3))
def test_a_refused_fit_stops_the_mqar_study(tmp_path_factory, monkeypatch, jobs, rates):
    """A fit that refuses its command (exit 2: a bad value only the fit's parser finds) stops the
    study: no fit starts after it (at most ``jobs`` ran), its line is quoted, the study exits 2."""
    import sys

    tmp = tmp_path_factory.mktemp("r")
    said = "swar-bench: error: --config=tiny.yaml: model.lr=fast is invalid; expected a positive finite learning rate"
    monkeypatch.setattr(mqar, "SWAR_BENCH", [sys.executable, "-c", f"import sys; print({said!r}); sys.exit(2)"])
    path = write_study(tmp, learning_rates=[1.0e-2, 3.0e-3, 1.0e-3][:rates])
    lines, progress = [], []  # the error channel (stderr), the progress channel (stdout)
    assert mqar.MQARRunner(mqar.load_mqar_study(path), jobs=jobs, log=progress.append, log_error=lines.append).run() == 2
    assert all(ln.startswith("study: fit ") and "refused" not in ln for ln in progress), progress
    started = sorted((tmp / "runs").glob("*.fit.log"))
    assert 1 <= len(started) <= jobs and not list((tmp / "records").glob("*.fit.json"))
    refused = [ln for ln in lines if "refused its command" in ln]
    assert refused and refused[0].endswith(
        "(exit 2): --config=tiny.yaml: model.lr=fast is invalid; expected a positive finite learning rate; no other run starts: "
        "fix the study file or its config files and run again")
    assert lines[-1].startswith("study: stopped (exit 2: a run refused its command")


def _row(study, records, solved=False):
    e = study.entries[0]
    best = max(records, key=lambda r: r["accuracy"], default=None)
    return {"entry": e, "records": records, "best": best, "rates": len(study.rates(e)), "solved": solved,
            "score": best["accuracy"] if best else float("nan")}


def test_an_entry_that_ran_every_rate_without_the_early_stop_is_reported_as_not_solved_at_this_budget(tmp_path):
    """The report says in words which entries did not learn the task at this budget, and whether
    the best rate sits at the grid's edge; never "cannot"."""
    study = mqar.load_mqar_study(write_study(tmp_path, solved_at=0.99))
    top, low = {"lr": 1.0e-2, "epochs": 2, "accuracy": 0.973}, {"lr": 3.0e-3, "epochs": 2, "accuracy": 0.93}
    [blank, line] = mqar_report.unsolved_lines(study, [_row(study, [top, low])])
    assert blank == "" and line == (
        "Not solved at this budget (every rate run, none reached 0.99): Att_d16 reached 0.973 (best of 2 rates, "
        "2 epochs of 2); its best rate 0.01 is the largest of its grid (a rate beyond it was not run). That is what "
        "the run reached with these rates and epochs, not a claim that the mechanism cannot solve the task.")
    wider = mqar.load_mqar_study(write_study(tmp_path, solved_at=0.99, learning_rates=[1.0e-2, 3.0e-3, 1.0e-1]))
    [_, interior] = mqar_report.unsolved_lines(wider, [_row(wider, [top, low, {"lr": 1.0e-1, "epochs": 2, "accuracy": 0.1}])])
    assert "reached 0.973 (best of 3 rates, 2 epochs of 2)." in interior and "grid" not in interior
    # a rate still to run, a solved entry, a study without an early stop: nothing to say yet
    assert mqar_report.unsolved_lines(study, [_row(study, [top])]) == []
    assert mqar_report.unsolved_lines(study, [_row(study, [top, low], solved=True)]) == []
    no_stop = mqar.load_mqar_study(write_study(tmp_path, solved_at=None))
    assert mqar_report.unsolved_lines(no_stop, [_row(no_stop, [top, low])]) == []
