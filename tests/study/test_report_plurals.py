"""The report and the site said "1 seeds" (and "2 seed(s)", "1 runs to do", ...): every count in
their text now agrees with its noun, for any count."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study import provenance, site
from swar_bench.study.report import collect, markdown
from swar_bench.study.spec import load_study
from tests.study.test_report import BASE

NOUNS = ("seed", "judged seed", "selection fit", "fit", "run", "rate", "query")
PLURALS = {"query": "queries"}


def _plural_of(noun: str) -> str:
    return PLURALS.get(noun, noun + "s")


def bad_counts(text: str) -> list[str]:
    """Every count in ``text`` whose noun disagrees with it ("1 seeds", "2 seed"), and every "(s)"."""
    nouns = "|".join(sorted(NOUNS, key=len, reverse=True))
    plurals = "|".join(sorted(map(_plural_of, NOUNS), key=len, reverse=True))
    found = re.findall(r"\w*\(s\)", text)
    found += re.findall(rf"(?<![\w.,])1 (?:{plurals})\b", text)
    found += [
        m.group(0)
        for m in re.finditer(rf"(?<![\w.,])(\d[\d,]*) (?:{nouns})\b(?!\()", text)
        if m.group(1) != "1"
    ]
    return found


def test_bad_counts_finds_the_reported_faults():
    assert bad_counts("3 seeds per point; 1 seed; 2/3 seeds; 1,024 queries") == []
    assert bad_counts("1 seeds per point") == ["1 seeds"]
    assert bad_counts("over 2 seed(s) and 6 fit(s)") == ["seed(s)", "fit(s)"]
    assert bad_counts("2 run to do, 1/1 seeds, 0 query") == ["1 seeds", "2 run", "0 query"]


def _study(tmp_path: Path, seeds: int, selection: int, rates: int):
    (tmp_path / "base.yaml").write_text(BASE)
    grid = ", ".join(("1.0e-3", "3.0e-3")[:rates])
    path = tmp_path / "study.yaml"
    path.write_text(
        f"name: toy\nconfig: {tmp_path / 'base.yaml'}\nrecords: {tmp_path / 'records'}\nout: {tmp_path / 'runs'}\n"
        f"learning_rates: [{grid}]\nextra_learning_rates: {{below: [], above: []}}\n"
        f"selection_seeds: {selection}\nseeds: {seeds}\nreadout_n: 256\n"
        "mechanisms:\n  - {name: A, class_path: GRU}\n"
    )
    (tmp_path / "records").mkdir()
    return load_study(path)


def _write(records: Path, name: str, passed: bool, tested: bool, stale_queries: int) -> None:
    code = provenance.code_version()
    fit = {"kind": "fit", "code": code, "score": 0.6 if passed else 0.3, "state_bytes": 64, "n_params": 10,
           "flops_per_token": 1.0, "curve": f"{name}.curve.csv",
           "gate": {"n_writes": 32, "ar_valid": 0.9 if passed else 0.1, "passkey_exact": 0.0, "passed": passed}}
    (records / f"{name}.fit.json").write_text(json.dumps(fit))
    (records / f"{name}.curve.csv").write_text("step,n_writes,answer_type,accuracy\n9,32,ar_valid,0.5\n")
    if tested:
        rows = [[n, kind, 4, 3] for n in (32, 256) for kind in ("passkey_exact", "ar_valid", "ar_expired_stale")]
        ages = [[256, "33-64", 33, 64, stale_queries, stale_queries]]
        test = {"kind": "test", "code": code, "accuracy": rows, "accuracy_by_key_age": ages}
        (records / f"{name}.test.json").write_text(json.dumps(test))


def test_one_seed_per_point_is_singular(tmp_path):
    """The reported input: a study of one seed; the report's protocol line, exactly."""
    spec = _study(tmp_path, seeds=1, selection=1, rates=1)
    text = markdown(spec, collect(spec), [32, 256])
    assert (
        "Protocol: learning rates 0.001 (extended by none below and none above when a pick is at an edge), "
        "chosen on the mean selection score of seed 0; 1 seed per point unless the row says otherwise, each on "
        "its own training examples; gate: validation at the shortest training N, ar_valid ≥ 0.5 or "
        "passkey_exact ≥ 0.9; read-out at n256."
    ) in text.splitlines()
    assert "- A: not started (1 selection fit to do)" in text.splitlines()


def _site_text(spec, folder: Path, monkeypatch) -> str:
    """The site's HTML pages (figures left out: their text is not the site's words)."""
    monkeypatch.setattr(site, "_save", lambda fig, path: path.write_bytes(b""))
    for plot in ("plot_frontier", "plot_mechanism_curves", "plot_per_n"):
        monkeypatch.setattr(site, plot, lambda *args: None)
    folder.mkdir()
    return "\n".join(p.read_text() for p in site.render(spec, folder) if p.suffix == ".html")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seeds=st.integers(1, 3),
    data=st.data(),
    rates=st.integers(1, 2),
    passed=st.booleans(),
    stale_queries=st.integers(0, 2),
)
def test_every_count_of_the_report_and_site_agrees_with_its_noun(
    tmp_path_factory, monkeypatch, seeds, data, rates, passed, stale_queries
):
    """Any seeds, selection seeds, grid size and records done so far (none, part of the selection,
    part of the rest, all tested or not): no "1 seeds", no "2 seed", no "(s)" in the report or the
    site."""
    tmp = tmp_path_factory.mktemp("p")
    selection = data.draw(st.integers(1, seeds), label="selection_seeds")
    spec = _study(tmp, seeds, selection, rates)
    records = Path(spec.records)
    done_selection = data.draw(st.integers(0, selection), label="selection fits done per rate")
    for lr in ("0.001", "0.003")[:rates]:
        for s in range(done_selection):
            _write(records, f"A_lr{lr}_seed{s}", passed, passed, stale_queries)
    if done_selection == selection:  # the rate is chosen (the first on a tie): the other seeds
        for s in range(selection, data.draw(st.integers(selection, seeds), label="seeds done")):
            _write(records, f"A_lr0.001_seed{s}", passed, data.draw(st.booleans(), label="tested"), stale_queries)
    text = markdown(spec, collect(spec), [32, 256])
    with monkeypatch.context() as m:
        text += _site_text(spec, tmp / "site", m)
    assert bad_counts(text) == []
