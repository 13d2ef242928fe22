"""The comparison of systems as Markdown tables a paper can quote (``marginalia compare``)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from app.quality.report_text import fixed, plain_console


def ci_parts(figure: Mapping[str, Any] | None, digits: int = 2, unit: str = "") -> tuple[str, str]:
    """(``value``, ``[low, high]``): ``–`` for a missing value, ``""`` without an interval;
    ``unit`` "%" or " pp" shows the figure × 100."""
    if not figure or figure.get("value") is None:
        return "–", ""
    scale = 100 if unit else 1
    value = fixed(scale * figure["value"], digits) + unit
    if figure.get("low") is None or figure.get("high") is None:
        return value, ""
    low, high = (fixed(scale * figure[k], digits) for k in ("low", "high"))
    return value, f"[{low}, {high}]"


def ci(figure: Mapping[str, Any] | None, digits: int = 2, unit: str = "") -> str:
    """``value [low, high]`` (see :func:`ci_parts`)."""
    return " ".join(part for part in ci_parts(figure, digits, unit) if part)


def as_figure(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A pair's entry as a figure (``difference`` as its value)."""
    return {"value": entry.get("difference"), "low": entry.get("low"), "high": entry.get("high")}


def difference(entry: Mapping[str, Any], digits: int = 2, unit: str = "") -> str:
    """A pair's ``difference [low, high]``."""
    return ci(as_figure(entry), digits, unit)


def p_value(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def system_name(name: str) -> str:
    return name or "(no source)"


def _table(columns: list[str], labels: int = 1) -> Table:
    """A Markdown table whose first ``labels`` columns are text, the others numbers."""
    table = Table(box=box.MARKDOWN)
    for n, column in enumerate(columns):
        table.add_column(column, justify="left" if n < labels else "right")
    return table


def _row(table: Table, *cells: Any) -> None:
    table.add_row(*(Text(str(cell)) for cell in cells))  # plain text: no rich markup


def describe(result: Mapping[str, Any]) -> str:
    """One sentence: what counts as an error and how the figures were computed."""
    if result["layer"] == "workers":
        rule = f"an error counts when at least {result['min_workers']} workers marked it"
    else:
        rule = "an error counts when it is in the adjudicated layer (reviews done)"
    return (
        f"Systems of study {result['study']} compared by {result['by']}: {rule}; "
        f"{round(100 * result['confidence'])}% {result['interval']} "
        f"({result['resamples']:,} resamples, seed {result['seed']}); "
        f"p: {result['test']}."
    )


def format_comparison(result: Mapping[str, Any], *, width: int = 160) -> str:
    """Render :func:`app.quality.compare.compare_systems`' result as text."""
    buffer = io.StringIO()
    console = plain_console(buffer, width)
    console.print(describe(result))
    if result["documents_left_out"]:
        console.print(
            f"{result['documents_left_out']} documents left out (too few submitted workers, "
            "or no done review)."
        )
    if result.get("vote_rank_documents"):
        console.print(
            f"{result['vote_rank_documents']} documents imported by vote rank: counted at "
            "every K (a rank no error reached is a clean document there)."
        )
    if not result["systems"]:
        console.print("No documents to compare.")
        return _lines(buffer)
    systems = _table(
        [
            "system",
            "documents",
            "sentences",
            "words",
            "errors",
            "errors / 100 words [95% CI]",
            "errors / sentence [95% CI]",
            "clean sentences [95% CI]",
        ],
    )
    for row in result["systems"]:
        _row(
            systems,
            system_name(row["system"]),
            row["documents"],
            row["sentences"],
            row["words"],
            row["errors"],
            ci(row["errors_per_100_words"]),
            ci(row["errors_per_sentence"], 3),
            ci(row["clean_sentence_share"], 1, "%"),
        )
    console.print("\nPer system")
    console.print(systems)
    categories = _table(["system", *result["categories"]])
    for row in result["systems"]:
        _row(
            categories,
            system_name(row["system"]),
            *(ci(row["per_category"][cat]["errors_per_100_words"]) for cat in result["categories"]),
        )
    console.print("Errors per 100 words per category [95% CI]")
    console.print(categories)
    if result["pairs"]:
        pairs = _table(
            [
                "a",
                "b",
                "errors / 100 words [95% CI]",
                "p",
                "p (Holm)",
                "clean sentences [95% CI]",
                "p",
                "p (Holm)",
            ],
        )
        for pair in result["pairs"]:
            clean = pair["clean_sentence_share"]
            _row(
                pairs,
                system_name(pair["a"]),
                system_name(pair["b"]),
                difference(pair),
                p_value(pair["p"]),
                p_value(pair["p_holm"]),
                difference(clean, 1, " pp"),
                p_value(clean["p"]),
                p_value(clean["p_holm"]),
            )
        console.print("Pairs (a − b)")
        console.print(pairs)
    return _lines(buffer)


def _lines(buffer: io.StringIO) -> str:
    """The text without trailing spaces (rich pads lines to the console's width)."""
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
