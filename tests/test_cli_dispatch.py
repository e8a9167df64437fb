"""The `swar-bench` dispatcher: top-level help names every command."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("fit", "validate", "test", "predict", "data", "referee", "demo", "check-mechanism", "study"):
        assert command in out


def test_no_command_is_an_error_with_usage(capsys):
    assert main([]) == 2
    assert "usage: swar-bench COMMAND" in capsys.readouterr().err


def test_data_command_is_dispatched(tmp_path, capsys):
    out = tmp_path / "vocab.json"
    assert main(["data", "vocab", "--out", str(out)]) == 0
    import json

    vocab = json.loads(out.read_text())
    assert (vocab["PAD"], vocab["NULL"], vocab["k0"], len(vocab)) == (0, 7, 8, 40)


def test_unknown_command_lists_every_command(capsys):
    from swar_bench.cli import main

    assert main(["bogus"]) == 2
    assert capsys.readouterr().err == (
        "swar-bench: error: unknown command 'bogus'; expected one of fit, validate, test, predict, data, referee, demo, "
        "check-mechanism, study (swar-bench --help)\n"
    )


def test_demo_help_lists_every_exit_code_the_demo_returns(capsys):
    # `swar-bench demo --help` names each exit status demo.main can return, 3 (target not
    # reached) included, and says what the demo does instead of an internal name for it.
    import re

    import pytest

    from swar_bench import demo

    with pytest.raises(SystemExit) as exc:
        demo.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    listed = {int(code) for code in re.findall(r"^  (\d+) ", out.split("exit codes:")[1], re.MULTILINE)}
    source = Path(demo.__file__).read_text(encoding="utf-8")
    returned = {int(c) for c in re.findall(r"\breturn (\d+)$", source, re.MULTILINE)} | {130, 143}  # 128 + SIGINT, stop_status
    assert listed == returned == {0, 1, 2, 3, 130, 143}
    assert "NOT reached" in out and "main job" not in out
    assert "train the quickstart model" in out.lower()


def test_referee_help_names_its_subcommands(capsys):
    from swar_bench.cli import main as swar_bench_main

    try:
        status = swar_bench_main(["referee", "--help"])
    except SystemExit as exc:  # argparse's --help exits
        status = exc.code
    assert status in (0, None)
    out = capsys.readouterr().out
    assert "swar-bench referee compare" in out and "swar-bench referee verdict" in out


ARGPARSE_COMMANDS = [["data"], ["data", "stats"], ["data", "verify"], ["data", "show"], ["data", "generate"],
                     ["referee", "compare"], ["referee", "verdict"], ["check-mechanism"], ["demo"],
                     ["study", "run"], ["study", "status"], ["study", "report"]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(ARGPARSE_COMMANDS),
       flag=st.text(alphabet="abcxyz-_", min_size=1, max_size=8).map(lambda s: "--zz" + s))
def test_any_usage_error_is_one_line_without_the_usage_block(capsys, command, flag):
    # reported: `swar-bench data stats DIR` printed argparse's usage block before its error line
    try:
        code = main([*command, flag])
    except SystemExit as exc:  # argparse's exit, as the console script ends
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "usage:" not in err and " error: " in err, err
    assert err.startswith("swar-bench " + command[0]), err


def test_version_is_answered_before_any_heavy_import():
    """fault: `swar-bench --version` took seconds (Lightning imported) to say "unrecognized
    arguments: --version"; it prints the package's version, with neither torch nor Lightning imported."""
    import subprocess
    import sys

    import swar_bench

    code = ("import sys; from swar_bench.cli import main; rc = main(['--version']); "
            "heavy = [m for m in ('torch', 'lightning', 'jsonargparse') if m in sys.modules]; "
            "print('heavy', heavy); sys.exit(rc)")
    import os

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"swar-bench {swar_bench.__version__}", "heavy []"]
    assert done.stderr == ""


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rest=st.lists(st.sampled_from(["fit", "--config", "x.yaml", "-h", "--version"]), max_size=3))
def test_version_first_ignores_what_follows(capsys, rest):
    """The kind: `--version` first, whatever follows, prints the version alone, exit 0."""
    import swar_bench
    from swar_bench.cli import main

    assert main(["--version", *rest]) == 0
    out = capsys.readouterr()
    assert out.out == f"swar-bench {swar_bench.__version__}\n" and out.err == ""


def _heavy_free_run(argv: list[str]):
    """``main(argv)`` in a fresh interpreter: its exit status, stderr and the heavy modules it imported."""
    import os
    import subprocess
    import sys

    code = (f"import sys; from swar_bench.cli import main; rc = main({argv!r}); "
            "heavy = [m for m in ('torch', 'lightning', 'jsonargparse') if m in sys.modules]; "
            "print('heavy', heavy); sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False, env=env)
    return done.returncode, done.stderr, done.stdout.splitlines()[-1]


COMMAND_LIST = "fit, validate, test, predict, data, referee, demo, check-mechanism, study"


def test_the_reported_misspelt_version_is_refused_at_once_with_a_suggestion():
    """fault: `swar-bench --versio` imported Lightning (40 s on a loaded machine) to say
    "unrecognized arguments: --versio", without naming --version."""
    code, err, heavy = _heavy_free_run(["--versio"])
    assert (code, heavy) == (2, "heavy []"), err
    assert err == (f"swar-bench: error: unknown option --versio (did you mean --version?); expected a command first "
                   f"({COMMAND_LIST}) or --help, --version (swar-bench --help)\n")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(word=st.from_regex(r"\A--?[a-z][a-z_-]{0,10}(=[a-z0-9]{0,4})?\Z"),
       rest=st.lists(st.sampled_from(["fit", "data", "--config", "x.yaml"]), max_size=2))
def test_any_option_before_the_command_is_one_line(capsys, word, rest):
    """The kind: any option word first, except --help/-h and --version alone, is refused in one
    line naming it (a suggestion when one is close), whatever follows, exit 2."""
    flag = word.partition("=")[0]
    if word in ("-h", "--help", "--version"):
        return
    assert main([word, *rest]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1, out.err
    if flag in ("-h", "--help", "--version"):
        assert out.err == f"swar-bench: error: {word}: {flag} takes no value; expected {flag} alone (swar-bench --help)\n"
    else:
        assert out.err.startswith(f"swar-bench: error: unknown option {flag}")
        assert out.err.endswith(f"; expected a command first ({COMMAND_LIST}) or --help, --version (swar-bench --help)\n")
