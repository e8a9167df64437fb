"""Writing a referee result: the JSON file and the forgetting-curve PNG, both atomically
(``swar_bench.utils.files.atomic_write``: temp file + rename)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker

from swar_bench.utils.files import atomic_write
from swar_bench.utils.yaml_keys import DuplicateKey, json_unique


def write_json(result: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write ``result`` as strict JSON (no NaN: undefined values are ``null``) to ``path``, atomically."""
    path = Path(path)
    text = json.dumps(result, indent=2, sort_keys=False, allow_nan=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode()), binary=True)
    return path


def read_json(path: str | os.PathLike) -> dict[str, Any]:
    """Read a result written by ``write_json``.

    Raises:
        ValueError: the file is missing, unreadable or not JSON (one line naming the path).
    """
    try:
        return json_unique(Path(path).read_text())
    except DuplicateKey as e:  # JSON would keep the last value: a result holding two of one field
        raise ValueError(f"{path}: {e}; expected a referee result JSON") from None
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file; expected a referee result JSON") from None
    except (OSError, UnicodeDecodeError) as e:  # a folder, unreadable, not text
        why = getattr(e, "strerror", None) or str(e)
        raise ValueError(
            f"{path}: cannot be read ({why}); expected a referee result JSON"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path}: not valid JSON ({e.msg} at line {e.lineno}); expected a referee result"
        ) from None


PLOT_FORMATS = ("png", "pdf", "svg")
"""The figure formats ``plot_forgetting_curve`` writes, named by the file's suffix (matplotlib's backends)."""


def plot_format(path: str | os.PathLike, shown: str | None = None) -> str:
    """The figure format ``path``'s suffix names: ``"png"`` for ``curve.PNG``.

    Raises:
        ValueError: a suffix outside :data:`PLOT_FORMATS`, or none (one line naming ``shown``, by
            default the path).
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        what = f"its suffix {Path(path).suffix!r} is not a figure format" if suffix else "it has no suffix"
        raise ValueError(f"{shown or repr(os.fspath(path))}: {what}; expected a file ending "
                         f"{', '.join('.' + f for f in PLOT_FORMATS[:-1])} or .{PLOT_FORMATS[-1]}")
    return suffix


def plot_forgetting_curve(
    results: Mapping[str, Mapping[str, Any]], path: str | os.PathLike
) -> Path:
    """Draw needle accuracy and the self-reported probe loss against range, one colour per
    mechanism, in two panels that share the range axis and have their own labelled y axes.

    Top: exact accuracy (solid; the loss-threshold proxy, dashed, for loss-only mechanisms) on
    [0, 1], shaded with its 95% Wilson interval (the needle cells' ``accuracy_ci`` /
    ``proxy_ci``). Bottom: the mechanism's own mean probe loss (nats, from 0) with the solved
    threshold ``0.5 ln V`` as a labelled line, so neither quantity is read on the other's scale.
    Written atomically, in the format its suffix names (:data:`PLOT_FORMATS`).

    Raises:
        ValueError: ``path``'s suffix is not one of :data:`PLOT_FORMATS` (one line), before drawing.
    """
    fmt = plot_format(path)
    fig = forgetting_curve_figure(results)
    path = Path(path)
    try:
        atomic_write(path, lambda f: fig.savefig(f, format=fmt), binary=True)
    finally:
        plt.close(fig)
    return path


def forgetting_curve_figure(results: Mapping[str, Mapping[str, Any]]):
    """The figure of :func:`plot_forgetting_curve` (a matplotlib ``Figure`` with two axes: accuracy
    on top, probe loss below); the caller closes it."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.5, 7.0), dpi=110, sharex=True,
                                  gridspec_kw={"height_ratios": (3, 2)})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    threshold = None
    top_loss = 0.0
    for i, (name, r) in enumerate(results.items()):
        curve = r["forgetting_curve"]
        xs = [p["range"] for p in curve]
        c = colors[i % len(colors)]
        exact = all(p["accuracy"] is not None for p in curve)
        cis = [cell.get("accuracy_ci" if exact else "proxy_ci") for cell in r["suites"]["needle"]]
        if all(ci is not None for ci in cis):
            ax.fill_between(xs, [lo for lo, _ in cis], [hi for _, hi in cis], color=c, alpha=0.15, lw=0)
        sk = r["self_knowledge_correlation"]
        sk_text = "n/a" if sk is None or math.isnan(sk) else f"{sk:+.2f}"
        if exact:
            ax.plot(xs, [p["accuracy"] for p in curve], "-o", color=c,
                    label=f"{name} (self-knowledge r = {sk_text})")
        else:
            ax.plot(xs, [p["proxy_accuracy"] for p in curve], "--o", color=c,
                    label=f"{name}, loss-threshold proxy (self-knowledge r = {sk_text})")
        losses = [p["loss"] for p in curve]
        ax2.plot(xs, losses, "-s", color=c, alpha=0.9, label=name)
        top_loss = max([top_loss, *(v for v in losses if v is not None and math.isfinite(v))])
        threshold = r["solved_threshold"]
    if threshold is not None:
        ax2.axhline(threshold, color="grey", lw=0.8, ls="--")
        ax2.annotate(f"solved threshold 0.5 ln V = {threshold:.2f} nats", (0.01, threshold), xycoords=("axes fraction", "data"),
                     xytext=(0, 3), textcoords="offset points", fontsize=7, color="grey")
        top_loss = max(top_loss, threshold)
    ax.set_xscale("log")
    ticks = sorted({p["range"] for r in results.values() for p in r["forgetting_curve"]})
    ax2.set_xticks(ticks)
    ax2.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(-0.03, 1.03)
    ax2.set_ylim(0, 1.1 * top_loss if top_loss > 0 else 1.0)
    ax.set_ylabel("needle accuracy")
    ax2.set_ylabel("probe loss (nats)")
    ax2.set_xlabel("range (tokens between the needle and its query)")
    ax.set_title("Forgetting curve: accuracy (top) and the mechanism's own probe loss (bottom)", fontsize=10)
    ax.grid(alpha=0.3)
    ax2.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig
