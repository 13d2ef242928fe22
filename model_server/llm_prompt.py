"""The LLM backend's prompt (built from a study's taxonomy) and the checks on its answer.

The prompt asks for one JSON object ``{"errors": [...]}``; each error quotes its span from
the current segment, names a category id, gives a short reason and, for a paired category,
quotes the earlier span it pairs with. :func:`parse_answer` sorts an answer into usable
items or one of the counted failures (malformed, truncated, refused).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_REASON = 300
MAX_CONTEXT_CHARS = 6000

SYSTEM = """You are a careful annotator of machine-generated text. You find errors of the \
kinds listed below in the CURRENT SEGMENT only; the CONTEXT is the text that came before it \
and is there to judge the segment, never to be annotated.

Error categories (use the id exactly):
{categories}

Answer with one JSON object and nothing else:
{{"errors": [{{"category": "<id>", "span": "<the exact words of the error, copied from the \
CURRENT SEGMENT>", "context": "<the span with a few words around it, copied>", "reason": \
"<why this is an error, one short sentence>"{paired_field}}}]}}
Copy spans word for word. Mark only clear errors; if there are none, answer {{"errors": []}}."""

PAIRED_FIELD = ', "earlier_span": "<for paired categories: the exact earlier words it pairs with>"'


def describe_category(category: dict[str, Any], *, attributes: bool = False) -> str:
    """One category as prompt text: id, label, kind, definition, examples (and, with
    ``attributes``, the values its marks take: the annotators' prompt)."""
    kind = category.get("kind", "singleton")
    lines = [f"- {category['id']} ({category.get('label', category['id'])})"]
    if category.get("definition"):
        lines.append(f"  Definition: {category['definition']}")
    if category.get("scope") == "sentence":
        lines.append("  Mark the whole sentence.")
    if kind == "paired":
        prompt = category.get("paired_prompt") or "Also quote the earlier text it pairs with."
        lines.append(f"  Paired: {prompt} Give it as earlier_span.")
    for example in category.get("examples") or []:
        lines.append(f"  Example: {example}")
    for declared in category.get("attributes") or [] if attributes else []:
        lines.append(f"  Attribute {declared['id']} ({declared['label']}): {_values(declared)}")
    return "\n".join(lines)


def _values(declared: dict[str, Any]) -> str:
    """An attribute's values as prompt text."""
    need = "required" if declared.get("required") else "optional"
    if declared["kind"] == "choice":
        return f"one of {', '.join(repr(v) for v in declared['values'])} ({need})"
    return f"a whole number from {declared['min']} to {declared['max']} ({need})"


def build_messages(taxonomy: dict[str, Any], context: str, segment: str) -> list[dict[str, str]]:
    """The chat messages for one segment; the context is cut to its last characters."""
    categories = taxonomy.get("categories", [])
    paired = any(c.get("kind") == "paired" for c in categories)
    system = SYSTEM.format(
        categories="\n".join(describe_category(c) for c in categories),
        paired_field=PAIRED_FIELD if paired else "",
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": segment_message(context, segment, MAX_CONTEXT_CHARS)},
    ]


def segment_message(context: str, segment: str, max_context: int) -> str:
    """The user message of one segment: the earlier text (its last ``max_context``
    characters) as CONTEXT, then the CURRENT SEGMENT."""
    if len(context) > max_context:
        context = "..." + context[-max_context:]
    return (
        f"CONTEXT:\n<<<\n{context or '(none: this is the first segment)'}\n>>>\n\n"
        f"CURRENT SEGMENT:\n<<<\n{segment}\n>>>"
    )


@dataclass
class ParsedAnswer:
    """Usable error items, or the reason there are none (``failure``)."""

    items: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None  # "malformed" | "truncated" | "refused"
    bad_items: int = 0


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def _text(value: Any, limit: int | None = None) -> str:
    """A string field, control characters replaced, stripped and cut to ``limit``."""
    if not isinstance(value, str):
        return ""
    clean = "".join(ch if ch.isprintable() else " " for ch in value).strip()
    return clean[:limit] if limit else clean


def decode(choice: dict[str, Any]) -> tuple[Any, str | None]:
    """The JSON a chat-completions ``choice`` carries (a fenced block too), or the counted
    failure: ``malformed`` (no message, not JSON), ``truncated`` (not JSON, cut by the
    token limit), ``refused`` (a refusal or no content)."""
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return None, "malformed"
    content = message.get("content")
    if message.get("refusal") or not isinstance(content, str) or not content.strip():
        return None, "refused"
    body = content.strip()
    if fenced := _FENCE.match(body):
        body = fenced.group(1)
    try:
        return json.loads(body), None
    except ValueError:
        return None, "truncated" if choice.get("finish_reason") == "length" else "malformed"


def parse_answer(choice: dict[str, Any]) -> ParsedAnswer:
    """Sort one chat-completions ``choice`` into items or a counted failure. An item's
    ``attributes`` (the annotators' answer) is kept when it is a JSON object."""
    data, failure = decode(choice)
    if failure:
        return ParsedAnswer(failure=failure)
    errors = data.get("errors") if isinstance(data, dict) else data
    if not isinstance(errors, list):
        return ParsedAnswer(failure="malformed")
    parsed = ParsedAnswer()
    for item in errors:
        if not isinstance(item, dict) or not _text(item.get("span")):
            parsed.bad_items += 1
            continue
        parsed.items.append(
            {
                "category": _text(item.get("category")),
                "span": _text(item.get("span")),
                "context": _text(item.get("context")),
                "reason": _text(item.get("reason"), MAX_REASON),
                "earlier_span": _text(item.get("earlier_span")),
                "attributes": item["attributes"]
                if isinstance(item.get("attributes"), dict)
                else {},
            }
        )
    return parsed
