"""``--ckpt_path`` values that name no checkpoint: a misspelt keyword gets "did you mean", ``best``
(which a new process never has) is refused saying what works, and an unreadable file says what
was expected; each one line, exit 2."""

from __future__ import annotations

import errno
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness import checkpoints
from swar_bench.harness.checkpoints import CKPT_PATH_KEYWORDS, ckpt_path_keyword, read_checkpoint

EXPECTED = "expected a checkpoint file written by swar-bench fit (e.g. <run>/checkpoints/last.ckpt), last or hpc"


def _error_lines(capsys, argv):
    from swar_bench.lightning_cli import main

    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    return code, err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["fit", "--model.mechanism=GRU", "--ckpt_path=lastt"], f"swar-bench: error: --ckpt_path=lastt: no such file (did you mean last?); {EXPECTED}"),
        (
            ["test", "--model.mechanism=GRU", "--ckpt_path", "best"],
            (
                "swar-bench: error: --ckpt_path=best: Lightning's best is the best checkpoint of a fit earlier in the same "
                f"process, and swar-bench test starts a new one; {EXPECTED}"
            ),
        ),
    ],
)
def test_reported_ckpt_paths(capsys, tmp_path, monkeypatch, argv, line):
    monkeypatch.chdir(tmp_path)
    code, err = _error_lines(capsys, argv)
    assert (code, err) == (2, [line])


@pytest.mark.parametrize("subcommand", ["fit", "validate", "test", "predict"])
def test_best_is_refused_for_every_subcommand(subcommand):
    with pytest.raises(ValueError, match=rf"^--ckpt_path=best: .* swar-bench {subcommand} starts a new one; {re.escape(EXPECTED)}"):
        ckpt_path_keyword("best", subcommand)
    assert ckpt_path_keyword("last", subcommand) == "last"
    assert ckpt_path_keyword("runs/x.ckpt", subcommand) is None


def test_an_unreadable_file_says_what_was_expected(tmp_path, monkeypatch):
    """The reported ``cannot be read (Invalid argument)`` of a truncated checkpoint (torch's mmap)."""
    path = tmp_path / "cut.ckpt"
    path.write_bytes(b"PK\x03\x04")

    def refuse(*args, **kwargs):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr("swar_bench.runtime.checkpoint_io.load_checkpoint", refuse)
    with pytest.raises(ValueError) as err:
        read_checkpoint(str(path))
    assert str(err.value) == (
        f"--ckpt_path={path}: cannot be read (Invalid argument); expected a complete .ckpt written by swar-bench fit "
        "(a truncated or partly copied file cannot be read)"
    )


def _one_edit(draw, word: str) -> str:
    i = draw(st.integers(0, len(word) - 1))
    kind = draw(st.sampled_from(["double", "drop", "swap", "replace"]))
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    if kind == "drop":
        return word[:i] + word[i + 1:]
    if kind == "swap" and i < len(word) - 1:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    return word[:i] + draw(st.sampled_from("xyz")) + word[i + 1:]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), keyword=st.sampled_from(CKPT_PATH_KEYWORDS))
def test_a_misspelt_keyword_is_suggested(data, keyword, tmp_path_factory):
    """Any one-edit misspelling of a keyword that is no file: one line suggesting a keyword."""
    typo = _one_edit(data.draw, keyword)
    if typo in CKPT_PATH_KEYWORDS:
        return
    folder = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        with pytest.raises(ValueError) as err:
            read_checkpoint(typo)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"--ckpt_path={typo}: no such file (did you mean ")
    assert line.split("(did you mean ")[1].split("?)")[0] in CKPT_PATH_KEYWORDS
    assert line.endswith(EXPECTED)


@settings(max_examples=30, deadline=None)
@given(fraction=st.floats(0, 0.999))
def test_a_truncated_checkpoint_is_one_line_with_what_was_expected(fraction, tmp_path_factory):
    """Any truncation of a checkpoint torch wrote: one line naming the file and what was expected."""
    import torch

    folder = tmp_path_factory.mktemp("ckpt")
    full = folder / "full.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(64)}, "epoch": 1}, full)
    data = full.read_bytes()
    cut = folder / "cut.ckpt"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ValueError) as err:
        read_checkpoint(str(cut))
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"--ckpt_path={cut}: ")
    assert "expected a complete .ckpt written by swar-bench fit" in line or "expected a .ckpt written by swar-bench fit" in line


def test_keywords_are_the_module_constant():
    assert checkpoints.CKPT_PATH_KEYWORDS == ("last", "best", "hpc", "registry")
