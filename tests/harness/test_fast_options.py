"""A mistyped option of fit/validate/test/predict (issue 26, item 9) took 5-35 s to be refused: the
seconds of importing Lightning to build the parser. It is now refused before Lightning is imported
(swar_bench.harness.fast_options), in one line with a "did you mean", and the table it reads agrees with
the real parser."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonargparse import ArgumentError

import swar_bench.lightning_cli as lc
from swar_bench.harness.fast_options import known_options, unknown_options
from swar_bench.lightning_cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
COMMANDS = ("fit", "validate", "test", "predict")


@pytest.fixture(scope="module")
def parser_options():
    """Every option string (``--trainer.max_steps``) of the real parser, by subcommand."""
    seen = {}
    original = lc.SwarBenchCLI._unknown_config_keys

    def capture(self, args):
        for command, parser in self._subcommand_parsers.items():
            seen[command] = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
        return original(self, args)

    lc.SwarBenchCLI._unknown_config_keys = capture
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "typo.yaml")
            path.write_text("zzz: 1\n")
            assert main(["fit", "--config", str(path)]) == 2
    finally:
        lc.SwarBenchCLI._unknown_config_keys = original
    return seen


def test_a_mistyped_fit_option_is_refused_before_lightning_is_imported():
    # the reported input: a mistyped --trainer option of fit (max_stepz: no option, no prefix of one)
    code = ("import sys; from swar_bench.cli import main; "
            f"rc = main(['fit', '--config', {QUICKSTART!r}, '--trainer.max_stepz', '10']); "
            "print(rc, 'lightning' in sys.modules, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert done.stderr.splitlines() == [(
        "swar-bench: error: unknown option --trainer.max_stepz (did you mean --trainer.max_steps?); expected options "
        "of swar-bench fit (swar-bench fit --help)")]


def test_an_option_with_two_appending_plusses_is_refused():
    # the reported input (found by the property below): "+" appends once; --trainer.plugins++ is no
    # option, and the fast check let it through to a parser that refused it without a suggestion
    assert unknown_options(["fit", "--trainer.plugins++", "1"]) == [("--trainer.plugins++", "--trainer.plugins")]
    assert unknown_options(["fit", "--trainer.plugins+", "1"]) == []


def test_every_unknown_option_is_named_at_once():
    assert unknown_options(["test", "--ckpt_pth", "last", "--modle.lr=1", "--data.batchsize", "2", "--trainer.max_steps=3"]) == [
        ("--ckpt_pth", "--ckpt_path"), ("--modle.lr", "--model.lr"), ("--data.batchsize", "--data.batch_size")]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_table_agrees_with_the_real_parser(parser_options, command):
    options = parser_options[command]
    # never stricter than the parser: each of its options passes
    assert [o for o in sorted(options) if unknown_options([command, o])] == []
    # never looser: each name of the table is an option of the parser
    table = known_options(command)
    for group, names in table.items():
        assert names is not None, group
        for name in names:
            flag = f"--{group}.{name}" if group else f"--{name}"
            assert flag in options or any(o.startswith(flag + ".") for o in options), flag


def _typo(name: str, i: int, kind: int) -> str:
    i %= len(name)
    return [name[:i] + name[i + 1:], name[:i] + "q" + name[i:], name[:i] + name[i] * 2 + name[i + 1:]][kind]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_typo_the_fast_check_refuses_the_parser_refuses_too(parser_options, data):
    """The kind: a one-character typo of any option of any subcommand is refused by the fast check
    exactly when it is no option and no prefix of one, and then the real parser refuses it too."""
    command = data.draw(st.sampled_from(COMMANDS))
    options = sorted(o for o in parser_options[command] if not o.endswith(".help") and o != "--help")
    option = data.draw(st.sampled_from(options))
    typo = "--" + _typo(option[2:], data.draw(st.integers(0, 60)), data.draw(st.integers(0, 2)))
    real = parser_options[command]
    is_prefix = any(o.startswith(typo) for o in real)
    refused = unknown_options([command, typo, "1"])
    # under a class-typed option (--model.mechanism, --optimizer: those with a .help): the parser judges
    nested = any(typo.startswith(o + ".") and f"{o}.help" in real for o in real)
    if typo in real or is_prefix or nested:
        assert refused == []
        return
    assert [flag for flag, _ in refused] == [typo]
    # the fast check stands in front of LightningCLI: the parser it spares refuses the same option
    with pytest.raises(ArgumentError, match=r"unrecognized arguments: .*" + re.escape(typo)):
        lc.run_cli([command, typo, "1"])
