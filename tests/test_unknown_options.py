"""An unknown option of an argparse command is refused in one line by the sub-command given it,
with its closest option (``swar_bench.utils.argparsing.ArgumentParser.parse_args``), and long
options are never abbreviated (``--config`` is not ``--configs``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.argparsing import ArgumentParser


def _run(capsys, argv):
    from swar_bench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["study", "run", "S.yaml", "--jobz", "1"], "swar-bench study run: error: unknown option --jobz (did you mean --jobs?)"),
        (
            ["study", "status", "S.yaml", "--jsob", "2"],
            (
                "swar-bench study status: error: unknown option --jsob; swar-bench study status takes no options, only "
                "its argument study: the study file (YAML), e.g. configs/studies/frontier.yaml "
                "(swar-bench study status --help)"
            ),
        ),
        (
            ["data", "generate", "--out", "g1", "--configs", "n32", "--splits", "test", "--num-exmples", "5"],
            "swar-bench data generate: error: unknown option --num-exmples (did you mean --num-examples?)",
        ),
        (
            ["data", "generate", "--out", "g1", "--config", "n32", "--splits", "test"],
            "swar-bench data generate: error: unknown option --config (did you mean --configs?)",
        ),
        # a misspelt required option: refused as unknown with its suggestion, not as "--config is required"
        (["data", "show", "--configs", "n32"], "swar-bench data show: error: unknown option --configs (did you mean --config?)"),
        (
            ["data", "generate", "--config", "n32"],
            ("swar-bench data generate: error: unknown option --config (did you mean --configs?); "
             "the following arguments are required: --out"),
        ),
        (
            ["data", "generate", "--out", "g1", "--configs=n32", "--splits", "test", "--num-exmples=5"],
            "swar-bench data generate: error: unknown option --num-exmples (did you mean --num-examples?)",
        ),
    ],
)
def test_reported_unknown_options(capsys, argv, line):
    assert _run(capsys, argv) == line


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--trainer.max_stepz=1"], "swar-bench demo: error: unknown option --trainer.max_stepz (did you mean --trainer.max_steps?)"),
        (["--targte", "0.5"], "swar-bench demo: error: unknown option --targte (did you mean --target?)"),
    ],
)
def test_reported_demo_unknown_options(capsys, argv, line):
    from swar_bench.demo import _parse

    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == line


def test_demo_passes_lightning_options_on_in_order():
    from swar_bench.demo import _parse

    args = _parse(["--target", "0.5", "--trainer.max_steps", "200", "--data.batch_size=8"])
    assert args.target == 0.5
    assert args.overrides == ["--trainer.max_steps", "200", "--data.batch_size=8"]


def _refusal(parser, argv) -> str:
    """stderr of ``parser.parse_args(argv)``, which must exit 2."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    assert exc.value.code == 2
    return err.getvalue()


NAMES = st.text("abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=12)


def _typo(draw, name: str) -> str:
    i = draw(st.integers(0, len(name) - 2))
    kind = draw(st.sampled_from(["swap", "drop", "double"]))
    if kind == "swap":
        return name[:i] + name[i + 1] + name[i] + name[i + 2:]
    if kind == "drop":
        return name[:i] + name[i + 1:]
    return name[:i] + name[i] + name[i:]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), names=st.lists(NAMES, min_size=1, max_size=5, unique=True), sub=st.booleans(), inline=st.booleans(),
       required=st.booleans())
def test_a_misspelt_option_is_refused_by_its_command_with_a_suggestion(data, names, sub, inline, required):
    """Any option of any (sub-)parser, required or not, misspelt by one swap, drop or doubling: exit
    2, one line ``PROG: error: unknown option --TYPO (did you mean --NAME?)`` from the parser given
    it, naming an option of that parser; never a silent abbreviation, and a misspelt required
    option is never reported as only missing."""
    top = ArgumentParser(prog="tool")
    parser = top.add_subparsers(dest="command", required=True).add_parser("go") if sub else top
    for name in names:
        parser.add_argument(f"--{name}", required=required)
    name = data.draw(st.sampled_from(names))
    typo = _typo(data.draw, name)
    padded = typo in names
    if padded:
        typo = typo + "qq"  # a typo that is another option: make it none
    argv = (["go"] if sub else []) + ([f"--{typo}=1"] if inline else [f"--{typo}", "1"])
    err = _refusal(top, argv)
    prog = "tool go" if sub else "tool"
    assert err.count("\n") == 1
    assert err.startswith(f"{prog}: error: unknown option --{typo}")
    assert padded or "(did you mean" in err
    if "(did you mean" in err:
        suggested = err.split("(did you mean ")[1].split("?)")[0]
        assert suggested.removeprefix("--") in names
    if required:  # every other option is missing too, and named as such; the suggested one is not
        tail = err.partition("the following arguments are required: ")[2]
        missing = {n.strip() for n in tail.strip().split(",") if n.strip()}
        assert missing == {f"--{n}" for n in names if f"(did you mean --{n}?)" not in err}


@settings(max_examples=40, deadline=None)
@given(name=NAMES, cut=st.integers(1, 3))
def test_a_prefix_of_an_option_is_no_abbreviation(name, cut):
    """``--config`` given to a parser with only ``--configs`` is refused, never taken for it."""
    parser = ArgumentParser(prog="tool")
    parser.add_argument(f"--{name}")
    prefix = name[:-cut]
    assert _refusal(parser, [f"--{prefix}", "x"]).startswith(f"tool: error: unknown option --{prefix}")


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["data"], "swar-bench data: error: no command given; expected one of generate, stats, verify, check, show, vocab (swar-bench data --help)"),
        (["study"], "swar-bench study: error: no command given; expected one of run, report, site, status (swar-bench study --help)"),
    ],
)
def test_reported_missing_commands(capsys, argv, line):
    assert _run(capsys, argv) == line


@settings(max_examples=40, deadline=None)
@given(commands=st.lists(NAMES, min_size=1, max_size=6, unique=True))
def test_a_missing_command_lists_the_commands(commands):
    """Any set of sub-commands, none given: one line listing every one of them, in order."""
    parser = ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in commands:
        sub.add_parser(name)
    err = _refusal(parser, [])
    assert err == f"tool: error: no command given; expected one of {', '.join(commands)} (tool --help)\n"


@settings(max_examples=40, deadline=None)
@given(
    positionals=st.lists(NAMES, max_size=3, unique=True),
    helps=st.lists(st.sampled_from([None, "the study file", "a folder, e.g. runs"]), min_size=3, max_size=3),
    typo=NAMES,
    sub=st.booleans(),
)
def test_a_command_without_options_says_what_it_takes(positionals, helps, typo, sub):
    """The kind: any (sub-)command that takes no option, given one: one line saying it takes no
    options and naming each of its arguments (with its help), never "expected no option"."""
    from swar_bench.utils.argparsing import closest_option

    if closest_option(typo, ["--help"]) is not None:
        return  # a typo of --help is --help's ("did you mean --help?")
    top = ArgumentParser(prog="tool")
    parser = top.add_subparsers(dest="command", required=True).add_parser("go") if sub else top
    for name, text in zip(positionals, helps):
        parser.add_argument(name, help=text)
    argv = (["go"] if sub else []) + [f"--{typo}", *["x"] * len(positionals)]
    err = _refusal(top, argv)
    prog = "tool go" if sub else "tool"
    assert err.count("\n") == 1 and "expected no option" not in err
    assert err.startswith(f"{prog}: error: unknown option --{typo}; {prog} takes no options")
    assert err.rstrip().endswith(f"({prog} --help)")
    if not positionals:
        assert "takes no options and no arguments" in err
    for name, text in zip(positionals, helps):
        assert (f"{name}: {text}" if text else name) in err
