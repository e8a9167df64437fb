"""Any word given where a mechanism class is named resolves to a class or is refused in one line
(fault: `check-mechanism ..GRU`, `fit --model.mechanism=..GRU`, `referee --mechanism ..GRU`,
`study run --add ..GRU` ended in importlib's `TypeError: the 'package' argument is required to
perform a relative import`, a traceback; `.GRU` said only `Empty module name`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.mechanisms.registry import MechanismNameError, resolve_class
from tests.test_repeated_options import _error_lines


@pytest.mark.parametrize("argv", [["check-mechanism", "..GRU"], ["check-mechanism", ".GRU"],
                                  ["fit", "--config", "configs/quickstart.yaml", "--model.mechanism=..GRU"]],
                         ids=" ".join)
def test_the_reported_relative_paths_are_one_line(capsys, monkeypatch, argv):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    code, err = _error_lines(capsys, argv)
    word = argv[-1].rpartition("=")[2]
    assert code == 2 and len(err) == 1 and f"={word}: not a class path; expected one of " in err[0], err
    assert err[0].endswith("or an absolute class path module.Class (no leading, doubled or trailing dot)"), err


@settings(max_examples=200, deadline=None)
@given(word=st.text(alphabet="ab.GRU_ 1-/\\:", min_size=1, max_size=12))
def test_any_word_resolves_to_a_class_or_one_line(word):
    """The kind: any word (dots anywhere, spaces, slashes, digits) resolves to a class or raises
    the one-line MechanismNameError naming it; never another exception."""
    try:
        cls = resolve_class(word, "--model.mechanism")
    except MechanismNameError as err:
        assert "\n" not in str(err) and str(err).startswith("--model.mechanism=")
    else:
        assert isinstance(cls, type)
