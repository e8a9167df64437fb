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
from swar_bench.harness.checkpoints import (
    CKPT_PATH_KEYWORDS,
    ckpt_path_expected,
    ckpt_path_keyword,
    ckpt_path_keywords,
    read_checkpoint,
)

EXPECTED = "expected a checkpoint file written by swar-bench fit (e.g. <run>/checkpoints/last.ckpt), last or hpc"
SUBCOMMANDS = ("fit", "validate", "test", "predict")


@pytest.fixture(autouse=True, scope="module")
def _no_litmodels():
    """Lightning's model registry needs ``litmodels``: these tests are of a machine without it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "litmodels_installed", lambda: False)
        yield


def _error_lines(capsys, argv):
    from swar_bench.lightning_cli import main

    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]
    return code, err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["fit", "--model.mechanism=GRU", "--ckpt_path=lastt"],
            f"swar-bench: error: --ckpt_path=lastt: no such file (did you mean last?); {EXPECTED}",
        ),
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
    with pytest.raises(
        ValueError,
        match=rf"^--ckpt_path=best: .* swar-bench {subcommand} starts a new one; {re.escape(EXPECTED)}",
    ):
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
        return word[:i] + word[i + 1 :]
    if kind == "swap" and i < len(word) - 1:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + draw(st.sampled_from("xyz")) + word[i + 1 :]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), keyword=st.sampled_from(ckpt_path_keywords("fit")))
def test_a_misspelt_keyword_is_suggested(data, keyword, tmp_path_factory):
    """Any one-edit misspelling of a keyword ``fit`` takes that is no file: one line suggesting a keyword."""
    typo = _one_edit(data.draw, keyword)
    if typo in CKPT_PATH_KEYWORDS or typo.lower().startswith("registry"):
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
    assert (
        "expected a complete .ckpt written by swar-bench fit" in line
        or "expected a .ckpt written by swar-bench fit" in line
    )


def test_keywords_are_the_module_constant():
    assert checkpoints.CKPT_PATH_KEYWORDS == ("last", "best", "hpc", "registry")


# --- one list of the keywords --ckpt_path takes, per subcommand (fault: two messages listed two) ---


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        # the empty value listed "last, best, hpc, registry", the missing file "last or hpc"
        (
            ["fit", "--model.mechanism=GRU", "--ckpt_path="],
            f"swar-bench: error: --ckpt_path='': {EXPECTED}",
        ),
        (
            ["fit", "--model.mechanism=GRU", "--ckpt_path=nosuch.ckpt"],
            f"swar-bench: error: --ckpt_path=nosuch.ckpt: no such file; {EXPECTED}",
        ),
        (
            ["test", "--model.mechanism=GRU", "--ckpt_path=registry"],
            (
                "swar-bench: error: --ckpt_path=registry: Lightning's model registry needs the litmodels package, "
                f"which is not installed; {EXPECTED}"
            ),
        ),
    ],
)
def test_every_ckpt_path_message_lists_the_same_keywords(capsys, tmp_path, monkeypatch, argv, line):
    monkeypatch.chdir(tmp_path)
    assert _error_lines(capsys, argv) == (2, [line])


def _refusal(path: str, subcommand: str) -> str | None:
    """The one line ``--ckpt_path=path`` of ``subcommand`` is refused with before anything is
    built (the keyword check, then the file read), None when it is accepted as a keyword."""
    try:
        if ckpt_path_keyword(path, subcommand) is not None:
            return None
        read_checkpoint(path, subcommand)
    except ValueError as err:
        return str(err)
    raise AssertionError(f"{path!r} was read as a checkpoint")


@settings(max_examples=60, deadline=None)
@given(
    subcommand=st.sampled_from(SUBCOMMANDS),
    litmodels=st.booleans(),
    value=st.one_of(
        st.sampled_from(["", "best", "registry", "registry:model", "missing.ckpt"]),
        st.sampled_from(CKPT_PATH_KEYWORDS),
    ),
)
def test_the_keywords_a_subcommand_takes_come_from_one_place(
    tmp_path_factory, subcommand, litmodels, value
):
    """The kind: whatever the subcommand and whether ``litmodels`` is installed, a keyword of
    ``ckpt_path_keywords`` is accepted, and every refusal of ``--ckpt_path`` (empty, ``best``,
    ``registry`` without litmodels, a missing file) ends with the one ``ckpt_path_expected``
    listing exactly those keywords."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "litmodels_installed", lambda: litmodels)
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        keywords = ckpt_path_keywords(subcommand)
        assert ("registry" in keywords) == litmodels and "best" not in keywords
        expected = ckpt_path_expected(subcommand)
        assert expected.endswith(", ".join(keywords[:-1]) + f" or {keywords[-1]}")
        line = _refusal(value, subcommand)
    if value in keywords or value.startswith("registry:") and litmodels:
        assert line is None
        return
    assert line is not None and "\n" not in line
    assert line.startswith(f"--ckpt_path={value}" if value else "--ckpt_path=''")
    assert line.endswith(f"expected {expected}")


# --- a suggestion names only a keyword the subcommand takes (fault: `test --ckpt_path=bset` -> best) ---


@pytest.mark.parametrize("subcommand", ["test", "validate", "predict"])
def test_the_reported_misspelt_best_suggests_nothing_refused(
    capsys, tmp_path, monkeypatch, subcommand
):
    monkeypatch.chdir(tmp_path)
    argv = [subcommand, "--model.mechanism=GRU", "--ckpt_path=bset"]
    assert _error_lines(capsys, argv) == (
        2,
        [f"swar-bench: error: --ckpt_path=bset: no such file; {EXPECTED}"],
    )


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(),
    subcommand=st.sampled_from(SUBCOMMANDS),
    keyword=st.sampled_from(CKPT_PATH_KEYWORDS),
    litmodels=st.booleans(),
)
def test_a_suggested_keyword_is_always_one_the_subcommand_takes(
    tmp_path_factory, data, subcommand, keyword, litmodels
):
    """The kind: any one-edit misspelling of any keyword Lightning knows (``best`` and
    ``registry`` included), given to any subcommand, that is no file: whatever the refusal
    suggests is a keyword that subcommand then accepts."""
    typo = _one_edit(data.draw, keyword)
    if typo in CKPT_PATH_KEYWORDS or typo.lower().startswith("registry"):
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "litmodels_installed", lambda: litmodels)
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        line = _refusal(typo, subcommand)
        assert line is not None and line.startswith(f"--ckpt_path={typo}: no such file")
        if "(did you mean " in line:
            suggested = line.split("(did you mean ")[1].split("?)")[0]
            assert suggested in ckpt_path_keywords(subcommand)
            assert ckpt_path_keyword(suggested, subcommand) == suggested
