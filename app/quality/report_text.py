"""The study report as plain-text tables for a terminal (``marginalia report SLUG``)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from app.quality.agreement import LEVELS, NORMALISED
from app.quality.digest import lowest_first
from app.rules.work import TRAINING_ROLES


def _row(table: Table, *cells: Any) -> None:
    """Add a row of plain text (no rich markup: ids like "[x]" stay as they are)."""
    table.add_row(*(Text(str(cell)) for cell in cells))


def fixed(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, never "-0.00": a negative value that rounds to
    zero reads 0.00 (its sign says nothing at that precision). The one number format of the
    text reports and, as the ``fixed`` filter, of the researchers' pages."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else fixed(value, digits)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _print_quality(console: Console, rows: list[Mapping[str, Any]]) -> None:
    """Estimated P, R and F1 with their bases, marks per 100 words (not a ranking: the rows
    keep the report's order, the rank by expected F1)."""
    table = Table(title="Estimated precision, recall and F1 (not a ranking)")
    for column in ("worker", "P", "R", "F1", "from", "marks/100 words"):
        table.add_column(column)
    for row in rows:
        q = row.get("quality") or {}
        bases = f"P: {q.get('precision_basis') or '–'}; R: {q.get('recall_basis') or '–'}"
        rate = _num(q.get("marks_per_100_words"), 1)
        _row(
            table,
            row["worker_id"],
            _num(q.get("precision")),
            _num(q.get("recall")),
            _num(q.get("f1")),
            bases,
            rate + (" over-marking" if q.get("over_marking") else ""),
        )
    console.print(table)


def plain_console(buffer: io.StringIO, width: int) -> Console:
    """A rich console writing plain text (no colour, markup, highlighting or emoji)."""
    return Console(
        file=buffer,
        width=width,
        color_system=None,
        force_terminal=False,
        markup=False,
        highlight=False,
        emoji=False,
    )


def format_report(report: Mapping[str, Any], *, width: int = 120, max_documents: int = 40) -> str:
    """Render a :func:`study_report` dict as plain-text tables for a terminal."""
    buffer = io.StringIO()
    console = plain_console(buffer, width)
    study, progress = report["study"], report["progress"]
    counts = progress["assignments"]
    console.print(
        f"Study {study['slug']}: {study['title']} ({study['taxonomy']}, "
        f"{study['annotators_per_doc']} per document, suggestions {study['suggestions']})"
    )
    practice = progress.get("practice_documents", 0)
    included = any(row.get("role") in TRAINING_ROLES for row in progress["per_document"])
    state = "included" if included else "left out"
    note = f"; {practice} of the training phase {state}" if practice else ""
    console.print(
        f"Documents {progress['documents']} ({progress['gold_documents']} gold{note}), "
        f"complete {progress['complete_documents']}; assignments {counts['total']}: "
        f"submitted {counts['submitted']}, active {counts['active']}"
    )

    docs = Table(title="Progress per document")
    for column in ("document", "source", "segments", "submitted", "active", "needed", "complete"):
        docs.add_column(column)
    for row in progress["per_document"][:max_documents]:
        _row(
            docs,
            row["document"]
            + (
                f" ({row['role']})"
                if row.get("role") in TRAINING_ROLES
                else " (gold)"
                if row["gold"]
                else ""
            ),
            row["source"],
            str(row["segments"]),
            str(row["submitted"]),
            str(row["active"]),
            str(row["needed"]),
            "yes" if row["complete"] else "no",
        )
    console.print(docs)
    if len(progress["per_document"]) > max_documents:
        console.print(f"... and {len(progress['per_document']) - max_documents} more documents")

    detector = report.get("detector") or {}
    confident = detector.get("confident") or {}
    if confident:
        table = Table(
            title=f"Confident suggestions (detector {detector.get('version') or 'none'}): "
            "its precision >= 0.9 (operating point or gold documents), else uncalibrated"
        )
        for column in ("category", "basis", "threshold", "detector precision", "note / why n/a"):
            table.add_column(column)
        for cat, entry in confident.items():
            _row(
                table,
                cat,
                entry.get("basis") or "n/a",
                "-" if entry.get("threshold") is None else _num(entry["threshold"]),
                _num(entry.get("detector_precision")),
                entry.get("reason") or entry.get("note") or "",
            )
        console.print(table)

    workers = Table(title="Workers, ranked by expected F1 (the rank: worker models below)")
    for column in (
        "worker",
        "docs",
        "active",
        "annotations",
        "s/segment",
        "active s/segment",
        "suggestions marked",
        "recall on confident suggestions",
    ):
        workers.add_column(column)
    for row in report["workers"]:
        rec, sure = row["suggestion_recall"], row.get("confident_recall") or {}
        _row(
            workers,
            row["worker_id"],
            str(row["documents_done"]),
            str(row["documents_active"]),
            str(row["annotations"]),
            _num(row["seconds_per_segment"], 1),
            _num(row.get("active_seconds_per_segment"), 1)
            + (" speeder" if row.get("speeder") else ""),
            f"{_num(rec['recall'])} ({rec['caught']}/{rec['total']})",
            "n/a"
            if sure.get("recall") is None
            else f"{_num(sure['recall'])} ({sure['caught']}/{sure['total']})"
            + (" uncalibrated" if sure.get("basis") == "uncalibrated" else ""),
        )
    console.print(workers)
    _print_quality(console, report["workers"])
    scored = [row for row in report["workers"] if row["gold"]]
    if scored:
        gold = Table(title="Against gold (strict: token IoU >= 0.5, one-to-one)")
        for column in (
            "worker",
            "gold docs",
            "P strict",
            "R strict",
            "F1 strict",
            "F1 lenient",
            "F1 sentences (SNaC)",
        ):
            gold.add_column(column)
        for row in scored:
            g = row["gold"]
            overall = g["overall"]
            lenient = (g.get("lenient") or {}).get("overall", {})
            sentence = (g.get("sentence") or {}).get("overall", {})
            _row(
                gold,
                row["worker_id"],
                str(g["documents"]),
                _num(overall.get("precision")),
                _num(overall.get("recall")),
                _num(overall.get("f1")),
                _num(lenient.get("f1")),
                _num(sentence.get("f1")),
            )
        console.print(gold)
    console.print(
        "suggestions marked: share of all the detector's suggestions the worker marked (capped "
        "by the detector's precision, not a recall); recall on confident suggestions: share of "
        "the suggestions above the category's threshold, see docs/METRICS.md"
    )

    agreement = report["agreement"]
    votes = agreement.get("vote_ranks")
    if votes:  # the agreement tables below are not inter-annotator agreement
        console.print(
            f"NOT INTER-ANNOTATOR AGREEMENT: {', '.join(votes['workers'])} are " + votes["note"]
        )
    table = Table(
        title=f"Agreement: Krippendorff's alpha / two-agree % "
        f"({agreement['workers']} workers, {agreement['documents']} shared documents)"
    )
    table.add_column("category")
    variants = (*LEVELS, NORMALISED)
    short = {"token": "tok", "sentence": "sent", "segment": "seg", NORMALISED: "tok-norm"}
    for variant in variants:
        table.add_column(f"α {short[variant]}", justify="right")
    for variant in variants:
        table.add_column(f"2-agree {short[variant]}", justify="right")
    rows = [
        *agreement["per_category"].items(),
        *((f"[{g}]", v) for g, v in agreement["per_group"].items()),
        ("[all]", agreement["all"]),
    ]
    for name, stats in rows:
        _row(
            table,
            name,
            *(_num(stats[v]["alpha"]) for v in variants),
            *(_pct(stats[v]["two_agree"]) for v in variants),
        )
    console.print(table)
    _breakdown(console, agreement, max_documents)
    _unitized(console, agreement, report["workers"], max_documents)

    categories = report["categories"]
    dist = Table(title=f"Annotations per category ({categories['total']} in all)")
    dist.add_column("category")
    dist.add_column("all")
    for src in categories["per_source"]:
        dist.add_column(src or "(no source)")
    for cat, count in categories["overall"].items():
        _row(dist, cat, str(count), *(str(per[cat]) for per in categories["per_source"].values()))
    console.print(dist)
    _attention(console, report.get("attention") or {})
    _booookscore(console, report.get("booookscore") or {}, max_documents)
    for key, values in (report.get("attributes") or {}).items():
        console.print(f"Attribute {key}: " + ", ".join(f"{v} {n}" for v, n in values.items()))
    return buffer.getvalue()


def _booookscore(console: Console, layers: Mapping[str, Any], max_documents: int) -> None:
    """BooookScore (share of sentences with no counted error) per source and document."""
    for name, layer in layers.items():
        if layer.get("score") is None:
            continue
        table = Table(title=f"BooookScore, {name} layer (overall {_num(layer['score'], 3)})")
        for column in ("document", "source", "sentences", "score"):
            table.add_column(column)
        for src, row in layer["per_source"].items():
            _row(
                table,
                "(all)",
                src or "(no source)",
                f"{row['documents']} docs",
                _num(row["score"], 3),
            )
        for row in layer["per_document"][:max_documents]:
            _row(table, row["document"], row["source"], row["sentences"], _num(row["score"], 3))
        console.print(table)


def _attention(console: Console, attention: Mapping[str, Any]) -> None:
    """The attention checks table: each worker's catch rate and flag."""
    if not attention.get("checks"):
        return
    threshold = attention.get("min_catch_rate")
    table = Table(
        title=f"Attention checks ({attention['checks']} in {attention['documents']} documents; "
        + ("no flagging threshold)" if threshold is None else f"flagged below {_pct(threshold)})")
    )
    for column in ("worker", "checks met", "caught", "catch rate", "flag"):
        table.add_column(column)
    for worker_id, row in attention["workers"].items():
        flag = "FLAGGED" if row["flagged"] else ""
        _row(table, worker_id, row["checks"], row["caught"], _pct(row["catch_rate"]), flag)
    console.print(table)


def _breakdown(console: Console, agreement: Mapping[str, Any], max_rows: int) -> None:
    """Agreement per document and per pair of workers (token alpha, all categories), the
    lowest first: where the workers part ways."""

    for key, title, columns in (
        ("per_document", "Agreement per document", ("document", "workers")),
        ("per_pair", "Agreement per pair of workers", ("workers", "shared documents")),
    ):
        rows = lowest_first(agreement.get(key) or [])
        if not rows:
            continue
        table = Table(title=f"{title} (token alpha over all categories, lowest first)")
        unitized = key == "per_document" and agreement.get("gamma") is not None
        for column in (*columns, "α tok", "2-agree tok", *(("γ", "uα") if unitized else ())):
            table.add_column(column)
        for row in rows[:max_rows]:
            name = row["document"] if key == "per_document" else " + ".join(row["workers"])
            size = row["workers"] if key == "per_document" else row["documents"]
            cells = (_num(row["token"]["alpha"]), _pct(row["token"]["two_agree"]))
            if unitized:  # per_pair rows have no γ of their own: agreement.pairs holds them
                cells += (_num((row["gamma"] or {}).get("gamma")), _num(row["unitized_alpha"]))
            _row(table, name, size, *cells)
        console.print(table)
        if len(rows) > max_rows:
            console.print(f"... and {len(rows) - max_rows} more (marginalia report --json)")


def _gamma(stat: Mapping[str, Any] | None) -> str:
    if not stat:
        return "-"
    if stat.get("low") is None:
        return _num(stat["gamma"])
    return f"{_num(stat['gamma'])} [{_num(stat['low'])}, {_num(stat['high'])}]"


def _unitized(
    console: Console, agreement: Mapping[str, Any], workers: list[Any], max_rows: int
) -> None:
    """γ and unitizing α per category, the pairs (lowest γ first) and the worker models."""
    state = agreement.get("unitized") or {}
    if agreement.get("gamma") is None:
        console.print(f"γ and unitizing α: {state.get('state', 'none')} (not computed)")
        return
    study = state.get("study") or {}
    when = (
        f"computed {str(state['computed_at'])[:16].replace('T', ' ')} UTC; "
        if state.get("computed_at")
        else ""
    )
    missing = f", {state['missing']} parts still to compute" if state.get("missing") else ""
    table = Table(
        title=f"Unitized agreement: γ [range] / unitizing α ({state.get('state')}{missing}; "
        f"{when}{study.get('documents')} documents x {study.get('annotators')} workers, "
        f"{study.get('left_out')} left out; seed {state.get('seed')})"
    )
    for column in ("category", "γ", "uα"):
        table.add_column(column)
    gamma, alpha = agreement["gamma"], agreement["unitized_alpha"]
    for name in gamma["per_category"]:
        _row(table, name, _gamma(gamma["per_category"][name]), _num(alpha["per_category"][name]))
    for name in gamma["per_group"]:
        _row(table, f"[{name}]", _gamma(gamma["per_group"][name]), _num(alpha["per_group"][name]))
    _row(table, "[all]", _gamma(gamma["all"]), _num(alpha["all"]))
    console.print(table)
    pairs = agreement.get("pairs") or {"workers": []}
    names, found = pairs["workers"], []
    for i, first in enumerate(names):
        for j in range(i + 1, len(names)):
            if pairs["documents"][i][j]:
                value = (pairs["gamma"][i][j] or {}).get("gamma")
                found.append((value is None, value or 0.0, first, names[j], i, j))
    if found:
        table = Table(
            title="Unitized agreement per pair of workers (γ, all categories, lowest first)"
        )
        for column in ("workers", "shared documents", "γ", "uα"):
            table.add_column(column)
        for _, _, first, second, i, j in sorted(found)[:max_rows]:
            value = pairs["unitized_alpha"][i][j]
            row = (pairs["documents"][i][j], _gamma(pairs["gamma"][i][j]), _num(value))
            _row(table, f"{first} + {second}", *row)
        console.print(table)
    models = agreement.get("worker_models") or {}
    rated = [w for w in workers if w.get("reliability")]
    if rated:
        table = Table(
            title=f"Worker models over {models.get('units')} {models.get('unit')} units "
            "(expected F1, the rank; Dawid-Skene sensitivity / specificity; MACE competence: "
            "agreement with the majority, not a ranking)"
        )
        for column in ("rank", "worker", "expected F1", "sensitivity", "specificity", "MACE"):
            table.add_column(column)
        for w in rated:
            r = w["reliability"]
            _row(
                table,
                str(w.get("rank") or "–"),
                w["worker_id"],
                *(
                    _num(r.get(k))
                    for k in ("expected_f1", "sensitivity", "specificity", "competence")
                ),
            )
        console.print(table)
    elif models.get("reason"):
        console.print(f"Worker models: {models['reason']}")
