"""Server-rendered SVG charts for the study dashboard (no chart library, no inline styles).

Colours go in SVG presentation attributes (``fill``), which the page's CSP allows;
typography comes from static/css/admin.css. Each function returns safe Markup.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

WIDTH = 520
LABEL_W = 210
ROW_H = 26
BAR_H = 16
NEUTRAL = "#9aa5b1"


def _svg(height: int, title: str, desc: str, body: list[str], width: int = WIDTH) -> Markup:
    uid = hashlib.sha1(f"{title}|{desc}".encode()).hexdigest()[:8]
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        f'aria-labelledby="t{uid} d{uid}" preserveAspectRatio="xMinYMin meet">'
        f'<title id="t{uid}">{escape(title)}</title><desc id="d{uid}">{escape(desc)}</desc>'
        + "".join(body)
        + "</svg>"
    )


def _text(x: float, y: float, text: Any, cls: str = "", anchor: str = "start") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{escape(str(text))}</text>'


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str = "", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    inner = f"<title>{escape(tip)}</title>" if tip else ""
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" '
        f'fill="{escape(fill)}" rx="2"{klass}>{inner}</rect>'
    )


def _clip(label: str, chars: int = 28) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "…"


def category_bars(counts: Mapping[str, int], categories: Sequence[Mapping[str, Any]]) -> Markup:
    """Horizontal bars: annotations per category, in taxonomy order, with counts and shares."""
    known = {c["id"]: c for c in categories}
    rows = list(counts.items())
    total = sum(counts.values())
    top = max([n for _, n in rows] + [1])
    plot = WIDTH - LABEL_W - 80
    body = []
    for i, (cat, n) in enumerate(rows):
        y = 8 + i * ROW_H
        meta = known.get(cat, {})
        label = meta.get("label") or cat
        color = meta.get("color") or NEUTRAL
        share = f"{100 * n / total:.0f}%" if total else "–"
        body.append(_text(LABEL_W - 8, y + BAR_H - 3, _clip(label), "axis-label", "end"))
        body.append(_rect(LABEL_W, y, plot * n / top, BAR_H, color, f"{label}: {n} ({share})"))
        body.append(_text(LABEL_W + plot * n / top + 6, y + BAR_H - 3, f"{n}  ({share})", "value"))
    height = 16 + len(rows) * ROW_H
    desc = ", ".join(f"{cat} {n}" for cat, n in rows) or "no annotations yet"
    return _svg(height, "Annotations per error category", desc, body)


def source_distribution(
    per_source: Mapping[str, Mapping[str, int]],
    segments_per_source: Mapping[str, int],
    categories: Sequence[Mapping[str, Any]],
) -> Markup:
    """SNaC Figure 4 style: per document source, the share of each category (100% bars),
    with errors per annotated segment written beside each bar, and a legend."""
    known = {c["id"]: c for c in categories}
    order = [c["id"] for c in categories]
    sources = list(per_source)
    label_w = min(LABEL_W, 24 + 7 * max((len(src or "(no source)") for src in sources), default=8))
    plot = WIDTH - label_w - 100
    body = []
    for i, src in enumerate(sources):
        y = 8 + i * (ROW_H + 6)
        counts = per_source[src]
        total = sum(counts.values())
        name = src or "(no source)"
        body.append(_text(label_w - 8, y + BAR_H, _clip(name), "axis-label", "end"))
        x = float(label_w)
        if total == 0:
            body.append(_rect(x, y + 2, plot, BAR_H, "#eef1f5", f"{name}: no errors marked"))
        for cat in order + sorted(set(counts) - set(order)):
            n = counts.get(cat, 0)
            if not n or not total:
                continue
            w = plot * n / total
            label = known.get(cat, {}).get("label") or cat
            color = known.get(cat, {}).get("color") or NEUTRAL
            tip = f"{name} · {label}: {n} of {total} ({100 * n / total:.0f}%)"
            body.append(_rect(x, y + 2, w, BAR_H, color, tip, "stack"))
            if w > 34:
                body.append(
                    _text(x + w / 2, y + BAR_H - 1, f"{100 * n / total:.0f}%", "in-bar", "middle")
                )
            x += w
        segs = segments_per_source.get(src, 0)
        rate = f"{total / segs:.2f} / segment" if segs else f"{total} errors"
        body.append(_text(label_w + plot + 8, y + BAR_H, rate, "value"))
    height = 8 + len(sources) * (ROW_H + 6)
    desc = "; ".join(
        f"{src or '(no source)'}: " + ", ".join(f"{c} {n}" for c, n in per_source[src].items() if n)
        for src in sources
    )
    return _svg(height, "Error distribution by document source", desc or "no documents", body)


def has_recall(workers: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any worker has a suggestion recall or a gold F1 to draw."""
    return any(
        (row.get("suggestion_recall") or {}).get("recall") is not None
        or ((row.get("gold") or {}).get("overall") or {}).get("f1") is not None
        for row in workers
    )


TAGGED = {"rejected": "rejected", "screened_out": "screened out"}


def _worker_label(row: Mapping[str, Any]) -> str:
    """A worker's name on the chart, with the fate a researcher acted on (rejected, screened
    out) after it."""
    tag = TAGGED.get(row.get("state") or "")
    return f"{_clip(row['worker_id'], 18 if tag else 28)}{f' ({tag})' if tag else ''}"


def worker_recall(workers: Sequence[Mapping[str, Any]], width: int = 640) -> Markup:
    """Per worker: the share of the detector's suggestions marked and, with gold, strict F1."""
    label_w = min(LABEL_W, 24 + 7 * max((len(_worker_label(r)) for r in workers), default=8))
    plot = width - label_w - 50
    body = []
    y = 4.0
    for row in workers:
        rec = (row.get("suggestion_recall") or {}).get("recall")
        gold = ((row.get("gold") or {}).get("overall") or {}).get("f1")
        body.append(_text(label_w - 8, y + 15, _worker_label(row), "axis-label", "end"))
        bars = [
            ("suggestions", rec, "#2457a6", "suggestions marked"),
            ("gold", gold, "#1f7a3f", "strict F1 on gold"),
        ]
        for j, (_key, value, color, what) in enumerate(bars):
            by = y + j * 13  # the two values' text boxes (11 px type) do not touch
            body.append(_rect(label_w, by, plot, 9, "#eef1f5"))
            if value is not None:
                body.append(
                    _rect(
                        label_w,
                        by,
                        plot * value,
                        9,
                        color,
                        f"{row['worker_id']}: {what} {100 * value:.0f}%",
                    )
                )
                body.append(
                    _text(label_w + plot + 6, by + 8.5, f"{100 * value:.0f}%", "value small")
                )
            else:
                body.append(_text(label_w + plot + 6, by + 8.5, "–", "value small muted"))
        y += 34
    # axis
    for k in range(0, 101, 25):
        x = label_w + plot * k / 100
        body.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{y:.1f}" class="gridline"/>')
        body.append(_text(x, y + 12, f"{k}%", "tick", "middle"))
    # The legend, one entry per line: side by side, the first label ran into the second.
    legend_y = y + 26
    for k, (color, label) in enumerate(
        (
            ("#2457a6", "share of the detector's suggestions marked"),
            ("#1f7a3f", "F1 against gold (strict)"),
        )
    ):
        body.append(_rect(label_w, legend_y + 16 * k, 12, 9, color))
        body.append(_text(label_w + 16, legend_y + 16 * k + 9, label, "legend"))
    legend_y += 16
    desc = "; ".join(
        f"{r['worker_id']}: suggestions marked "
        f"{(r.get('suggestion_recall') or {}).get('recall')}, gold F1 "
        f"{((r.get('gold') or {}).get('overall') or {}).get('f1')}"
        for r in workers
    )
    return _svg(
        int(legend_y + 16),
        "Suggestions marked and gold F1 per worker",
        desc or "no workers yet",
        body,
        width,
    )


def legend(categories: Sequence[Mapping[str, Any]]) -> Markup:
    """An HTML legend (wraps like text) of the categories' colours."""
    items = "".join(
        f'<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" '
        f'rx="2" fill="{escape(c.get("color") or NEUTRAL)}"/></svg>{escape(c.get("label") or c["id"])}</li>'
        for c in categories
    )
    return Markup(f'<ul class="chart-legend">{items}</ul>')
