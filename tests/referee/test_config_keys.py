"""A `swar-bench referee --config` file is refused in one line naming the file and what in it is
wrong (fault: a misspelt key, `sed: 0`, said only jsonargparse's "Option 'sed' is not accepted",
naming neither the file nor `seed`; a bad `out:` of a config file was named as the option `--out`)."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.referee.cli import build_parser, main
from swar_bench.utils.text import closest_name, one_edit_apart
from tests.referee.test_option_lines import QUICK, _line  # the referee's one error line

EXPECTED = "expected options of swar-bench referee (swar-bench referee --help)"
OPTIONS = sorted(d for d in {a.dest for a in build_parser()._actions} - {"help", "config"} if not d.endswith(".help"))
GRU_ARGS = ("vocab_size", "d_model", "n_layers", "mlp_ratio")
OUT = "expected a folder (new or existing) this user can write to"


def test_the_reported_misspelt_key_names_the_file_and_the_key(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("sed: 0\n")
    assert swar_main(["referee", "--config", str(QUICK), "--config", str(bad)]) == 2
    assert _line(capsys) == (f"swar-bench referee: error: --config={bad}: unknown key sed (did you mean seed?); "
                             f"{EXPECTED}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]  # nothing made


def test_an_out_from_a_config_file_names_the_file_and_its_key(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("out: ''\n")
    assert main(["--config", str(QUICK), "--config", str(bad)]) == 2
    assert _line(capsys) == f"swar-bench referee: error: --config={bad}: out='' is empty; {OUT}"
    assert main(["--config", str(QUICK), "--config", str(bad), "--out="]) == 2  # the later option replaces it
    assert _line(capsys) == f"swar-bench referee: error: --out='' is empty; {OUT}"


def _typos(name: str) -> st.SearchStrategy[str]:
    """``name`` one edit away: a letter dropped, doubled or two neighbours swapped."""
    i = st.integers(0, len(name) - 1)
    return st.one_of(
        i.map(lambda k: name[:k] + name[k + 1:]),
        i.map(lambda k: name[:k] + name[k] + name[k:]),
        i.filter(lambda k: k + 1 < len(name)).map(lambda k: name[:k] + name[k + 1] + name[k] + name[k + 2:]),
    )


@st.composite
def misspelt(draw):
    """(the mapping of the file, the dotted key as the line names it, the names it could have meant)."""
    if draw(st.booleans()):
        name = draw(st.sampled_from([o for o in OPTIONS if len(o) >= 4 and o != "mechanism"]))
        typo = draw(_typos(name).filter(lambda t: t not in OPTIONS))
        return {typo: 1}, typo, OPTIONS
    name = draw(st.sampled_from(GRU_ARGS))
    typo = draw(_typos(name).filter(lambda t: t not in GRU_ARGS))
    mapping = {"mechanism": {"class_path": "swar_bench.mechanisms.GRU", "init_args": {typo: 8}}}
    return mapping, f"mechanism.init_args.{typo}", GRU_ARGS


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=misspelt(), inline=st.booleans())
def test_any_misspelt_key_of_a_config_is_named_with_its_file_and_a_suggestion(tmp_path_factory, capsys, case, inline):
    """Any referee option, or an init arg of the mechanism, one typo away in a --config file (or
    an inline mapping): the file as typed, the dotted key and the closest option."""
    mapping, key, names = case
    root = tmp_path_factory.mktemp("keys")
    if inline:
        source = yaml.safe_dump(mapping, default_flow_style=True).strip()
    else:
        source = str(root / "bad.yaml")
        Path(source).write_text(yaml.safe_dump(mapping))
    assert main(["--config", str(QUICK), "--out", str(root / "o"), "--config", source]) == 2
    typo = key.rsplit(".", 1)[-1]
    close = closest_name(typo, names)
    assert close is not None and one_edit_apart(typo, close)
    prefix = key[: -len(typo)]
    line = _line(capsys)
    assert line.startswith(f"swar-bench referee: error: --config={source}: unknown key {key} "
                           f"(did you mean {prefix}{close}?); {EXPECTED}"), line
    assert not (root / "o").exists()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["empty", "a file", "below a file"]), later=st.booleans())
def test_any_bad_out_is_named_where_it_was_set(tmp_path_factory, capsys, kind, later):
    """A refused ``out`` set by a --config file names that file and the key; the option when a
    later --out set it."""
    root = tmp_path_factory.mktemp("out")
    (root / "f").write_text("")
    value = {"empty": "", "a file": str(root / "f"), "below a file": str(root / "f" / "x")}[kind]
    bad = root / "bad.yaml"
    bad.write_text(yaml.safe_dump({"out": value}))
    argv = ["--config", str(QUICK), "--config", str(bad)] + ([f"--out={value}"] if later else [])
    assert main(argv) == 2
    line = _line(capsys)
    lead = f"--out={value!r}" if later else f"--config={bad}: out={value!r}"
    assert line.startswith(f"swar-bench referee: error: {lead} "), line
    assert line.endswith(OUT)
