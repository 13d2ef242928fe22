"""An add's body checked against its document and its study's taxonomy: the annotation's
values, or :class:`InvalidInput` naming what is wrong (:func:`app.annotation.add.add`, once
per add; researchers' spans: :data:`check_span`). Whether its ``suggestion_id`` was shown to
the worker is the add's to decide (:func:`app.annotation.add.shown_suggestion`)."""

from __future__ import annotations

import uuid
from typing import Any

from app.annotation.pairing import paired_values
from app.documents.attributes import check_attributes
from app.documents.numbers import MAX_ID as MAX_ID  # larger ids overflow SQLite's driver
from app.documents.text import normalise_newlines
from app.errors import InvalidInput

MAX_COMMENT_CHARS = 5_000


def _int(body: dict[str, Any], key: str, where: str = "") -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{where}{key} must be an integer")
    return value


def _span(body: Any, texts: list[str], where: str) -> tuple[int, int, int, str]:
    """Validate a (segment, start, end, text) span against the document's segments."""
    if not isinstance(body, dict):
        raise InvalidInput(f"{where or 'span'} must be an object")
    segment = _int(body, "segment", where)
    start = _int(body, "start", where)
    end = _int(body, "end", where)
    text = body.get("text")
    if not isinstance(text, str):
        raise InvalidInput(f"{where}text must be the span's text")
    if not 0 <= segment < len(texts):
        raise InvalidInput(f"{where}segment {segment} is out of range (0..{len(texts) - 1})")
    segment_text = texts[segment]
    if start == end and 0 <= start <= len(segment_text):
        raise InvalidInput(f"{where}the span is empty ({start}..{end}): select its text")
    if not 0 <= start < end <= len(segment_text):
        raise InvalidInput(
            f"{where}offsets {start}..{end} are out of range for segment {segment} "
            f"({len(segment_text)} characters)"
        )
    if segment_text[start:end] != text:
        raise InvalidInput(
            f"{where}text does not match the segment at {start}..{end}: "
            f"expected {segment_text[start:end]!r}"
        )
    if not text.strip():
        raise InvalidInput(f"{where}span is only whitespace")
    return segment, start, end, text


ANNOTATION_FIELDS = frozenset(
    (
        "segment",
        "start",
        "end",
        "text",
        "category",
        "paired",
        "comment",
        "client_id",
        "suggestion_id",
        "categories",
        "attributes",
    )
)
MAX_LABELS = 20  # categories on one multi-label mark


def _labels(body: dict[str, Any], categories: dict[str, dict[str, Any]], multi: bool) -> list:
    """The mark's category ids: ``category`` (one), or ``categories`` (a list; several only
    where the taxonomy sets ``multi_label``); every one known, none twice."""
    labels = body.get("categories")
    if labels is None:
        labels = [body.get("category")]
    elif not isinstance(labels, list) or not labels or len(labels) > MAX_LABELS:
        raise InvalidInput(f"categories must be a list of 1 to {MAX_LABELS} category ids")
    elif "category" in body and body["category"] != labels[0]:
        raise InvalidInput("category must be the first of categories (or leave it out)")
    for label in labels:
        if not isinstance(label, str) or label not in categories:
            raise InvalidInput(
                f"unknown category {label!r} (this study has: {', '.join(categories)})"
            )
    if len(set(labels)) != len(labels):
        raise InvalidInput("categories names a category twice")
    if len(labels) > 1 and not multi:
        raise InvalidInput("this study's taxonomy gives a mark one category (not multi_label)")
    return labels


def annotation_values(
    body: Any, texts: list[str], categories: dict[str, dict[str, Any]], multi_label: bool = False
) -> tuple[dict[str, Any], str]:
    """An add's body checked against the document's ``texts`` and the study's ``categories``:
    the row's values and its ``client_id`` (a new one when the body has none). A body with
    ``categories`` (a multi-label mark) also gives ``values["categories"]``, the first being
    ``values["category"]``; ``attributes`` are checked against every one of them."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    unknown = set(body) - ANNOTATION_FIELDS
    if unknown:
        raise InvalidInput(f"unknown field {sorted(unknown)[0]!r}")
    segment, start, end, text = _span(body, texts, "")
    labels = _labels(body, categories, multi_label)
    category_id = labels[0]
    category = _pair_rule([categories[label] for label in labels])
    paired = body.get("paired")
    values: dict[str, Any] = {
        "segment": segment,
        "start": start,
        "end": end,
        "text": text,
        "category": category_id,
        "paired_segment": None,
        "paired_start": None,
        "paired_end": None,
        "paired_text": None,
        "paired_end_segment": None,
    }
    if category["kind"] == "paired":
        if paired is None:
            raise InvalidInput(f"category {category_id!r} is paired: give the earlier span too")
        values.update(paired_values(paired, category, texts, segment, start, _span))
    elif category["kind"] == "relation" and paired is not None:
        values.update(paired_values(paired, category, texts, segment, start, _span, False))
    elif paired is not None:
        raise InvalidInput(f"category {category_id!r} is a singleton: it takes no paired span")
    if "attributes" in body:  # absent: the column is not written (the hot path's INSERT)
        values["attributes"] = check_attributes(body["attributes"], map(categories.get, labels))
    elif any(c.get("attributes") for c in map(categories.get, labels)):
        check_attributes(None, map(categories.get, labels))  # the required ones
    if "categories" in body:
        values["categories"] = labels
    comment = body.get("comment") or ""
    if not isinstance(comment, str):
        raise InvalidInput("comment must be text")
    if len(comment) > MAX_COMMENT_CHARS:
        raise InvalidInput(f"comment is longer than {MAX_COMMENT_CHARS} characters")
    # Spaces and line breaks around a comment go; a leading tab stays (the CSV export
    # neutralises it, JSONL keeps it).
    values["comment"] = normalise_newlines(comment).strip(" \n")
    client_id = body.get("client_id")
    if client_id is None:
        client_id = uuid.uuid4().hex
    if not isinstance(client_id, str) or not 1 <= len(client_id) <= 100:
        raise InvalidInput("client_id must be text of 1 to 100 characters")
    if client_id.startswith("~"):  # a multi-label mark's other rows (app/annotation/fast.py)
        raise InvalidInput("client_id must not start with ~ (kept for a mark's other rows)")
    suggestion_id = body.get("suggestion_id")
    if suggestion_id is not None:
        if not isinstance(suggestion_id, int) or isinstance(suggestion_id, bool):
            raise InvalidInput("suggestion_id must be an integer")
        if not 0 < suggestion_id <= MAX_ID:  # no id at all: a bad value, like any other
            raise InvalidInput(f"suggestion_id must be a suggestion id (1 to {MAX_ID})")
    values["suggestion_id"] = suggestion_id
    return values, client_id


def _pair_rule(chosen: list[dict[str, Any]]) -> dict[str, Any]:
    """The category whose pairing rule a mark follows: its only one, or for a multi-label
    mark the first paired one, else the first relation, else the first (a singleton)."""
    for kind in ("paired", "relation"):
        for category in chosen:
            if category["kind"] == kind:
                if kind == "paired" and any(c["kind"] == "singleton" for c in chosen):
                    raise InvalidInput(
                        f"category {category['id']!r} is paired: it cannot share a mark with a "
                        "singleton category"
                    )
                return category
    return chosen[0]


check_span = _span  # the same checks for researchers' spans (app/quality/adjudication.py)
