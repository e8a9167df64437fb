"""Help text for the terminal: the docstrings jsonargparse shows in ``--help`` (ours, Lightning's,
torch's) are reStructuredText; their markup is shown as the plain text a reader of a terminal
expects."""

from __future__ import annotations

import re

from jsonargparse import DefaultHelpFormatter

_ROLE = re.compile(r":(?:py:)?[a-z]+:`~?([^`<]*?)(?:\s*<[^>`]*>)?`")
_LITERAL = re.compile(r"``([^`]+?)``")
_LINK = re.compile(r"`([^`<]+?)\s*<([^>`]+)>`__?")
_DIRECTIVE = re.compile(r"\.\. ([a-z]+)::[ \t]*")


def plain_rst(text: str) -> str:
    """``text`` with reStructuredText's inline markup made plain: a literal ````x```` as ```x```,
    a role ``:class:`a.B``` as ```a.B``` (``~a.B``, which Sphinx shows as ``B``, as ```B```; a
    titled reference ``:func:`title <a.f>``` as its title), a link ```text <url>`_`` as ``text
    (url)``, a directive ``.. warning::`` as ``Warning:``. Other text is unchanged."""

    def role(found: re.Match[str]) -> str:
        name = found.group(1).strip()
        if found.group(0)[found.group(0).index("`") + 1] == "~":
            name = name.rsplit(".", 1)[-1]
        return f"`{name}`"

    text = _DIRECTIVE.sub(lambda found: f"{found.group(1).capitalize()}: ", text)
    return _LITERAL.sub(r"`\1`", _ROLE.sub(role, _LINK.sub(r"\1 (\2)", text)))


class PlainHelpFormatter(DefaultHelpFormatter):
    """jsonargparse's help formatter, with the docstrings' reStructuredText markup made plain
    (:func:`plain_rst`)."""

    def format_help(self) -> str:
        return plain_rst(super().format_help())
