"""The top-level ``swar-bench --help`` names every subcommand of ``swar-bench study`` (``site`` was missing)."""

from __future__ import annotations

import argparse
import re

from hypothesis import given
from hypothesis import strategies as st

from swar_bench.cli import USAGE
from swar_bench.study.cli import _parser


def _study_commands() -> list[str]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def _study_line() -> str:
    return next(ln for ln in USAGE.splitlines() if ln.strip().startswith("study "))


def test_the_reported_study_site_is_in_the_usage():
    assert re.search(r"\bsite\b", _study_line())


@given(st.sampled_from(_study_commands()))
def test_any_study_command_is_in_the_usage(command):
    assert re.search(rf"\b{re.escape(command)}\b", _study_line().split(":", 1)[1])
