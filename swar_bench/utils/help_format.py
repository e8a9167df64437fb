"""Help text for the terminal: the docstrings jsonargparse shows in ``--help`` (ours, Lightning's,
torch's) are reStructuredText; their markup is shown as the plain text a reader of a terminal
expects."""

from __future__ import annotations

import re
from typing import Any

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

    def _get_help_string(self, action):
        return fewer_subclasses(super()._get_help_string(action) or "")


SUBCLASSES_SHOWN = 6
"""How many "known subclasses" an option's help names (jsonargparse names every one it can
import: 299 lines of torch.nn classes under the referee's --mechanism)."""


def fewer_subclasses(text: str) -> str:
    """``text`` with its ``known subclasses: a, b, ...`` list cut to ``SUBCLASSES_SHOWN`` names and
    a count: ``known subclasses: a, b, c, d, e, f and 287 more``."""

    def cut(found: re.Match[str]) -> str:
        names = [n.strip() for n in found.group(1).split(",") if n.strip()]
        if len(names) <= SUBCLASSES_SHOWN:
            return found.group(0)
        return f"known subclasses: {', '.join(names[:SUBCLASSES_SHOWN])} and {len(names) - SUBCLASSES_SHOWN} more)"

    return re.sub(r"known subclasses: ([^()]*)\)", cut, text)


GROUP_TITLES = {
    "checkpoint": "Lightning's ModelCheckpoint: saves the model's checkpoints (last.ckpt and the best)",
    "fit": "Lightning's Trainer.fit: the optimization, resumed from --ckpt_path when given",
    "validate": "Lightning's Trainer.validate: one evaluation epoch over the validation set",
    "test": "Lightning's Trainer.test: one evaluation epoch over the test set",
    "predict": "Lightning's Trainer.predict: inference over the test configs",
}
"""Headings of ``--help`` groups whose title jsonargparse takes from a docstring's first line,
which Lightning's docstrings cut mid-sentence (``... Every logged metrics are passed to the``)."""


def retitle_groups(parser: Any, trainer_class: type, subcommand: str) -> None:
    """Give the ``checkpoint`` group and the group of ``trainer_class.<subcommand>``'s own options
    of ``parser`` (a subcommand's parser) their ``GROUP_TITLES`` heading."""
    groups = getattr(parser, "groups", None) or {}
    if "checkpoint" in groups:
        groups["checkpoint"].title = GROUP_TITLES["checkpoint"]
    method = getattr(trainer_class, subcommand, None)
    first = ((getattr(method, "__doc__", None) or "").strip().splitlines() or [""])[0].strip()
    for group in getattr(parser, "_action_groups", []):
        if first and group.title and first.startswith(group.title.rstrip(":").strip()[:40]):
            group.title = GROUP_TITLES.get(subcommand, group.title)
