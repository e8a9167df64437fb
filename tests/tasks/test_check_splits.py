"""`data check --splits` names a split the folder does not hold (fault: with only the validation and
test splits on disk, `data check DIR --splits train` printed "splits are disjoint in 2 config(s)",
exit 0, having read nothing; `data verify` refused the same request)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main

SPLITS = ("train", "validation", "test")


def _folder(path, splits) -> str:
    assert main(["data", "generate", "--out", str(path), "--configs", "n32,n64", "--splits", ",".join(splits),
                 "--num-examples", "8", "--no-progress"]) == 0
    return str(path)


def test_the_reported_absent_split_is_refused(tmp_path, capsys):
    folder = _folder(tmp_path / "ps", ["validation", "test"])
    capsys.readouterr()
    for typed in ("train", "train,test"):
        assert main(["data", "check", folder, "--splits", typed]) == 2
        assert capsys.readouterr().err == (
            f"swar-bench data check: error: --splits={typed}: no config under {folder!r} holds train (n32, n64 hold "
            "validation, test); expected splits the folder holds\n")


SUBSETS = [list(c) for r in (1, 2, 3) for c in itertools.combinations(SPLITS, r)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(held=st.sampled_from(SUBSETS), asked=st.sampled_from(SUBSETS))
def test_check_reads_exactly_the_splits_it_is_asked_for_or_refuses(tmp_path_factory, capsys, held, asked):
    """The kind: any splits on disk, any requested: refused (exit 2, naming the absent ones) exactly
    when one requested split is in no config; otherwise checked (exit 0)."""
    folder = _folder(tmp_path_factory.mktemp("d") / "ps", held)
    capsys.readouterr()
    status = main(["data", "check", folder, "--splits", ",".join(asked)])
    out = capsys.readouterr()
    absent = [s for s in asked if s not in held]
    if absent:
        assert status == 2 and f"holds {' or '.join(absent)} (" in out.err and out.err.count("\n") == 1
    else:
        assert status == 0 and "splits are disjoint in 2 config(s): n32, n64" in out.out, out.err
