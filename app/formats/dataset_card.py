"""The README dataset card of the parquet export: YAML metadata (licence, configs, size)
and a body with the taxonomy, counts and agreement (Krippendorff's alpha by token).

Taxonomy text is untrusted: it is HTML-escaped and kept on one line in table cells.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import yaml
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.formats.annotated import AnnotatedDocument
from app.models import Study
from app.quality.served import served_report
from app.rules.work import Work

DEFAULT_LICENSE = "unknown"
LICENSE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$")  # e.g. cc-by-4.0, mit, other


def set_license(study: Study, licence: str | None) -> None:
    """The licence the dataset card names (a Hugging Face / SPDX identifier); None clears it."""
    settings = dict(study.settings or {})
    if licence is None or not licence.strip():
        settings.pop("license", None)
    else:
        licence = licence.strip()
        if not LICENSE_PATTERN.match(licence):
            raise InvalidInput(
                "a licence is an identifier such as cc-by-4.0, cc-by-sa-4.0, mit or other "
                "(letters, digits, '.', '+', '-'; at most 64 characters)"
            )
        settings["license"] = licence
    study.settings = settings


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: escaped, one line, no pipe."""
    text = " ".join(str(value if value is not None else "").split())
    return html.escape(text).replace("|", "\\|")


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _size(count: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if count < limit:
            return name
    return "100K<n<1M" if count < 1_000_000 else "n>1M"


def _alpha(stats: dict[str, Any] | None) -> float | None:
    return ((stats or {}).get("token") or {}).get("alpha")


def _as_of(served: dict[str, Any]) -> str:
    """When the agreement figures were computed (a big study's are the stored report's)."""
    if served["mode"] == "inline":
        return ""
    if served["state"] == "none":
        return (
            " (not computed yet: the study is big, so its report is computed by the worker; "
            "export again once the dashboard shows its figures)"
        )
    when = (served["computed_at"] or "")[:19].replace("T", " ")
    if served["state"] == "current":
        return f" (computed at {when} UTC, for the work as exported)"
    return f" (computed at {when} UTC; the work changed since: they may differ from this export)"


@dataclass
class Tally:
    """What the card counts, summed a document at a time as the export writes it."""

    documents: int = 0
    annotations: int = 0
    per_category: Counter[str] = field(default_factory=Counter)
    workers: set[str] = field(default_factory=set)

    def add(self, document: AnnotatedDocument) -> None:
        self.documents += 1
        self.workers.update(document.workers)
        for marks in document.workers.values():
            self.annotations += len(marks)
            self.per_category.update(mark.category for mark in marks)


def dataset_card(session: Session, study: Study, tally: Tally, work: Work | None = None) -> str:
    """The card's Markdown text (agreement over the same documents as the export's)."""
    include_practice = work is not None and work.include_practice
    licence = str((study.settings or {}).get("license") or DEFAULT_LICENSE)
    metadata = {
        "license": licence,
        "pretty_name": cell(study.title or study.slug),
        "task_categories": ["token-classification"],
        "size_categories": [_size(tally.annotations)],
        "configs": [
            {
                "config_name": "annotations",
                "data_files": "data/annotations.parquet",
                "default": True,
            },
            {"config_name": "documents", "data_files": "data/documents.parquet"},
        ],
    }
    report, served = served_report(
        session, study, include_practice=include_practice, queue_when_stale=False
    )
    agreement = (report or {}).get("agreement") or {}
    per_category = tally.per_category
    lines = [
        "---",
        yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {cell(study.title or study.slug)}",
        "",
        "Error-span annotations exported by Marginalia: one row per annotation in "
        "`annotations` (offsets are Unicode code points into the segment, end exclusive; "
        "`document_start`/`document_end` into the document's whole `text`), the texts in "
        "`documents`.",
        "",
        f"- Licence: `{cell(licence)}`"
        + (
            " (not set: set the study's `license` before publishing)"
            if licence == DEFAULT_LICENSE
            else ""
        ),
        f"- Documents: {tally.documents}",
        f"- Workers: {len(tally.workers)}",
        f"- Annotations: {tally.annotations}",
        f"- Taxonomy: {cell(study.taxonomy_name)} (version {cell(study.taxonomy.get('version', ''))})",
        f"- Agreement over all categories (Krippendorff's alpha by token): "
        f"{_number(_alpha(agreement.get('all')))}" + _as_of(served),
        "",
        "## Taxonomy",
        "",
        "| category | label | kind | annotations | alpha (token) | definition |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for category in study.taxonomy["categories"]:
        alpha = _alpha((agreement.get("per_category") or {}).get(category["id"]))
        lines.append(
            f"| {cell(category['id'])} | {cell(category.get('label'))} | "
            f"{cell(category.get('kind'))} | {per_category.get(category['id'], 0)} | "
            f"{_number(alpha)} | {cell(category.get('definition'))} |"
        )
    lines += [
        "",
        "Definitions: workers = distinct worker ids with a submitted assignment; annotations "
        "= live annotations of submitted assignments (a training phase's practice documents "
        "are left out unless the export includes them); alpha = Krippendorff's alpha (nominal) "
        "with each token of each segment a unit and each worker who annotated the document a "
        "coder, a token's value being whether that worker marked it with the category (n/a "
        "where no unit has two coders). Marginalia's docs/FORMATS.md has the details.",
        "",
    ]
    return "\n".join(lines)
