"""``--help`` reads as plain text and says what an option does and what it is when not given
(faults: `referee --help` and `fit --help` showed the docstrings' reStructuredText, ````mechanism````
and ``:class:`datetime.timedelta```; `demo --help` named no defaults and its usage line said
``--max-minutes M`` where the options said MAX_MINUTES; `data show --config/--split/--index`,
`data vocab --out` had no help, `study run --jobs/--threads/--launcher` named no default)."""

from __future__ import annotations

import argparse
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swar_bench.cli import main
from swar_bench.utils.help_format import plain_rst
from tests.test_repeated_options import PARSERS

MARKUP = re.compile(r"``|:(?:py:)?[a-z]+:`|>`_|\.\. [a-z]+::")


def _help(capsys, argv: list[str]) -> str:
    try:
        code = main([*argv, "--help"])
    except SystemExit as stop:
        code = stop.code
    assert code in (0, None)
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [["fit"], ["test"], ["predict"], ["referee"], ["demo"],
                                  ["fit", "--model.mechanism.help", "GatedDeltaNet"]],
                         ids=lambda argv: " ".join(argv))
def test_help_shows_no_restructuredtext(capsys, argv):
    text = _help(capsys, argv)
    assert "--" in text and not MARKUP.search(text), MARKUP.search(text) and text[MARKUP.search(text).start() - 80:][:200]


def test_the_referee_help_names_the_mechanism_plainly(capsys):
    assert "Run the full long-context referee on `mechanism` and return" in _help(capsys, ["referee"])


def _options():
    for prog, parser in PARSERS.items():
        for action in parser._actions:
            if action.help != argparse.SUPPRESS and not isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                yield pytest.param(parser, action, id=f"{prog} {'/'.join(action.option_strings) or action.dest}")


@pytest.mark.parametrize(("parser", "action"), list(_options()))
def test_every_option_says_what_it_is_and_its_default(parser, action):
    assert action.help, "no help text"
    default = action.default
    if action.option_strings and default not in (None, False, [], argparse.SUPPRESS) and not action.required:
        shown = parser._get_formatter()._expand_help(action)
        assert "default" in shown, f"{shown!r} names no default ({default!r})"


def test_the_demo_usage_and_options_name_the_same_metavars(capsys):
    text = _help(capsys, ["demo"])
    usage, options = text.split("options:")
    for option, metavar in (("--max-minutes", "M"), ("--threads", "T"), ("--target", "A")):
        assert f"[{option} {metavar}]" in usage and re.search(rf"^  {option} {metavar} ", options, re.MULTILINE), option
    options = " ".join(options.split())
    assert "(default: 10)" in options and "(default: 2)" in options and "(default: 0.9)" in options


WORD = st.text(st.characters(categories=("L", "N"), include_characters="_."), min_size=1, max_size=12)


@given(before=st.text(st.characters(exclude_characters="`:~<>"), max_size=20), name=WORD,
       role=st.sampled_from(["class", "func", "meth", "attr", "mod", "py:class"]), tilde=st.booleans())
def test_plain_rst_keeps_the_name_and_drops_the_markup(before, name, role, tilde):
    assert plain_rst(before) == before  # text without markup unchanged
    assert plain_rst(f"{before}``{name}``") == f"{before}`{name}`"
    shown = name.rsplit(".", 1)[-1] if tilde else name
    assert plain_rst(f"{before}:{role}:`{'~' if tilde else ''}{name}` x") == f"{before}`{shown}` x"
    assert not MARKUP.search(plain_rst(f"{before}:{role}:`{name}` and ``{name}``"))
    assert plain_rst(f"{before}`{name} notes <https://x.org/{name}>`_.") == f"{before}{name} notes (https://x.org/{name})."
    assert plain_rst(f"{before}.. warning:: {name}") == f"{before}Warning: {name}"


@pytest.mark.parametrize("argv", [["data", "--help"], ["study", "--help"]], ids=" ".join)
def test_a_command_group_help_names_every_subcommand_in_its_description(capsys, argv):
    """Fault: `data --help` described itself as "generate, stats, verify, check", leaving out show
    and vocab. The description (the lines between the usage and the argument list) names each."""
    text = _help(capsys, argv)
    description = text.split("\n\n")[1]
    usage = text.split("\n\n")[0]
    commands = usage.split("{")[1].split("}")[0].split(",")
    assert all(re.search(rf"\b{c}\b", description) for c in commands), (commands, description)


CUT_WORDS = {"the", "a", "an", "as", "to", "of", "by", "with", "your", "and", "or", "for", "in", "on", "at", "is"}


@pytest.mark.parametrize("subcommand", ["fit", "validate", "test", "predict"])
def test_no_group_heading_ends_mid_sentence(capsys, subcommand):
    """Fault: headings taken from docstrings' first lines ended mid-sentence (`... Every logged
    metrics are passed to the:`, `Saves predict outputs (one EvalOutputs per batch, saved as:`,
    `... to make sure you never run on your:`). Each heading ends on a word that can end a
    phrase, its parentheses closed."""
    text = _help(capsys, [subcommand, "--help"])
    headings = [line[:-1] for line in text.splitlines() if re.fullmatch(r"[A-Za-z][^ ].*:", line)]
    assert len(headings) >= 8, headings
    for heading in headings:
        last = re.findall(r"[A-Za-z]+", heading)[-1].lower()
        assert last not in CUT_WORDS and heading.count("(") == heading.count(")"), heading


def _undescribed(text: str) -> list[str]:
    """The options of a jsonargparse ``--help`` whose entry holds only its type and default."""
    entries: list[list[str]] = []
    for line in text.splitlines():
        if re.match(r"^  -", line):
            entries.append([line])
        elif line.startswith(" " * 20) and entries and entries[-1]:
            entries[-1].append(line)
        else:
            entries.append([])
    bare = []
    for entry in filter(None, entries):
        spec, _, first = entry[0].strip().partition("  ")
        description = " ".join([first.strip(), *(line.strip() for line in entry[1:])]).strip()
        if not description or description.startswith("(type:"):
            bare.append(spec.split()[0].rstrip(","))
    return bare


@pytest.mark.parametrize("subcommand", ["fit", "validate", "test", "predict"])
def test_every_option_of_ours_says_what_it_is(capsys, subcommand):
    """Fault: `--data.val_configs`, `--data.test_configs`, `--calibration.n_permutations`,
    `--calibration.permutation_seed` and `--predictions.output_dir` showed only their type and
    default (docstrings that documented two arguments on one line, or none). Every option of our
    own groups (all but Lightning's Trainer and ModelCheckpoint) has a description."""
    text = _help(capsys, [subcommand, "--help"])
    ours = [o for o in _undescribed(text) if not o.startswith(("--trainer.", "--checkpoint."))]
    assert ours == [], ours


def test_every_subcommand_help_says_what_it_does():
    """Fault: `study status/report/site --help` (and the data subcommands') had no description
    line, only usage and options. Every argparse (sub)command has one."""
    bare = [prog for prog, parser in PARSERS.items() if not (parser.description or "").strip()]
    assert bare == [], bare


@pytest.mark.parametrize("argv", [["referee", "--help"], ["fit", "--help"]], ids=" ".join)
def test_no_help_lists_more_than_six_known_subclasses(capsys, argv):
    """Fault: `referee --help` was 388 lines, 299 of them the torch.nn classes jsonargparse listed
    as "known subclasses" of --mechanism. Each list names six and counts the rest."""
    from swar_bench.utils.help_format import SUBCLASSES_SHOWN

    text = " ".join(_help(capsys, argv).split())
    for found in re.finditer(r"known subclasses: ([^()]*)\)", text):
        names = found.group(1).split(" and ")[0].split(",")
        assert len(names) <= SUBCLASSES_SHOWN, found.group(0)[:300]
    assert len(_help(capsys, argv).splitlines()) < (150 if argv[0] == "referee" else 900)


@given(names=st.lists(st.from_regex(r"[a-z]{1,5}(\.[A-Za-z]{1,5}){0,2}", fullmatch=True), min_size=1, max_size=40),
       head=st.text("abc (:", max_size=10))
def test_fewer_subclasses_keeps_six_and_counts_the_rest(names, head):
    from swar_bench.utils.help_format import SUBCLASSES_SHOWN, fewer_subclasses

    text = f"{head}(type: X, known subclasses: {', '.join(names)})"
    out = fewer_subclasses(text)
    if len(names) <= SUBCLASSES_SHOWN:
        assert out == text
    else:
        assert out == (f"{head}(type: X, known subclasses: {', '.join(names[:SUBCLASSES_SHOWN])} and "
                       f"{len(names) - SUBCLASSES_SHOWN} more)")
