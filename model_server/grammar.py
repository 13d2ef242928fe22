"""The SNaC T5 input/output grammar: build inputs, format training targets, parse outputs.

Input (as in the SNaC release's ``snac_evaluate.py``): the context's last words, then
``" <extra_id_0> "``, then the sentence to judge.

Output (SNaC README): ``true`` when the sentence is coherent, else ``false`` followed by
labels and their spans, ``false <label1> [spans for label1] <label2> [spans ...]``, with
labels ``character`` (CharE), ``event`` (RefE), ``scene`` (SceneE) and ``inconsistent``
(InconE). Our targets repeat the label before every span
(``false character Claudio character Benedick scene``); ``scene`` carries no span because
it covers the whole sentence. The parser also accepts grouped spans separated by ``|`` or
``;``, labels in angle brackets or with a colon, and never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

LABELS = ("character", "event", "scene", "inconsistent")
SNAC_CATEGORY = {"character": "CharE", "event": "RefE", "scene": "SceneE", "inconsistent": "InconE"}
LABEL_OF_CATEGORY = {cat: label for label, cat in SNAC_CATEGORY.items()}
SENTINEL = "<extra_id_0>"
SNAC_MAX_LENGTH = 1024
SNAC_CONTEXT_WORDS = int(0.9 * SNAC_MAX_LENGTH)  # what snac_evaluate.py keeps
SPANLESS = {"scene"}
_NOISE = re.compile(r"</?s>|<pad>|<unk>|<extra_id_\d+>")
_BRACKET_LABEL = re.compile(r"^<\s*([A-Za-z_]+)\s*>$|^\[\s*([A-Za-z_]+)\s*\]$")
_SEPARATORS = re.compile(r"\s*(?:\||;|\[SEP\])\s*")


@dataclass(frozen=True)
class ParsedError:
    """One label and (possibly empty) span text from a model output."""

    label: str
    span: str = ""
    known: bool = True


@dataclass
class ParsedOutput:
    """A parsed model output; ``coherent`` is None when the verdict was missing."""

    coherent: bool | None
    errors: list[ParsedError] = field(default_factory=list)
    raw: str = ""

    @property
    def known_errors(self) -> list[ParsedError]:
        return [e for e in self.errors if e.known]


def build_input(context: str, sentence: str, max_context_words: int = SNAC_CONTEXT_WORDS) -> str:
    """SNaC model input: the last ``max_context_words`` words of context, sentinel, sentence."""
    words = context.split()
    kept = words[-max_context_words:] if max_context_words > 0 else []
    return " ".join(kept) + f" {SENTINEL} " + " ".join(sentence.split())


def format_target(errors: Iterable[tuple[str, str]]) -> str:
    """Training target for (label, span) pairs: ``true`` or ``false label span ...``.

    Unknown labels are dropped; labels come in :data:`LABELS` order, each span once.
    """
    seen: set[tuple[str, str]] = set()
    by_label: dict[str, list[str]] = {label: [] for label in LABELS}
    for label, span in errors:
        label = label.strip().lower()
        if label not in by_label:
            continue
        span = "" if label in SPANLESS else " ".join(str(span).split())
        if (label, span) in seen:
            continue
        seen.add((label, span))
        by_label[label].append(span)
    parts = ["false"]
    for label in LABELS:
        for span in by_label[label]:
            parts.append(f"{label} {span}".strip())
    return "true" if len(parts) == 1 else " ".join(parts)


def _label_of(token: str) -> tuple[str, bool] | None:
    """(label, known) when the token is a label marker, else None."""
    bare = token.strip()
    match = _BRACKET_LABEL.match(bare)
    if match:
        name = (match.group(1) or match.group(2)).lower()
        return name, name in LABELS
    name = bare.rstrip(":").lower()
    if name in LABELS and (bare == name or bare.rstrip(":") == name):
        return name, True
    return None


def _clean(text: str) -> str:
    return " ".join(_NOISE.sub(" ", text).split())


def parse_output(text: str | None) -> ParsedOutput:
    """Parse a model output tolerantly; unknown or malformed parts never raise."""
    raw = text if isinstance(text, str) else ""
    tokens = _clean(raw).split()
    coherent: bool | None = None
    if tokens:
        verdict = tokens[0].strip(".,:;!").lower()
        if verdict in ("true", "false"):
            coherent = verdict == "true"
            tokens = tokens[1:]
    errors: list[ParsedError] = []
    current: tuple[str, bool] | None = None
    words: list[str] = []

    def flush() -> None:
        if current is None:
            return
        label, known = current
        body = " ".join(words).strip(" ,")
        spans = [s.strip(" ,") for s in _SEPARATORS.split(body)] if body else [""]
        if label in SPANLESS:
            spans = [""]
        for span in spans:
            if span or label in SPANLESS or len(spans) == 1:
                errors.append(ParsedError(label, span, known))

    for token in tokens:
        marker = _label_of(token)
        if marker is not None:
            flush()
            current, words = marker, []
        elif current is not None:
            words.append(token)
    flush()
    if errors and coherent is None:
        coherent = False
    if coherent is True:
        errors = []  # "true" means no error, whatever follows
    unique: list[ParsedError] = []
    for err in errors:
        if err not in unique:
            unique.append(err)
    return ParsedOutput(coherent=coherent, errors=unique, raw=raw)


def find_span(span: str, sentence: str) -> tuple[int, int] | None:
    """Code-point offsets of ``span`` in ``sentence``: first exact match, then case-insensitive,
    then whitespace-insensitive (tokenizers change spacing); None when absent."""
    span = span.strip()
    if not span:
        return None
    at = sentence.find(span)
    if at >= 0:
        return at, at + len(span)
    at = sentence.lower().find(span.lower())
    if at >= 0:
        return at, at + len(span)
    pieces = [re.escape(p) for p in re.findall(r"\w+|[^\w\s]", span)]
    if not pieces:
        return None
    match = re.search(r"\s*".join(pieces), sentence, flags=re.IGNORECASE)
    return (match.start(), match.end()) if match else None
