"""`swar-bench study site`: the pages built from hand-written records, checked against them."""

from __future__ import annotations

import math
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from swar_bench.study import cli
from swar_bench.study import site as site_mod
from swar_bench.study.site import MARKER, page_path, write_site
from swar_bench.study.spec import StudyError
from tests.study.site_records import (
    COMMAND,
    ENVIRONMENT,
    LEARNERS,
    NON_LEARNER,
    PENDING,
    make_study,
)

REPO = Path(__file__).resolve().parents[2]


class Page(HTMLParser):
    """Tables (by id: rows of (row attributes, cell texts, cell data-sort)), links and images."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, list[tuple[dict, list[str], list[str | None]]]] = {}
        self.links: list[str] = []
        self.images: list[str] = []
        self.scripts: list[dict] = []
        self._table: str | None = None
        self._row: tuple[dict, list[str], list[str | None]] | None = None
        self._cell: list[str] | None = None
        self._in_head = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id", f"table{len(self.tables)}")
            self.tables[self._table] = []
        elif tag == "thead":
            self._in_head = True
        elif tag == "tbody":
            self._in_head = False
        elif tag == "tr" and self._table and not self._in_head:
            self._row = (a, [], [])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._row[2].append(a.get("data-sort"))
        elif tag == "a" and "href" in a:
            self.links.append(a["href"])
        elif tag == "img":
            self.images.append(a["src"])
        elif tag in ("script", "link"):
            self.scripts.append(a)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row[1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    spec = make_study(tmp)
    index = write_site(spec, tmp / "site")
    return spec, index.parent


def _page(root: Path, rel: str) -> Page:
    return Page((root / rel).read_text())


def _board(root: Path) -> dict[str, dict[str, tuple[str, str | None]]]:
    page = _page(root, "index.html")
    rows = page.tables["leaderboard-table"]
    header = ["mechanism", "status", "state bytes", "params", "flops", "passkey_exact", "forgetting", "gate", "lr"]
    return {a["data-mechanism"]: dict(zip(header, zip(texts, sorts))) for a, texts, sorts in rows}


def test_every_mechanism_is_on_the_index_and_has_its_page(built):
    spec, root = built
    board = _board(root)
    assert list(board) == [m.name for m in spec.mechanisms]
    index = _page(root, "index.html")
    for m in spec.mechanisms:
        assert page_path(m.name) in index.links
        page = (root / page_path(m.name)).read_text()
        assert f"<h1>{m.name} " in page
    assert {board[name]["status"][0] for name in LEARNERS} == {"learned"}
    assert board[NON_LEARNER]["status"][0] == "did not learn" and board[PENDING]["status"][0] == "running"


def test_every_link_and_image_resolves_inside_the_site_without_network(built):
    _, root = built
    pages = sorted(root.rglob("*.html"))
    assert len(pages) == 1 + len(LEARNERS) + 2
    for file in pages:
        page = Page(file.read_text())
        for ref in page.links + page.images:
            assert "://" not in ref and not ref.startswith("/"), (file, ref)
            assert (file.parent / ref.split("#")[0]).resolve().is_file(), (file, ref)
        # no script or stylesheet from elsewhere: the only script is inline
        assert all("src" not in s for s in page.scripts), file
        assert all(s.get("href", "").startswith("data:") for s in page.scripts if "href" in s), file
    assert (root / MARKER).is_file()


def test_leaderboard_numbers_match_the_records(built):
    _, root = built
    board = _board(root)
    for name, (state_bytes, n_params, flops, seeds) in LEARNERS.items():
        row = board[name]
        assert row["state bytes"] == (f"{state_bytes:,}", repr(float(state_bytes)))
        assert row["params"][0] == f"{n_params:,}" and row["flops"][0] == f"{flops:,.0f}"
        assert row["gate"] == ("3/3", "1.0") and row["lr"] == ("0.003", "0.003")
        # forgetting = min(ar_valid, ar_expired_stale) per seed, mean with a Student-t interval
        forgetting = [min(ar, stale) for _, ar, stale in seeds]
        mean = sum(forgetting) / 3
        sem = stats.sem(forgetting)
        low, high = (mean, mean) if sem == 0 else stats.t.interval(0.95, 2, loc=mean, scale=sem)
        low, high = max(low, 0.0), min(high, 1.0)
        assert row["forgetting"][0] == f"{mean:.2f} ({low:.2f}–{high:.2f})", name
        assert math.isclose(float(row["forgetting"][1]), mean)
    # passkey 1, 1, 0: all-or-nothing, 2 of 3 seeds, exact interval
    cp = stats.binomtest(2, 3).proportion_ci(method="exact")
    assert board["Keeper"]["passkey_exact"][0] == f"2/3 seeds ({cp.low:.2f}–{cp.high:.2f})"
    assert math.isclose(float(board["Keeper"]["passkey_exact"][1]), 2 / 3)
    assert board["Wide_state"]["passkey_exact"][0].startswith("3/3 seeds (")
    flat = board[NON_LEARNER]
    assert flat["passkey_exact"] == ("–", "") and flat["forgetting"] == ("–", "")
    assert flat["gate"][0] == "0/3 (retry: not passed)" and flat["lr"][0] == "0.001"
    assert board[PENDING]["lr"] == ("–", "") and board[PENDING]["state bytes"] == ("–", "")


def test_did_not_learn_and_running_sections(built):
    _, root = built
    index = _page(root, "index.html")
    rows = index.tables["did-not-learn-table"]
    assert [texts for _, texts, _ in rows] == [[NON_LEARNER, "0.05", "0.00", "4"]]
    text = (root / "index.html").read_text()
    assert f'<a href="{page_path(PENDING)}">{PENDING}</a>: choosing its learning rate (1 of 2 rates scored)' in text
    flat = (root / page_path(NON_LEARNER)).read_text()
    assert "Did not learn at this budget" in flat and "over 4 fits" in flat


def test_mechanism_page_shows_config_walk_per_n_and_provenance(built):
    _, root = built
    page = _page(root, page_path("Keeper"))
    text = (root / page_path("Keeper")).read_text()
    assert "<code>GRU</code>" in text and "<code>d_model=8</code>" in text
    walk = [texts for _, texts, _ in page.tables["lr-table"]]
    assert walk == [["0.001", "0.500", ""], ["0.003", "0.600", "chosen"]]
    # an arm at the rate another chose: one rate walked, the source named and linked, no extension
    borrow = _page(root, page_path("Borrow"))
    assert [texts for _, texts, _ in borrow.tables["lr-table"]] == [["0.003", "0.600", "chosen"]]
    assert "Keeper.html" in borrow.links
    per_n = {texts[0]: texts[1:] for _, texts, _ in page.tables["per-n-table"]}
    cp = stats.binomtest(2, 3).proportion_ci(method="exact")
    assert per_n["n256"][0] == f"2/3 seeds ({cp.low:.2f}–{cp.high:.2f})"
    ar = [0.8, 0.6, 0.7]
    lo, hi = stats.t.interval(0.95, 2, loc=0.7, scale=stats.sem(ar))
    assert per_n["n256"][1] == f"0.70 ({lo:.2f}–{hi:.2f} t)"
    assert per_n["n256"][3] == "–"  # ar_expired_never: not in these records
    gate = [texts for _, texts, _ in page.tables["gate-table"]]
    assert [g[0] for g in gate] == ["0", "1", "2"] and {g[4] for g in gate} == {"passed"}
    # provenance: one row and one command row per record (3 fits, 3 tests), the command escaped
    prov = [texts for _, texts, _ in page.tables["provenance-table"]]
    assert len(prov) == 12
    assert prov[0][:2] == ["Keeper_lr0.003_seed0", "fit"] and prov[0][8] == ENVIRONMENT["device"]
    assert prov[0][6] == ENVIRONMENT["torch"] and prov[0][7] == ENVIRONMENT["lightning"] and prov[0][9] == "60.0 s"
    assert prov[1] == [COMMAND]
    assert "--note=&lt;kept &amp; escaped&gt;" in text and "<kept" not in text
    assert prov[0][3] in ("clean", "dirty") and len(prov[0][2]) == 40


def test_the_same_records_give_the_same_bytes(built, tmp_path):
    spec, root = built
    again = write_site(spec, tmp_path / "again").parent
    files = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (root / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_a_new_site_replaces_an_earlier_one_whole(tmp_path):
    spec = make_study(tmp_path)
    out = tmp_path / "site"
    write_site(spec, out)
    (out / "stale.html").write_text("from an earlier site")
    write_site(spec, out)
    assert not (out / "stale.html").exists() and (out / "index.html").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_failed_build_keeps_the_earlier_site_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    spec = make_study(tmp_path)
    out = tmp_path / "site"
    write_site(spec, out)
    before = (out / "index.html").read_bytes()

    def broken(spec, folder):
        (folder / "index.html").write_text("half a site")
        raise RuntimeError("figure failed")

    monkeypatch.setattr(site_mod, "render", broken)
    with pytest.raises(RuntimeError, match="figure failed"):
        write_site(spec, out)
    assert (out / "index.html").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_refuses_to_replace_a_folder_it_did_not_write(tmp_path, capsys):
    spec = make_study(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("keep me")
    with pytest.raises(StudyError, match=r"holds other files \(no \.swar-bench-site"):
        write_site(spec, docs)
    assert (docs / "README.md").read_text() == "keep me"
    assert cli.main(["site", spec.path, "--out", str(docs / "README.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is a file; expected a folder for the site" in err
    assert cli.main(["site", spec.path, "--out", str(tmp_path / "new")]) == 0
    assert (tmp_path / "new" / "index.html").is_file()


def test_templates_are_package_data():
    """An installed package finds its templates: pyproject's package-data covers every file."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = config["swar_bench.study"]
    templates = REPO / "swar_bench" / "study" / "templates"
    files = sorted(p.relative_to(templates.parent).as_posix() for p in templates.rglob("*") if p.is_file())
    assert files and all(any(fnmatch(f, pat) for pat in patterns) for f in files), files


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.none(), st.integers(-(2**53), 2**53), st.floats(allow_nan=True, allow_infinity=True)))
def test_sort_keys_are_numbers_the_page_script_parses_or_empty(value):
    """A cell's data-sort is "" (sorted last) for a missing or non-finite value, else a decimal
    text that parses back to the same number (what the page's script does with Number())."""
    cell = site_mod._cell("text", value)
    if value is None or not math.isfinite(float(value)):
        assert cell["sort"] == ""
    else:
        assert float(cell["sort"]) == float(value) and cell["sort"].strip() == cell["sort"]
