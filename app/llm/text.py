"""The calibration and a run's state as plain text (``marginalia llm calibration`` and
``status``): the same figures as the calibration view, one table per section."""

from __future__ import annotations

from typing import Any

from app.llm import ALL


def figure(value: dict[str, Any] | None) -> str:
    """``0.62 [0.51–0.70]``, ``0.62`` without an interval, ``–`` when undefined."""
    if not value or value.get("value") is None:
        return "–"
    if value.get("low") is None or value.get("high") is None:
        return f"{value['value']:.2f}"
    return f"{value['value']:.2f} [{value['low']:.2f}–{value['high']:.2f}]"


def money(value: float | None, currency: str) -> str:
    return "–" if value is None else f"{value:,.4f} {currency}"


def number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def columns(result: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(heading, key, selector) of each column: the annotator, the humans pooled, each human."""
    return [
        (result["worker_id"], "annotator", None),
        ("humans", "humans", None),
        *[(h, "per_human", h) for h in result["humans"]],
    ]


def section(result: dict[str, Any], name: str, metric: str = "f1") -> list[list[str]]:
    """Rows (category, then each column's figure) of section ``name``."""
    data = result[name]
    rows = []
    for category in [*result["categories"], ALL]:
        row = [category]
        for _, key, human in columns(result):
            found = data[key][human] if human is not None else data[key]
            entry = (found or {}).get(category) or {}
            row.append(figure(entry.get(metric) if metric in entry else entry))
        rows.append(row)
    return rows


def _table(headings: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headings, *rows]) for i in range(len(headings))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(headings, widths, strict=True))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def format_calibration(result: dict[str, Any]) -> str:
    heads = ["category", *[h for h, _, _ in columns(result)]]
    docs = result["documents"]
    out = [
        f"Calibration of {result['worker_id']} ({result['model']}, preset {result['preset']}), "
        f"computed {result['computed_at']}: {docs['annotator']} documents annotated, "
        f"{docs['humans']} by humans, {docs['gold']} with gold; 95% intervals: percentile "
        f"bootstrap over documents ({result['resamples']} resamples).",
        "",
        "F1 against gold (strict)",
        _table(heads, section(result, "gold")),
        "",
        "F1 against the other humans' consensus (strict, leave one out)",
        _table(heads, section(result, "consensus")),
        "",
        "Krippendorff's alpha with the humans (tokens, pairs pooled)",
        _table(heads, section(result, "alpha", metric="alpha")),
        "",
    ]
    cost, currency = result["cost"], result["cost"]["currency"]
    rows = []
    for heading, key, human in columns(result):
        c = cost[key][human] if human is not None else cost[key]
        rows.append(
            [
                heading,
                str(c["documents"]),
                number(c["minutes_per_document"]),
                money(c["cost_per_document"], currency),
                str(c["correct_errors"]),
                money(c["cost_per_correct_error"], currency),
                number(c["minutes_per_correct_error"]),
            ]
        )
    out += [
        "Cost (model: tokens x price; humans: paid minutes x pay per hour)",
        _table(
            [
                "who",
                "documents",
                "min/doc",
                "cost/doc",
                "correct errors (gold)",
                "cost/correct error",
                "min/correct error",
            ],
            rows,
        ),
        f"paid for this annotator's requests: {cost['paid']['prompt_tokens']:,} tokens in, "
        f"{cost['paid']['completion_tokens']:,} out, {money(cost['paid']['cost'], currency)}",
    ]
    return "\n".join(out) + "\n"


def format_runs(states: list[dict[str, Any]]) -> str:
    if not states:
        return "no LLM run yet: marginalia llm annotate SLUG --annotator NAME\n"
    lines = [
        f"run {s['id']} {s['annotator']} ({s['model']}): {s['stage']}, {s['finished']} of "
        f"{s['documents']} documents ({s['annotated']} annotated, {s['skipped']} skipped, "
        f"{s['failed']} failed), {s['marks']} marks, {s['prompt_tokens']:,} + "
        f"{s['completion_tokens']:,} tokens, {s['seconds']:g} s"
        + (f"; {s['error']}" if s["error"] else "")
        for s in states
    ]
    return "\n".join(lines) + "\n"
