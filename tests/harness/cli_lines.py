"""The one error line a refused command prints: shared by the tests of the CLI's refusals."""

from __future__ import annotations

from pathlib import Path

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")


def one_error_line(capsys, prefix: str = "") -> str:
    """The single non-blank stderr line starting with ``prefix`` since the last read; fails on a
    traceback or on any other count of such lines."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [ln for ln in captured.err.splitlines() if ln.strip() and ln.startswith(prefix)]
    assert len(lines) == 1, captured.err
    return lines[0]


def fit_error(capsys, *argv: str) -> str:
    """The one ``swar-bench`` error line of a refused two-step quickstart fit with ``argv`` added
    (exit code 2)."""
    from swar_bench.lightning_cli import main

    code = main(["fit", "--config", QUICKSTART, "--trainer.max_steps=2", *argv])
    line = one_error_line(capsys, "swar-bench")
    assert code == 2
    return line
