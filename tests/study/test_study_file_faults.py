"""Fresh-user faults of the study files (both kinds: a study of the passkey task, an MQAR study):
each reported input as a test with its exact line, and a property over its kind.

- Numbers: `learning_rates: [1e-3, 3e-3]` was refused, YAML 1.1 reading `1e-3` (no dot) as text
  where the fit configs read a number. Every number field takes a number as a user writes it.
- Entry names: an MQAR study's errors said `entries[4]` where a study of the task says
  `mechanisms[0] (GRU_tiny)`. Both name the entry when its name is known.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from swar_bench.study.cli import main
from swar_bench.study.mqar import load_mqar_study
from swar_bench.study.spec import StudyError, load_study
from tests.study import test_config_files, test_curve_points  # noqa: F401 - imported before any @given runs
from tests.study.test_study_cli import ROOT, _study

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
RECIPE = str(ROOT / "configs/mqar/figure2_t64.yaml")  # 64 epochs


def _error(capsys, *argv: str) -> tuple[int, str]:
    """``swar-bench study ARGV`` in this process: (exit status, its stderr)."""
    status = main(list(argv))
    return status, capsys.readouterr().err


def passkey_study(tmp: Path) -> dict:
    """The tiny study of ``test_study_cli._study`` as a mapping (its budget config written)."""
    return yaml.safe_load(_study(tmp).read_text())


def mqar_study(tmp: Path, entries: int = 1) -> dict:
    return {
        "task": "mqar", "name": "m", "records": str(tmp / "records"), "out": str(tmp / "runs"),
        "entries": [{"name": f"E{i}_T64_d64", "config": RECIPE, "d_model": 64} for i in range(entries)],
    }


def write(tmp: Path, study: dict) -> Path:
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def put(study: dict, place: tuple, value) -> dict:
    """``study`` with ``value`` at ``place`` (keys and list indices; mappings made on the way)."""
    node = study
    for key in place[:-1]:
        node = node[key] if isinstance(node, list) else node.setdefault(key, {})
    node[place[-1]] = value
    return study


# ----------------------------------------------------------------- numbers as a user writes them


def test_the_reported_learning_rates_load_in_both_kinds_of_study(tmp_path, capsys):
    """The reported input, as written: `1e-3` is text to YAML 1.1 and a number to `swar-bench fit`."""
    study = _study(tmp_path, "learning_rates: [1e-3, 3e-3]\nextra_learning_rates: {below: [1e-4], above: [3e-2]}\n")
    spec = load_study(study)
    assert (spec.learning_rates, spec.extra_below, spec.extra_above) == ((1e-3, 3e-3), (1e-4,), (3e-2,))
    assert main(["status", str(study)]) == 0
    assert "GRU_tiny_lr0.001_seed0" in capsys.readouterr().out
    mqar = tmp_path / "mqar.yaml"
    mqar.write_text(
        f"task: mqar\nname: m\nrecords: {tmp_path / 'r'}\nout: {tmp_path / 'o'}\nlearning_rates: [1e-3, 1e-2]\n"
        f"solved_at: 99e-2\nentries:\n  - {{name: A_T64_d64, config: {RECIPE}, d_model: 64, learning_rates: [2e-3],\n"
        "     published: {mixer: Attention, accuracy: 98e-2}}\n"
    )
    loaded = load_mqar_study(mqar)
    assert (loaded.learning_rates, loaded.solved_at) == ((1e-3, 1e-2), 0.99)
    assert (loaded.entries[0].learning_rates, loaded.entries[0].published.accuracy) == ((2e-3,), 0.98)


def test_text_that_is_no_number_is_named_with_what_was_expected(tmp_path, capsys):
    study = _study(tmp_path, "learning_rates: [1e-3, abc]\n")
    status, err = _error(capsys, "run", str(study))
    assert status == 2 and err == (
        f"swar-bench study run: error: {study}: learning_rates[1]='abc' is invalid; expected a positive learning "
        "rate, a number such as 1e-3\n"
    )
    mqar = write(tmp_path, put(mqar_study(tmp_path), ("learning_rates",), ["1e-3", "abc"]))
    status, err = _error(capsys, "status", str(mqar))
    assert status == 2 and err == (
        f"swar-bench study status: error: {mqar}: learning_rates[1]='abc'; expected a positive number such as 1e-3\n"
    )


@pytest.mark.parametrize(("extra", "line"), [
    ("seeds: 1.5\n", "seeds=1.5 is invalid; expected an integer from 1 to 1000"),
    ("seeds: '1.5'\n", "seeds='1.5' is invalid; expected an integer from 1 to 1000"),
    ("seed_index_stride: 1e3\n", "seed_index_stride='1e3' is invalid; expected an integer >= 1"),
    ("gate: {ar_valid: yes}\n", "gate.ar_valid=True is invalid; expected a number in [0, 1]"),
    ("gate: {ar_valid: .nan}\n", "gate.ar_valid=nan is invalid; expected a number in [0, 1]"),
])
def test_an_integer_field_takes_no_fraction_and_no_field_takes_a_bool(tmp_path, capsys, extra, line):
    study = _study(tmp_path, extra)
    status, err = _error(capsys, "status", str(study))
    assert status == 2 and err == f"swar-bench study status: error: {study}: {line}\n"


def test_integer_text_is_an_integer_as_fit_reads_it(tmp_path):
    """`seeds: "4"` is 4, as `swar-bench fit` (jsonargparse) reads `"4"` for an int option."""
    spec = load_study(_study(tmp_path, "seeds: '4'\nselection_seeds: ' 1 '\n"))
    assert (spec.seeds, spec.selection_seeds) == (4, 1) and isinstance(spec.seeds, int)
    study = mqar_study(tmp_path)
    study["entries"][0].update(d_model="32", max_epochs="16")
    entry = load_mqar_study(write(tmp_path, {**study, "seed": "7"})).entries[0]
    assert (entry.d_model, entry.max_epochs) == (32, 16) and isinstance(entry.d_model, int)


RATES, FRACTION, POSITIVE = "rates", "fraction", "positive"
PASSKEY_FIELDS = {  # place: (kind, low, high for integers, the value as loaded)
    ("learning_rates",): (RATES, None, None, lambda s: s.learning_rates),
    ("extra_learning_rates", "below"): (RATES, None, None, lambda s: s.extra_below),
    ("extra_learning_rates", "above"): (RATES, None, None, lambda s: s.extra_above),
    ("mechanisms", 0, "learning_rates"): (RATES, None, None, lambda s: s.mechanisms[0].learning_rates),
    ("mechanisms", 0, "seeds"): (int, 2, 10, lambda s: s.mechanisms[0].seeds),
    ("seeds",): (int, 2, 10, lambda s: s.seeds),
    ("selection_seeds",): (int, 1, 3, lambda s: s.selection_seeds),
    ("seed_index_stride",): (int, 1, 333_333, lambda s: s.seed_index_stride),
    ("curve_points",): (int, 1, 8, lambda s: s.curve_points),
    ("gate", "ar_valid"): (FRACTION, None, None, lambda s: s.gate.ar_valid),
    ("gate", "passkey_exact"): (FRACTION, None, None, lambda s: s.gate.passkey_exact),
    ("readout_n",): (int, 1, 4096, lambda s: s.readout_n),
    ("retry_steps_factor",): (int, 2, 10, lambda s: s.retry_steps_factor),
    ("slurm", "time_min"): (int, 2, 10_000, lambda s: s.slurm.time_min),
    ("slurm", "cpus_per_task"): (int, 1, 64, lambda s: s.slurm.cpus_per_task),
    ("slurm", "gpus_per_task"): (int, 0, 8, lambda s: s.slurm.gpus_per_task),
    ("slurm", "signal_delay_s"): (int, 1, 3599, lambda s: s.slurm.signal_delay_s),
    ("slurm", "array_parallelism"): (int, 1, 1000, lambda s: s.slurm.array_parallelism),
    ("slurm", "mem_gb"): (POSITIVE, None, None, lambda s: s.slurm.mem_gb),
}
MQAR_FIELDS = {
    ("learning_rates",): (RATES, None, None, lambda s: s.learning_rates),
    ("entries", 0, "learning_rates"): (RATES, None, None, lambda s: s.entries[0].learning_rates),
    ("solved_at",): (POSITIVE, None, None, lambda s: s.solved_at),  # at most 1
    ("entries", 0, "published", "accuracy"): (FRACTION, None, None, lambda s: s.entries[0].published.accuracy),
    ("entries", 0, "d_model"): (int, 1, 512, lambda s: s.entries[0].d_model),
    ("entries", 0, "max_epochs"): (int, 1, 64, lambda s: s.entries[0].max_epochs),
    ("seed",): (int, 0, 2**40, lambda s: s.seed),
}
FIELDS = [("passkey", p, *f) for p, f in PASSKEY_FIELDS.items()] + [("mqar", p, *f) for p, f in MQAR_FIELDS.items()]
FORMATS = {  # how a user may write a float: YAML 1.1 reads some as text, each is a number to fit
    "repr": repr, "e": "{:e}".format, "E": "{:E}".format, "short e": "{:.0e}".format, "2e": "{:.2e}".format,
    "g": "{:g}".format,
}


def _study_with(tmp: Path, kind: str, place: tuple, value) -> Path:
    study = passkey_study(tmp) if kind == "passkey" else mqar_study(tmp)
    if place[-1] == "accuracy":
        put(study, place[:-1], {"mixer": "Attention"})
    return write(tmp, put(study, place, value))


def _load(kind: str, path: Path):
    return load_study(path) if kind == "passkey" else load_mqar_study(path)


@SETTINGS
@given(data=st.data(), field=st.sampled_from(FIELDS), fmt=st.sampled_from(sorted(FORMATS)), as_text=st.booleans())
def test_every_number_field_takes_a_number_as_a_user_writes_it(tmp_path_factory, data, field, fmt, as_text):
    """Any value in range, as a YAML number or as text (`1e-3`, `"16"`), loads as the number it
    writes; an integer field keeps an int."""
    kind, place, what, low, high, loaded = field
    text = FORMATS[fmt]
    if what is int:
        n = data.draw(st.integers(low, high))
        value, expected = (str(n) if as_text else n), n
    else:
        floats = st.floats(1e-9 if what is not FRACTION else 0.0, 1.0 if what is not RATES else 1e3)
        if what == RATES:  # distinct as the MQAR run names tell them apart (3 significant digits)
            xs = data.draw(st.lists(floats, min_size=1, max_size=3, unique_by=lambda x: f"{float(text(x)):.3g}"))
        else:
            xs = [data.draw(floats)]
        written = [text(x) if as_text else float(text(x)) for x in xs]
        value = written if what == RATES else written[0]
        expected = tuple(float(text(x)) for x in xs) if what == RATES else float(text(xs[0]))
    spec = _load(kind, _study_with(tmp_path_factory.mktemp("n"), kind, place, value))
    assert loaded(spec) == expected and type(loaded(spec)) is type(expected)


NOT_NUMBERS = st.one_of(
    st.booleans(), st.sampled_from([math.nan, math.inf, -math.inf, "inf", "nan", "0x10", "1,5", "1e-3.0", ""]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=6),
)
NOT_INTEGERS = st.one_of(NOT_NUMBERS, st.sampled_from(["1.5", "1e3", "16.0", 16.0, 2.5]))


@SETTINGS
@given(data=st.data(), field=st.sampled_from(FIELDS))
def test_every_number_field_refuses_what_is_no_number_in_one_line_naming_it(tmp_path_factory, data, field):
    """Text that is no number, a bool, NaN or infinity (and a fraction for an integer field) is
    refused in one line that names the value and what was expected."""
    kind, place, what, *_ = field
    bad = data.draw(NOT_INTEGERS if what is int else NOT_NUMBERS)
    value = [1e-3, bad] if what == RATES else bad
    with pytest.raises(StudyError) as err:
        _load(kind, _study_with(tmp_path_factory.mktemp("b"), kind, place, value))
    line = str(err.value)
    assert "\n" not in line and "; expected " in line
    assert (f"{place[-1]}[1]={bad!r}" if what == RATES else repr(bad)) in line


# ----------------------------------------------------------------- an entry's errors name it


def test_the_reported_mqar_entry_is_named(tmp_path, capsys):
    """The reported input: the fifth entry, `Mamba_T64_d64`, was named only `entries[4]`."""
    study = mqar_study(tmp_path, entries=4)
    study["entries"].append({"name": "Mamba_T64_d64", "config": RECIPE, "d_model": 0})
    path = write(tmp_path, study)
    status, err = _error(capsys, "status", str(path))
    assert status == 2 and err == (
        f"swar-bench study status: error: {path}: entries[4] (Mamba_T64_d64): d_model=0; expected an integer >= 1\n"
    )


ENTRY_FAULTS = {  # an entry's key: a bad value of it
    "config": "nope.yaml", "overlay": "nope.yaml", "d_model": -1, "published": {"mixer": 1},
    "learning_rates": [], "max_epochs": 65, "colour": 1,
}
MECHANISM_FAULTS = {"seeds": 0, "learning_rates": [-1], "init_args": 3, "config": "nope.yaml", "colour": 1}
NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,12}", fullmatch=True)


@SETTINGS
@given(name=NAMES, key=st.sampled_from(sorted(ENTRY_FAULTS)), at=st.integers(0, 2))
def test_every_fault_of_a_named_mqar_entry_names_it(tmp_path_factory, name, key, at):
    tmp = tmp_path_factory.mktemp("e")
    study = mqar_study(tmp, entries=3)
    assume(name not in {e["name"] for e in study["entries"]})
    study["entries"][at] = {**study["entries"][at], "name": name, key: ENTRY_FAULTS[key]}
    path = write(tmp, study)
    with pytest.raises(StudyError) as err:
        load_mqar_study(path)
    assert str(err.value).startswith(f"{path}: entries[{at}] ({name}): ") and "\n" not in str(err.value)


@SETTINGS
@given(name=NAMES, key=st.sampled_from(sorted(MECHANISM_FAULTS)))
def test_every_fault_of_a_named_mechanism_names_it(tmp_path_factory, name, key):
    tmp = tmp_path_factory.mktemp("m")
    study = passkey_study(tmp)
    study["mechanisms"][0].update(name=name, **{key: MECHANISM_FAULTS[key]})
    if key == "config":
        del study["mechanisms"][0]["class_path"]
    path = write(tmp, study)
    with pytest.raises(StudyError) as err:
        load_study(path)
    assert re.match(rf"{re.escape(str(path))}: mechanisms\[0\] \({re.escape(name)}\)[:=]", str(err.value))


def test_the_reported_huge_seed_count_is_one_line(tmp_path, capsys):
    """Reported: `seeds: 99999999999` made `study status` run out of memory planning the runs (a
    MemoryError traceback). Now one line naming the field and the range, before any plan."""
    study = _study(tmp_path, "seeds: 99999999999\n")
    assert main(["status", str(study)]) == 2
    assert capsys.readouterr().err == (
        f"swar-bench study status: error: {study}: seeds=99999999999 is invalid; expected an integer from 1 to 1000\n")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["seeds", "selection_seeds", "mechanism seeds"]),
       count=st.one_of(st.integers(1001, 10**15), st.integers(1, 1000)))
def test_every_seed_count_loads_exactly_when_it_is_within_the_bound(tmp_path_factory, field, count):
    """The kind: any seed count of a study file (the study's, the selection's, one mechanism's):
    above ``MAX_SEEDS`` one line naming it, never a plan of that many runs; within it, no
    refusal about the count."""
    from swar_bench.study.fields import MAX_SEEDS

    tmp = tmp_path_factory.mktemp("seeds")
    if field == "mechanism seeds":
        study = _study(tmp, "", f"  - name: GRU_tiny\n    class_path: GRU\n    init_args: {{d_model: 8, n_layers: 1}}\n"
                                f"    seeds: {count}\n")
    else:
        study = _study(tmp, f"{field}: {count}\n" + ("seeds: 1000\n" if field == "selection_seeds" else ""))
    try:
        spec = load_study(study)
    except StudyError as err:
        assert "\n" not in str(err)
        if count > MAX_SEEDS:
            assert f"seeds={count} is invalid; expected an integer from 1 to {MAX_SEEDS}" in str(err)
        else:  # a refusal for another reason (fewer seeds than the selection uses), never the count's
            assert "expected an integer from 1 to" not in str(err)
        return
    assert count <= MAX_SEEDS and all(len(spec.seeds_of(m)) <= MAX_SEEDS for m in spec.mechanisms)
