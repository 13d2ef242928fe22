"""An LLM as an annotator of a study (``app/llm/``), the ``taxonomy`` preset: the prompt a
human's view gives (the study's instructions, each category's definition, examples and
attributes; the earlier segments as context and the current segment), the JSON schema of
the answer (structured output), and the answer's quotes turned into marks.

One request per segment, as a human annotates a segment at a time. The answer has the
detector's shape (:mod:`model_server.llm_prompt`, parsed by its
:func:`~model_server.llm_prompt.parse_answer`) plus each mark's attribute values. A quote
becomes a mark only where it names one place (:func:`model_server.locate.locate_exactly`);
a quote that is absent or ambiguous is counted and listed, never guessed. The marks go
through the study's own rules when they are stored (the app's add action), like a human's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from model_server.llm_prompt import describe_category, parse_answer, segment_message
from model_server.locate import ABSENT, AMBIGUOUS, locate_exactly, occurrences

MAX_CONTEXT_CHARS = 50_000  # the human sees every earlier segment; a model's window may not

SYSTEM = """You are one of the annotators of a research study on machine-generated text. \
You see what the human annotators see: the earlier text as CONTEXT and the CURRENT \
SEGMENT, in which you mark every error of the kinds below. Never mark the CONTEXT.

The study's instructions:
{instructions}

Error categories (use the id exactly):
{categories}

Answer with one JSON object and nothing else:
{{"errors": [{{"category": "<id>", "span": "<the exact words of the error, copied from the \
CURRENT SEGMENT>", "context": "<the span with a few words around it, copied, so that it \
names one place>", "reason": "<why this is an error, one short sentence>"{extra}}}]}}
Copy spans word for word. If there is no error, answer {{"errors": []}}."""

EARLIER_FIELD = (
    ', "earlier_span": "<for paired categories: the exact earlier words it pairs with; for '
    'relations: the other words it relates to, if any; else null>"'
)
ATTRIBUTES_FIELD = ', "attributes": {<attribute id>: <its value, or null>}'


def needs_other_span(taxonomy: dict[str, Any]) -> bool:
    return any(c.get("kind") in ("paired", "relation") for c in taxonomy.get("categories", []))


def declared_attributes(taxonomy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every attribute any category declares, by id (the first declaration of an id)."""
    found: dict[str, dict[str, Any]] = {}
    for category in taxonomy.get("categories", []):
        for declared in category.get("attributes") or []:
            found.setdefault(declared["id"], declared)
    return found


def build_messages(
    taxonomy: dict[str, Any],
    instructions: str,
    context: str,
    segment: str,
    max_context: int = MAX_CONTEXT_CHARS,
) -> list[dict[str, str]]:
    """The chat messages for one segment."""
    extra = (EARLIER_FIELD if needs_other_span(taxonomy) else "") + (
        ATTRIBUTES_FIELD if declared_attributes(taxonomy) else ""
    )
    text = (instructions or taxonomy.get("instructions") or "").strip()
    system = SYSTEM.format(
        instructions=text or "(none beyond the categories)",
        categories="\n".join(
            describe_category(c, attributes=True) for c in taxonomy.get("categories", [])
        ),
        extra=extra,
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": segment_message(context, segment, max_context)},
    ]


def answer_schema(taxonomy: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of an answer (every property required, none other allowed, as
    OpenAI's strict structured output wants; vLLM, Ollama and llama.cpp's server take it
    too). Values the study's rules refuse are refused when the marks are stored."""
    ids = [c["id"] for c in taxonomy.get("categories", [])]
    item: dict[str, Any] = {
        "category": {"type": "string", "enum": ids},
        "span": {"type": "string"},
        "context": {"type": "string"},
        "reason": {"type": "string"},
    }
    if needs_other_span(taxonomy):
        item["earlier_span"] = {"type": ["string", "null"]}
    attributes = declared_attributes(taxonomy)
    if attributes:
        properties = {
            aid: {"type": ["string", "null"], "enum": [*declared["values"], None]}
            if declared["kind"] == "choice"
            else {"type": ["integer", "null"]}
            for aid, declared in attributes.items()
        }
        item["attributes"] = {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }
    marks = {
        "type": "object",
        "properties": item,
        "required": list(item),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"errors": {"type": "array", "items": marks}},
        "required": ["errors"],
        "additionalProperties": False,
    }


def response_format(schema: dict[str, Any], structured: str) -> dict[str, Any]:
    """``json_schema`` (structured output, the default) or ``json_object`` (a server
    without schema support: the prompt alone describes the answer)."""
    if structured == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": "marks", "strict": True, "schema": schema},
    }


@dataclass
class SegmentMarks:
    """What one answer gave: marks (add bodies without ``client_id``), the problems of the
    items that gave none, and the answer's failure (malformed, truncated, refused)."""

    marks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None


def _other_span(
    segments: Sequence[str], index: int, start: int, quote: str, kind: str
) -> tuple[dict[str, Any] | None, str]:
    """A pair's other span where its quote names one place: for ``paired``, in the text
    before the mark (this segment before ``start``, then the earlier segments); for a
    ``relation``, anywhere in the document."""
    places = []
    last = len(segments) if kind == "relation" else index + 1
    for k in range(last):
        text = segments[k][:start] if (k == index and kind == "paired") else segments[k]
        places += [(k, s, e) for s, e in occurrences(text, quote)]
    if len(places) != 1:
        return None, ABSENT if not places else AMBIGUOUS
    k, s, e = places[0]
    return {"segment": k, "start": s, "end": e, "text": segments[k][s:e]}, ""


def segment_marks(
    choice: dict[str, Any], taxonomy: dict[str, Any], segments: Sequence[str], index: int
) -> SegmentMarks:
    """The marks one answer gives for segment ``index`` of ``segments``."""
    parsed = parse_answer(choice)
    out = SegmentMarks(failure=parsed.failure)
    if parsed.failure:
        return out
    out.problems += [{"segment": index, "quote": "", "why": "bad item"}] * parsed.bad_items
    categories = {c["id"]: c for c in taxonomy.get("categories", [])}
    text = segments[index]
    for item in parsed.items:
        problem = {"segment": index, "quote": item["span"][:200], "category": item["category"]}
        category = categories.get(item["category"])
        if category is None:
            out.problems.append({**problem, "why": "unknown category"})
            continue
        found, why = locate_exactly(text, item["span"], item["context"])
        if found is None:
            out.problems.append({**problem, "why": why})
            continue
        start, end = found
        mark: dict[str, Any] = {
            "segment": index,
            "start": start,
            "end": end,
            "text": text[start:end],
            "category": category["id"],
            "comment": item["reason"],
        }
        kind = category.get("kind", "singleton")
        if kind in ("paired", "relation") and item["earlier_span"]:
            other, why = _other_span(segments, index, start, item["earlier_span"], kind)
            if other is None:
                out.problems.append({**problem, "why": f"earlier span {why}"})
                continue
            mark["paired"] = other
        elif kind == "paired":
            out.problems.append({**problem, "why": "earlier span missing"})
            continue
        own = {declared["id"] for declared in category.get("attributes") or []}
        values = {k: v for k, v in item["attributes"].items() if k in own and v is not None}
        if own:
            mark["attributes"] = values
        out.marks.append(mark)
    return out
