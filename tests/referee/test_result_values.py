"""`referee compare` and `verdict` refuse a result whose numbers cannot have been measured
(fault: a cell with `"accuracy": 7.5` printed `7.50 [0.94, 1.00]`; `per_probe.correct` 5 of a
count of 1 gave a verdict accuracy of 5.000; `count: -5` and a NaN accuracy were read)."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.referee.table import RANGES, check_result
from tests.test_repeated_options import _error_lines, two_results  # noqa: F401 - a fixture


@pytest.fixture(scope="module")
def a_result(two_results):  # noqa: F811 - the fixture imported above
    return json.loads(two_results[0].read_text())


REPORTED = [("accuracy", 7.5, "suites.needle[0].accuracy is 7.5 (float), not an accuracy in [0, 1]"),
            ("count", -5, "suites.needle[0] has count -5 and correct"),
            ("accuracy", math.nan, "suites.needle[0].accuracy is nan (float), not an accuracy in [0, 1]")]


@pytest.mark.parametrize(("key", "value", "words"), REPORTED, ids=[f"{k}={v}" for k, v, _ in REPORTED])
def test_the_reported_cells_are_refused(a_result, key, value, words):
    bad = copy.deepcopy(a_result)
    bad["suites"]["needle"][0][key] = value
    with pytest.raises(ValueError) as err:
        check_result(bad, "r.json")
    assert str(err.value).startswith(f"r.json: {words}"), err.value


def test_the_reported_per_probe_outcomes_are_refused_by_verdict(two_results, tmp_path, capsys):  # noqa: F811
    bad = json.loads(two_results[1].read_text())
    probes = bad["suites"]["needle"][0]["per_probe"]
    probes["count"][0], probes["correct"][0] = 1, 5
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    code, err = _error_lines(capsys, ["referee", "verdict", "--baseline", str(two_results[0]), "--challenger", str(path)])
    assert code == 2 and len(err) == 1, err
    assert "probe 0 has loss" in err[0] and "count 1, correct 5; expected a finite loss >= 0 and 0 <= correct" in err[0]


OUT = {"accuracy": st.one_of(st.floats(1.0001, 100), st.floats(-100, -0.0001), st.just(math.nan)),
       "proxy_accuracy": st.one_of(st.floats(1.0001, 100), st.floats(-100, -0.0001)),
       "loss": st.one_of(st.floats(-100, -0.0001), st.just(math.nan), st.just(math.inf)),
       "correct": st.floats(-100, -0.0001)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), suite=st.sampled_from(["needle", "copy", "multi_hop"]), where=st.sampled_from(["cell", "curve"]))
def test_any_field_out_of_its_range_is_refused_naming_it_and_any_in_range_passes(a_result, data, suite, where):
    """The kind: any number field of any cell or curve point set outside the values it can hold:
    refused naming that field; set inside them: accepted."""
    bad = copy.deepcopy(a_result)
    keys = ["accuracy", "proxy_accuracy", "loss"] + (["correct"] if where == "cell" else [])
    key = data.draw(st.sampled_from(keys), label="field")
    node = bad["suites"][suite][0] if where == "cell" else bad["forgetting_curve"][0]
    low, high, _ = RANGES[key]
    inside = data.draw(st.floats(low, min(high, 1.0 if key != "loss" else 50.0)), label="inside")
    if key == "correct":
        inside = float(min(int(inside), node["count"]))
    node[key] = inside
    check_result(bad, "r.json")
    node[key] = data.draw(OUT[key], label="outside")
    with pytest.raises(ValueError) as err:
        check_result(bad, "r.json")
    path = f"suites.{suite}[0]" if where == "cell" else "forgetting_curve[0]"
    assert str(err.value).startswith(f"r.json: {path}.{key} is ") or "0 <= correct <= count" in str(err.value), err.value
