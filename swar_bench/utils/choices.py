"""A value outside an option's fixed choices (a ``Literal`` type) as one line: jsonargparse's
refusal dumps the types (``Expected one of typing.Literal[64, 32, 16], typing.Literal[
'transformer-engine', ...]. Got value: bogus``); :func:`choices_line` names the option, the value,
the choice meant and the choices, in the order a user reads them (``PREFERRED``)."""

from __future__ import annotations

import ast
import re

from swar_bench.utils.text import did_you_mean

PRECISIONS = ("32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "64-true", "transformer-engine",
              "transformer-engine-float16")
"""Lightning's ``--trainer.precision`` names, the common ones first."""

PREFERRED = {"trainer.precision": PRECISIONS}
"""Options whose choices are listed in this order (the others follow, as older spellings)."""


def literal_values(reason: str) -> list[str] | None:
    """The values of every ``typing.Literal[...]`` in ``reason`` (jsonargparse's refusal), in order,
    without repeats; None when it names none."""
    found: list[str] = []
    for body in re.findall(r"(?:typing\.)?Literal\[([^\]]*)\]", reason):
        try:
            values = ast.literal_eval(f"[{body}]")
        except (ValueError, SyntaxError):
            return None
        found += [str(v) for v in values if str(v) not in found]
    return found or None


def choices_line(option: str, value: str, reason: str, source: str | None = None) -> str | None:
    """``--trainer.precision=bogus: unknown precision; expected one of 32-true, 16-mixed, ...``
    (``source``: the ``--config`` file that set it, then named first), or None when ``reason``
    names no ``Literal`` choices. A name one typo from a choice is named (``did you mean``); null
    closes the list when the option takes it."""
    values = literal_values(reason)
    if values is None:
        return None
    preferred = [v for v in PREFERRED.get(option, ()) if v in values]
    older = [v for v in values if v not in preferred]
    listed = ", ".join(preferred or older)
    if preferred and older:
        listed += f" (or the older {', '.join(older)})"
    if "NoneType" in reason or re.search(r"\bNone\b", reason):
        listed += ", or null"
    what = option.rsplit(".", 1)[-1]
    lead = f"{source}: {option}={value}" if source else f"--{option}={value}"
    return f"{lead}: unknown {what}{did_you_mean(value, values)}; expected one of {listed}"
