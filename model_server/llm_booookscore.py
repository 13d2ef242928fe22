"""The BooookScore protocol as an annotator preset (Chang, Lo, Goyal and Iyyer, ICLR 2024):
the model reads the whole summary and judges its sentences in numbered batches, naming for
each the confusion types it causes and the questions a reader would ask, or none.

The shape is the paper's (the whole summary, then numbered sentences, one judgement per
sentence: questions and types, or null; batches of sentences as in its second version);
the wording is ours and the types are the study's categories with their definitions, so
``taxonomies/booookscore.yaml`` gives the paper's eight. A confusing sentence becomes one
mark over the whole sentence (all its types, in a ``multi_label`` taxonomy; else a mark
per type) with the questions as its comment, so the study's BooookScore of the model's
marks (the share of sentences no mark touches) is the paper's score of the model's
judgements. Sentences are the app's own (the one splitter), passed in as offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from model_server.llm_annotate import SegmentMarks
from model_server.llm_prompt import MAX_REASON, decode

BATCH = 10  # sentences judged per request (the paper's second version batches them too)

SYSTEM = """You read a summary of a long text as a reader who has not read the original, \
and you judge whether given sentences of the summary confuse that reader. The kinds of \
confusion (use the id exactly):
{types}

A sentence confuses only when both hold: without the missing piece a reader would \
struggle to follow the main story, or the summary would seem incoherent; and the summary \
itself does not resolve it. A sentence may confuse in several ways.

Answer with one JSON object and nothing else, one entry per numbered sentence:
{{"sentences": [{{"number": <its number>, "questions": "<the questions a confused reader \
would ask>" or null, "types": ["<id>", ...] or null}}]}}
Give null for both when a sentence does not confuse."""


def describe_types(taxonomy: dict[str, Any]) -> str:
    return "\n".join(
        f"- {c['id']}: {' '.join((c.get('definition') or c.get('label') or c['id']).split())}"
        for c in taxonomy.get("categories", [])
    )


def batches(count: int, size: int = BATCH) -> list[range]:
    """Sentence numbers 1..count in batches of ``size``."""
    size = max(1, size)
    return [range(first, min(first + size, count + 1)) for first in range(1, count + 1, size)]


def build_messages(
    taxonomy: dict[str, Any], summary: str, sentences: Sequence[str], numbers: range
) -> list[dict[str, str]]:
    """The chat messages judging sentences ``numbers`` (1-based) of ``sentences``."""
    listed = "\n".join(f"{n}. {' '.join(sentences[n - 1].split())}" for n in numbers)
    user = f"SUMMARY:\n<<<\n{summary}\n>>>\n\nSENTENCES:\n<<<\n{listed}\n>>>"
    system = SYSTEM.format(types=describe_types(taxonomy))
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def answer_schema(taxonomy: dict[str, Any]) -> dict[str, Any]:
    ids = [c["id"] for c in taxonomy.get("categories", [])]
    judgement = {
        "type": "object",
        "properties": {
            "number": {"type": "integer"},
            "questions": {"type": ["string", "null"]},
            "types": {"type": ["array", "null"], "items": {"type": "string", "enum": ids}},
        },
        "required": ["number", "questions", "types"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"sentences": {"type": "array", "items": judgement}},
        "required": ["sentences"],
        "additionalProperties": False,
    }


def batch_marks(
    choice: dict[str, Any],
    taxonomy: dict[str, Any],
    places: Sequence[tuple[int, int, int]],
    texts: Sequence[str],
    numbers: range,
) -> SegmentMarks:
    """The marks one answer gives for the sentences ``numbers``; ``places`` holds each
    sentence's (segment, start, end) in ``texts``. An answer that does not judge every
    sentence of its batch exactly once is malformed (retried once, then the document
    fails): a missing judgement is not read as "no confusion"."""
    data, failure = decode(choice)
    out = SegmentMarks(failure=failure)
    if failure:
        return out
    items = data.get("sentences") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return SegmentMarks(failure="malformed")
    judged: dict[int, dict[str, Any]] = {}
    for item in items:
        number = item.get("number") if isinstance(item, dict) else None
        if not isinstance(number, int) or number not in numbers or number in judged:
            return SegmentMarks(failure="malformed")
        judged[number] = item
    if set(judged) != set(numbers):
        return SegmentMarks(failure="malformed")
    known = {c["id"] for c in taxonomy.get("categories", [])}
    multi = bool(taxonomy.get("multi_label"))
    for number in numbers:
        item = judged[number]
        segment, start, end = places[number - 1]
        raw = item.get("types") or []
        raw = [raw] if isinstance(raw, str) else raw
        types = list(dict.fromkeys(t for t in raw if isinstance(t, str) and t in known))
        quote = texts[segment][start:end]
        for unknown in [t for t in raw if not (isinstance(t, str) and t in known)]:
            out.problems.append(
                {"segment": segment, "quote": quote[:200], "category": str(unknown)[:100],
                 "why": "unknown category"}
            )  # fmt: skip
        if not types:
            continue
        questions = item.get("questions")
        comment = " ".join(questions.split())[:MAX_REASON] if isinstance(questions, str) else ""
        mark = {"segment": segment, "start": start, "end": end, "text": quote, "comment": comment}
        if multi:
            out.marks.append({**mark, "category": types[0], "categories": types})
        else:
            out.marks += [{**mark, "category": t} for t in types]
    return out
