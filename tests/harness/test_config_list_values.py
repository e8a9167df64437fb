"""``--data.*_configs`` refusals: the suggested list is one the option takes (``[n32]``, never
``[None]``), an empty value names the option and the expected form, and a list holding a bad
element names that element, not the whole list."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.cli_lines import fit_error

ALLOWED = "expected one of 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384 (or 'n<N>')"




def test_the_reported_null_suggests_a_list_the_option_takes(capsys):
    assert fit_error(capsys, "--data.train_configs=null") == ("swar-bench: error: --data.train_configs=null: expected a list, e.g. "
                                      "--data.train_configs=[n32]")


def test_the_reported_empty_value_names_the_option_and_form(capsys):
    assert fit_error(capsys, "--data.train_configs=") == "swar-bench: error: --data.train_configs=: expected a list, e.g. --data.train_configs=[n32]"


def test_the_reported_bad_elements_are_named(capsys):
    assert fit_error(capsys, "--data.train_configs=[3.5]") == f"swar-bench: error: --data.train_configs=[3.5]: element 3.5 is not an allowed N; {ALLOWED}"
    assert fit_error(capsys, "--data.train_configs=[[32]]") == (f"swar-bench: error: --data.train_configs=[[32]]: element [32] is not an allowed "
                                        f"N; {ALLOWED}")


BAD = st.one_of(st.floats(min_value=1, max_value=1e4, allow_nan=False).filter(lambda x: x != int(x)).map(repr),
                st.sampled_from([32, 64, 100]).map(lambda n: f"[{n}]"))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(good=st.lists(st.sampled_from(["32", "n64", "128"]), max_size=2), bad=BAD)
def test_any_list_with_a_bad_element_names_the_element(capsys, good, bad):
    value = "[" + ", ".join([*good, bad]) + "]"
    line = fit_error(capsys, f"--data.train_configs={value}")
    assert line == f"swar-bench: error: --data.train_configs={value}: element {bad.replace(' ', '')} is not an allowed N; {ALLOWED}"
