"""A refused value is quoted as it was typed, whole: an unclosed JSON mapping given to a class-typed
option is called unclosed (not an unknown class), a value with spaces is not cut at the first one,
and ``null`` is not echoed as Python's ``None``."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.config_errors import open_brackets, typed_value
from tests.harness.cli_lines import fit_error


def test_the_reported_unclosed_logger_mapping_is_called_unclosed_and_quoted_whole(capsys):
    assert fit_error(capsys, '--trainer.logger={"class_path": "TensorBoardLogger"') == (
        "swar-bench: error: unclosed mapping '{\"class_path\": \"TensorBoardLogger\"' for --trainer.logger; "
        'expected a mapping closed by }, e.g. --trainer.logger={"class_path": "TensorBoardLogger"}, '
        "or a Logger class name or path"
    )


def test_a_mapping_whose_inner_braces_close_but_not_the_outer_one_is_unclosed(capsys):
    value = '{"class_path": "TensorBoardLogger", "init_args": {"name": "x"}'
    line = fit_error(capsys, f"--trainer.logger={value}")
    assert line.startswith(f"swar-bench: error: unclosed mapping {value!r} for --trainer.logger;")


def test_an_unknown_class_name_with_a_space_is_quoted_whole(capsys):
    assert fit_error(capsys, "--trainer.logger=NoSuch Logger").startswith(
        "swar-bench: error: unknown Logger class 'NoSuch Logger' for --trainer.logger;")


def test_null_and_nan_are_echoed_as_typed(capsys):
    assert fit_error(capsys, "--data.train_configs=null").startswith("swar-bench: error: --data.train_configs=null:")
    assert fit_error(capsys, "--model.lr=NaN").startswith("swar-bench: error: --model.lr=NaN is invalid;")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(alphabet='ab"\\{}[] ', max_size=4)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='ab"{}', max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, cut=st.integers(min_value=0))
def test_open_brackets_of_any_cut_json_text_are_those_a_json_parser_left_open(value, cut):
    """The kind: whatever JSON text is cut anywhere, the brackets left open are exactly those whose
    closing bracket was cut off (strings with brackets, quotes and backslashes inside included)."""
    text = json.dumps(value)
    assert open_brackets(text) == []
    cut %= len(text) + 1
    expected: list[str] = []
    decoder = json.JSONDecoder()
    # the reference: a bracket at i is open at the cut when its whole value does not end before the cut
    i = 0
    while i < cut:
        ch = text[i]
        if ch == '"':
            _, end = json.decoder.scanstring(text, i + 1)
            if end > cut:
                break
            i = end
            continue
        if ch in "[{":
            _, end = decoder.raw_decode(text, i)
            if end > cut:
                expected.append(ch)
            else:
                i = end
                continue
        i += 1
    assert open_brackets(text[:cut]) == expected


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logger=st.sampled_from(["TensorBoardLogger", "CSVLogger"]), name=st.text(alphabet="ab c", min_size=1, max_size=4),
       cut=st.integers(min_value=1, max_value=40))
def test_any_unclosed_mapping_given_to_the_logger_is_called_unclosed(capsys, logger, name, cut):
    """The kind: a JSON mapping for --trainer.logger cut anywhere after its first key is refused as an
    unclosed mapping, quoted whole."""
    whole = json.dumps({"class_path": logger, "init_args": {"name": name}})
    value = whole[: max(len('{"class_path": "') + len(logger) + 1, len(whole) - cut)]
    assert open_brackets(value)[:1] == ["{"]
    line = fit_error(capsys, f"--trainer.logger={value}")
    assert line.startswith(f"swar-bench: error: unclosed mapping {value!r} for --trainer.logger;"), line


def test_the_value_quoted_is_the_last_one_given():
    argv = ["--trainer.logger=A B", "--x=1", "--trainer.logger", "C D"]
    assert typed_value(argv, "trainer.logger", "C") == "C D"
    assert typed_value(argv, "trainer.logger", "A") == "A B"
    assert typed_value(argv, "trainer.logger", "Z") == "Z"
