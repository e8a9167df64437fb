"""The product's text stands alone: it points to no internal note, and every "docs/TASK.md,
"Section"" / "docs/REFEREE.md, "Section"" reference names a section that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ["README.md", "Makefile", "pyproject.toml", "docs", "swar_bench", "scripts", "configs", "examples"]
TEXT_SUFFIXES = {".md", ".py", ".yaml", ".yml", ".toml", ".sh", ".sbatch", ".txt", ""}


def _product_files() -> list[Path]:
    files = []
    for name in PRODUCT:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                      and "__pycache__" not in p.parts]
    return sorted(files)


FORBIDDEN = ["seed 00", "seeds/", "DESIGN.md", "E1 baseline", "E7", "referee card", "shared/",
             # internal or changelog wording a reader cannot look up: "the card" (say "the task"),
             # "main job" (say what the demo does), "seed referee" (say "loss-only"), history
             "the card", "card's impossible", "the card's", "main job", "seed referee", "seed's referee",
             "no longer runs", "now sets", "as the command ran before", "it is removed", "the seed's",
             "reference page"]


@pytest.mark.parametrize("needle", FORBIDDEN)
def test_the_product_names_no_internal_note(needle):
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _product_files()
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if needle in line]
    assert hits == [], f"{needle!r} in {hits}"


def _sections(doc: str) -> set[str]:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


REF_RE = re.compile(r'docs/(TASK|REFEREE)\.md,? "([^"]+)"((?:\s*(?:,|and|/)\s*"[^"]+")*)')


def test_every_section_reference_names_a_section_of_the_doc():
    found = 0
    for path in _product_files():
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8", errors="replace").replace('"""', ""))
        for m in REF_RE.finditer(text):
            doc = f"{m.group(1)}.md"
            names = [m.group(2), *re.findall(r'"([^"]+)"', m.group(3))]
            for name in names:
                found += 1
                assert name in _sections(doc), f"{path.relative_to(ROOT)}: {doc} has no section {name!r}"
    assert found >= 30  # the task's and the referee's rules are cited by section throughout


def test_the_task_doc_defines_the_rules():
    text = (ROOT / "docs" / "TASK.md").read_text(encoding="utf-8")
    for rule in ("age ≤ w = 16", "age > 2w = 32, or never written", "`ar_expired_stale`", "`ar_expired_never`",
                 "PAD=0 BOS=1 EOS=2 PK=3 PKQ=4 W=5 Q=6 NULL=7", "split_seed * 10**12 + N * 10**6 + index"):
        assert rule in text


def _text_of_code(path: Path) -> list[tuple[int, str]]:
    """A module's prose: its string literals (messages, help texts, docstrings, which --help
    shows) and comments, with their line numbers; not its names."""
    import io
    import tokenize

    kinds = {tokenize.STRING, tokenize.COMMENT} | {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    with path.open("rb") as handle:
        return [(tok.start[0], tok.string) for tok in tokenize.tokenize(io.BytesIO(handle.read()).readline)
                if tok.type in kinds]


def test_no_message_or_docstring_says_the_card():
    # Messages said "not a config of the card", "the card trains on ...", and docstrings (shown
    # by --help) "the card's defaults": a reader of the repository has no card. They name the
    # task's rules by docs/TASK.md section, and "dataset card" only for the Hub dataset's
    # README.md (the released files' statistics).
    hits = [f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
            for path in sorted((ROOT / "swar_bench").rglob("*.py"))
            for line, text in _text_of_code(path)
            if re.search(r"\bcard\b|card's", re.sub(r"dataset card", "", text), re.IGNORECASE)]
    assert hits == []


def test_the_task_doc_gives_the_example_length_the_generator_makes():
    # docs/TASK.md "Format": 12 + 3N + 3·n_queries tokens (6 around the stream, 3 per write and
    # per query); the reported example: n32 seed 84 has 16 queries and 156 tokens.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from swar_bench.tasks.passkey_swar.reference import make_example

    assert "`12 + 3N + 3·n_queries`" in (ROOT / "docs" / "TASK.md").read_text(encoding="utf-8")
    example = make_example(84, 32)
    assert len(example["input_ids"]) == 156 and len(example["answer_type"]) - 4 == 16

    @settings(max_examples=30, deadline=None)
    @given(st.integers(0, 2**63 - 1), st.integers(1, 300))
    def length_is_the_formula(seed, n):
        example = make_example(seed, n)
        n_queries = len(example["answer_type"]) - 4  # one answer per query, then the 4 passkey tokens
        assert len(example["input_ids"]) == 12 + 3 * n + 3 * n_queries

    length_is_the_formula()
