"""The `swar-bench` dispatcher: top-level help names every command."""

from swar_bench.cli import main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("fit", "validate", "test", "predict", "data", "referee", "demo", "check-mechanism"):
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
        "check-mechanism (swar-bench --help)\n"
    )
