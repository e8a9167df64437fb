"""A mistyped command or subcommand (issue "faults by whole kind", item 5): `swar-bench demoo`,
`data generat`, `study repot`, `referee compar` and a mistyped choice of an option had no
suggestion. Now each is one line with a "did you mean" and the names expected."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench import cli

COMMANDS = ("fit", "validate", "test", "predict", "data", "referee", "demo", "check-mechanism", "study")
SUBCOMMANDS = {
    "data": ("generate", "stats", "verify", "check", "show", "vocab"),
    "study": ("run", "report", "site", "status"),
}


def _run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse's exit
        code = stop.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, [ln for ln in captured.err.splitlines() if ln.strip()]


@pytest.mark.parametrize(("argv", "line"), [
    (["demoo"], ("swar-bench: error: unknown command 'demoo' (did you mean demo?); expected one of "
                "fit, validate, test, predict, data, referee, demo, check-mechanism, study (swar-bench --help)")),
    (["data", "generat"], ("swar-bench data: error: unknown command 'generat' (did you mean generate?); expected one of "
                          "generate, stats, verify, check, show, vocab (swar-bench data --help)")),
    (["study", "repot", "configs/studies/frontier.yaml"],
     ("swar-bench study: error: unknown command 'repot' (did you mean report?); expected one of run, report, site, "
     "status (swar-bench study --help)")),
    (["referee", "compar", "a.json", "b.json"],
     ("swar-bench referee: error: unknown subcommand 'compar' (did you mean compare?); expected one of compare, verdict "
     "or a run's options (swar-bench referee --help)")),
    # a swap of two letters difflib alone missed (ratio 0.43 < 0.6): found by the property below
    (["reefree"], ("swar-bench: error: unknown command 'reefree' (did you mean referee?); expected one of "
                  "fit, validate, test, predict, data, referee, demo, check-mechanism, study (swar-bench --help)")),
    (["data", "show", "--split", "tset"],
     ("swar-bench data show: error: argument --split: invalid choice: 'tset' (did you mean test?); expected one of "
     "train, validation, test")),
])
def test_the_reported_typos_have_a_suggestion(capsys, argv, line):
    assert _run(capsys, argv) == (2, [line])


def test_a_name_far_from_every_command_has_no_suggestion(capsys):
    code, lines = _run(capsys, ["data", "zzzzzz"])
    assert code == 2
    assert lines == [("swar-bench data: error: unknown command 'zzzzzz'; expected one of generate, stats, verify, check, "
                     "show, vocab (swar-bench data --help)")]


def _typo(name: str, i: int, kind: int) -> str:
    i %= len(name)
    return [name[:i] + name[i + 1:], name[:i] + "x" + name[i:], name[:i] + name[i] * 2 + name[i + 1:],
            name[:i] + name[i + 1:i + 2] + name[i:i + 1] + name[i + 2:]][kind]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group=st.sampled_from(["", "data", "study"]), data=st.data())
def test_any_one_character_typo_of_a_command_is_one_line_suggesting_it(capsys, group, data):
    """The kind: a one-character typo (drop, insert, double, swap) of any command of the entry point,
    of `data` or of `study` is refused (exit 2) in one line naming it, with a "did you mean" that is
    one of the commands (the one meant when no other is as close), and the list of commands."""
    names = SUBCOMMANDS[group] if group else COMMANDS
    name = data.draw(st.sampled_from(names))
    typo = _typo(name, data.draw(st.integers(0, 20)), data.draw(st.integers(0, 3)))
    if typo in names or not typo or typo.startswith("-"):
        return
    code, lines = _run(capsys, [group, typo] if group else [typo])
    assert code == 2
    assert len(lines) == 1, lines
    prog = f"swar-bench {group}".strip()
    assert lines[0].startswith(f"{prog}: error: unknown command {typo!r} (did you mean ")
    suggested = lines[0].split("(did you mean ", 1)[1].split("?)", 1)[0]
    assert suggested in names
    assert lines[0].endswith(f"; expected one of {', '.join(names)} ({prog} --help)")


# --- a misspelt split in --splits (`data generate --splits tset` had no suggestion) ---------------

SPLITS = ("train", "validation", "test")


def test_the_reported_misspelt_split_is_suggested(capsys, tmp_path):
    argv = ["data", "generate", "--out", str(tmp_path / "d"), "--splits", "tset"]
    assert _run(capsys, argv) == (
        2,
        [("swar-bench data generate: error: --splits: 'tset' is not a split (did you mean test?); expected some of "
          "train,validation,test")],
    )
    assert not (tmp_path / "d").exists()


@settings(max_examples=60, deadline=None)
@given(data=st.data(), meant=st.lists(st.sampled_from(SPLITS), min_size=1, max_size=3, unique=True))
def test_any_misspelt_splits_are_named_each_with_a_split(data, meant):
    """The kind: any comma list of splits with one or more misspelt by one character (drop,
    insert, double, swap): one line naming every name that is no split, in order, each suggestion
    a split, and the splits expected."""
    from swar_bench.tasks.cli_options import UsageError, splits_option

    given_ = [_typo(m, data.draw(st.integers(0, 20)), data.draw(st.integers(0, 3))) if data.draw(st.booleans()) else m
              for m in meant]
    given_ = list(dict.fromkeys(g for g in given_ if g and "," not in g))
    unknown = [g for g in given_ if g not in SPLITS]
    if not unknown:
        assert splits_option(",".join(given_)) == given_
        return
    with pytest.raises(UsageError) as err:
        splits_option(",".join(given_))
    line = str(err.value)
    assert "\n" not in line and line.startswith("--splits: ")
    assert line.endswith("; expected some of train,validation,test")
    positions = [line.index(repr(u)) for u in unknown]
    assert positions == sorted(positions)
    for suggested in [part.split("?)")[0] for part in line.split("(did you mean ")[1:]]:
        assert suggested in SPLITS
