"""A folder that holds none of a release's files (empty, only a README.md, only a dataset card,
other files) given to `swar-bench data verify` / `check` is a wrong argument: one line saying
that no release is there (no config folder or split file of the Hub layout), exit 2; not "is not
a complete release", exit 1 (issue 26: a folder holding only a README.md was reported as an
incomplete release with exit 1)."""

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
    release_files,
    split_path,
    write_readme,
    write_split,
)

INCOMPLETE = "is not a complete release"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


def test_the_reported_folder_with_only_a_readme_is_no_release_exit_2(tmp_path, capsys):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("# my notes\n")
    assert release_files(folder) == []
    for command in ("verify", "check"):
        assert main([command, str(folder)]) == 2, command
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"swar-bench data {command}: error: no passkey_swar config folder under {str(folder)!r}: expected the "
            f"Hub layout {folder}/n{{N}}/{{split}}-00000-of-00001.parquet with N in 32..16384\n"
        )
    for command in ("verify", "check"):  # with the configs named: the same kind, the same exit
        assert main([command, str(folder), "--configs", "n32"]) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"under {str(folder)!r}" in err and INCOMPLETE not in err


def test_an_empty_folder_and_a_dataset_card_alone_are_no_release_exit_2(tmp_path, capsys):
    write_readme(tmp_path, planned=[("n32", "validation")])  # a dataset card listing a split
    assert release_files(tmp_path) == []
    assert main(["verify", str(tmp_path)]) == 2
    assert INCOMPLETE not in capsys.readouterr().err
    os.unlink(tmp_path / "README.md")
    assert main(["check", str(tmp_path)]) == 2
    assert "error: no passkey_swar config folder under" in capsys.readouterr().err


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
            lines = err.splitlines()  # "skipping n7/" lines, then the one error line
            assert all(line.startswith("skipping ") for line in lines[:-1]), err
            assert lines[-1].startswith(f"swar-bench data {command}: error: ") and repr(folder) in lines[-1], err
            assert INCOMPLETE not in err
        else:
            assert release_files(folder) != []
            assert code == 1, err
            assert INCOMPLETE in err
