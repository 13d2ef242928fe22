"""The comparison's figure, drawn by matplotlib (Agg): errors per 100 words per system with
their 95% intervals, one facet for all errors and one per category.

System names and category labels are untrusted text: matplotlib draws them as plain text
(``text.parse_math`` off, so a ``$`` is a dollar sign, never TeX), and in SVG each is one
``<text>`` element whose content matplotlib escapes. The SVG is deterministic (fixed hash
salt, no date) so the same comparison gives the same file. No pyplot: a :class:`Figure` drawn
on the Agg canvas, and the style (global rcParams) set under a lock, so web threads do not
mix their settings.
"""

from __future__ import annotations

import io
import math
import textwrap
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from app.quality.compare_text import system_name

FORMATS = ("svg", "png")
COLUMNS = 4
LABEL_CHARS = 24
STYLE = {
    "text.parse_math": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "marginalia-compare",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_LOCK = threading.Lock()
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7b83")


def _clip(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "…"


def _title(label: str) -> str:
    """A facet's title on at most two lines."""
    lines = textwrap.wrap(label, 22)
    return "\n".join([*lines[:1], _clip(" ".join(lines[1:]), 22)] if len(lines) > 1 else lines)


def _facets(result: Mapping[str, Any], labels: Mapping[str, str]) -> list[tuple[str, list]]:
    """(title, [(system, figure)]) for all errors, then each category."""
    rows = result["systems"]
    out = [("All errors", [(r["system"], r["errors_per_100_words"]) for r in rows])]
    for cat in result["categories"]:
        out.append(
            (
                labels.get(cat, cat),
                [(r["system"], r["per_category"][cat]["errors_per_100_words"]) for r in rows],
            )
        )
    return out


def _draw(ax: Any, title: str, points: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Horizontal bars, one per system from the top, with the interval as an error bar."""
    values, below, above = [], [], []
    for _, figure in points:
        value = figure["value"] or 0.0
        values.append(value)
        below.append(value - (figure["low"] if figure["low"] is not None else value))
        above.append((figure["high"] if figure["high"] is not None else value) - value)
    positions = list(range(len(points)))
    colours = [COLOURS[i % len(COLOURS)] for i in positions]
    ax.barh(positions, values, color=colours, alpha=0.35, height=0.6)
    ax.errorbar(values, positions, xerr=[below, above], fmt="o", color="#24292f", capsize=3, lw=1.1)
    ax.set_title(_title(title), fontsize=9)
    ax.set_yticks(positions, [_clip(system_name(name)) for name, _ in points])
    ax.set_ylim(len(points) - 0.5, -0.5)  # the first system on top
    ax.set_xlim(left=0)
    ax.tick_params(axis="both", labelsize=8)


def figure_bytes(
    result: Mapping[str, Any], fmt: str = "svg", labels: Mapping[str, str] | None = None
) -> bytes:
    """The figure of :func:`app.quality.compare.compare_systems`' result as SVG or PNG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown figure format {fmt!r}")
    facets = _facets(result, labels or {})
    columns = min(COLUMNS, len(facets))
    rows = math.ceil(len(facets) / columns)
    systems = len(result["systems"])
    height = 0.9 + 0.28 * max(systems, 2)  # per row of facets, in inches
    with _LOCK, matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(2.1 + 2.1 * columns, 0.5 + height * rows))
        axes = fig.subplots(rows, columns, squeeze=False, sharey=True)
        for ax, (title, points) in zip(axes.flat, facets, strict=False):
            _draw(ax, title, points)
        for ax in list(axes.flat)[len(facets) :]:
            ax.set_visible(False)
        for row in axes:
            row[0].tick_params(axis="y", labelleft=True)
        fig.supxlabel("errors per 100 words (95% bootstrap interval)", fontsize=9)
        fig.tight_layout()
        buffer = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(buffer, format=fmt, metadata=metadata, dpi=150)
    return buffer.getvalue()
