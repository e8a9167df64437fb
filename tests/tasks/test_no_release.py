"""A folder that holds none of a release's files (empty, only a README.md, only a dataset card,
other files) given to `swar-bench data verify` / `check` is a wrong argument: one line saying
there is no release there, exit 2; not "is not a complete release", exit 1 (issue 26: a folder
holding only a README.md was reported as an incomplete release with exit 1)."""

from __future__ import annotations

import json
import os
import tempfile

import datasets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.tasks.cli import main
from swar_bench.tasks.hub_io import (
    CHECKSUMS_FILE,
    PARAMS_FILE,
    PasskeySwarParams,
    check_release_folder,
    release_files,
    split_path,
    write_readme,
    write_split,
)

NO_RELEASE = "no release there"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def test_the_reported_folder_with_only_a_readme_is_no_release_exit_2(tmp_path, capsys):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("# my notes\n")
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 2, command
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"swar-bench data {command}: error: source={str(folder)!r}: no release there (it holds only README.md); "
            "expected a folder in the Hub layout with split files n{N}/{split}-00000-of-00001.parquet, vocab.json "
            "and params.json, as `swar-bench data generate` writes (or a download of irodkin/passkey_swar)\n"
        )


def test_an_empty_folder_is_no_release_exit_2(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    assert f"source={str(tmp_path)!r}: no release there (it is empty); expected" in capsys.readouterr().err
    assert release_files(tmp_path) == []
    with pytest.raises(ValueError, match="no release there"):
        check_release_folder(tmp_path)


NOT_RELEASE = ("plain README", "card README", "notes.txt", "empty n32/", "n7/", "temp file in n32/", "misnamed split")
RELEASE = ("vocab.json", PARAMS_FILE, CHECKSUMS_FILE, "n32/validation split file")


def _make(folder: str, piece: str, readme_text: str) -> None:
    if piece == "plain README":
        with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
            f.write(readme_text)
    elif piece == "card README":  # a dataset card as `generate` writes it, listing a split
        write_readme(folder, planned=[("n32", "validation")])
    elif piece == "notes.txt":
        with open(os.path.join(folder, "notes.txt"), "w") as f:
            f.write("x")
    elif piece == "empty n32/":
        os.makedirs(os.path.join(folder, "n32"), exist_ok=True)
    elif piece == "n7/":
        os.makedirs(os.path.join(folder, "n7"), exist_ok=True)
    elif piece == "temp file in n32/":  # what a killed write leaves: not a split file
        os.makedirs(os.path.join(folder, "n32"), exist_ok=True)
        with open(os.path.join(folder, "n32", ".tmp-w8k1q2x0.parquet"), "wb") as f:
            f.write(b"PAR1")
    elif piece == "misnamed split":
        os.makedirs(os.path.join(folder, "n32"), exist_ok=True)
        with open(os.path.join(folder, "n32", "validation.parquet"), "wb") as f:
            f.write(b"PAR1")
    elif piece == "vocab.json":
        from swar_bench.tasks.hub_io import write_vocab_json

        write_vocab_json(os.path.join(folder, "vocab.json"), PasskeySwarParams())
    elif piece == PARAMS_FILE:
        with open(os.path.join(folder, PARAMS_FILE), "w") as f:
            json.dump(PasskeySwarParams().to_dict(), f)
    elif piece == CHECKSUMS_FILE:
        with open(os.path.join(folder, CHECKSUMS_FILE), "w") as f:
            json.dump({"sha256": {}}, f)
    else:
        write_split(split_path(folder, "n32", "validation"), "validation", 32, 2)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.sets(st.sampled_from(NOT_RELEASE)),
    readme_text=st.text(max_size=30),
    release_piece=st.none() | st.sampled_from(RELEASE),
    command=st.sampled_from(["verify", "check"]),
)
def test_a_folder_is_no_release_exactly_when_it_holds_none_of_the_release_files(
    tmp_path, capsys, pieces, readme_text, release_piece, command
):
    # Any mix of things that are not a release's files: exit 2, one line, saying so. Add any one
    # of the release's files and the folder is a release with problems: exit 1, naming them.
    capsys.readouterr()
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        for piece in sorted(pieces):
            _make(folder, piece, readme_text)
        if release_piece is not None:
            _make(folder, release_piece, readme_text)
        code = main([command, folder])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if release_piece is None:
            assert release_files(folder) == []
            assert code == 2
            assert err.count("\n") == 1 and f"error: source={folder!r}: {NO_RELEASE} (" in err
            assert "not a complete release" not in err
        else:
            assert release_files(folder) != []
            assert code == 1, err
            assert NO_RELEASE not in err and "is not a complete release" in err
