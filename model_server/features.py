"""spaCy candidates and their context features, shared by the rules and MiniLM backends.

Only the sentence is parsed; the context is consulted through cheap word look-ups, so a
document costs one parse per sentence however long its context grows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from model_server.clusters import candidate_features
from model_server.interface import DetectionInput
from model_server.introductions import introduction_features
from model_server.roles import role_chunks, role_features
from model_server.text import nlp

TITLES = {
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "sir",
    "lady",
    "lord",
    "don",
    "king",
    "queen",
    "prince",
    "princess",
    "duke",
    "duchess",
    "count",
    "countess",
    "captain",
    "uncle",
    "aunt",
    "father",
    "mother",
    "brother",
    "sister",
    "saint",
    "st",
    "madame",
    "monsieur",
    "general",
    "colonel",
    "professor",
    "friar",
    "doctor",
    "master",
    "mistress",
    "young",
    "old",
    "little",
    "the",
}
PRONOUNS = {"he", "she", "him", "her", "they", "them", "his", "hers", "their", "it"}
POSSESSIVES = {"his", "her", "their", "its"}
SCENE_OPENERS = (
    "meanwhile",
    "later",
    "that night",
    "the next",
    "the following",
    "next day",
    "the day",
    "at the",
    "in the",
    "back at",
    "back in",
    "at a",
    "in a",
    "on the",
    "when",
    "after",
    "one day",
    "one night",
    "that evening",
    "that morning",
    "the morning",
    "the night",
    "years later",
    "some time",
    "soon",
    "eventually",
    "finally",
    "elsewhere",
    "inside",
    "outside",
    "at home",
    "at night",
    "the following day",
)
GENERIC_HEADS = {
    "time",
    "day",
    "night",
    "morning",
    "evening",
    "way",
    "end",
    "rest",
    "house",
    "room",
    "door",
    "money",
    "truth",
    "life",
    "other",
    "others",
    "idea",
    "fact",
    "world",
    "people",
    "man",
    "woman",
    "men",
    "women",
    "family",
    "home",
    "thing",
    "things",
    "year",
    "years",
    "moment",
    "news",
    "matter",
    "story",
    "city",
    "town",
    "place",
    "help",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


def _words(text: str) -> set[str]:
    return {w.lower().removesuffix("'s") for w in _WORD.findall(text)}


def _cased_words(text: str) -> set[str]:
    return {w.removesuffix("'s") for w in _WORD.findall(text)}


@dataclass
class Candidate:
    """A span in the sentence that may carry an error, with numeric features."""

    label: str  # character | role | event | scene
    start: int
    end: int
    text: str
    feats: dict[str, float] = field(default_factory=dict)


@dataclass
class SentenceCandidates:
    sentence: str
    candidates: list[Candidate]
    sentence_feats: dict[str, float]


def _name_tokens(text: str) -> list[str]:
    toks = [t.strip(".,").removesuffix("'s") for t in text.split()]
    return [t for t in toks if t and t.lower() not in TITLES and t[:1].isupper()]


def _person_spans(doc) -> list[tuple[int, int, str]]:
    """(start_char, end_char, kind) of person-like names: PERSON entities plus proper-noun
    runs the tagger calls PROPN that no other entity covers."""
    spans = []
    covered = set()
    for ent in doc.ents:
        covered.update(range(ent.start, ent.end))
        if ent.label_ == "PERSON":
            spans.append((ent.start_char, ent.end_char, "PERSON"))
    i = 0
    while i < len(doc):
        tok = doc[i]
        if tok.pos_ == "PROPN" and i not in covered and tok.text[:1].isupper():
            j = i
            while j + 1 < len(doc) and doc[j + 1].pos_ == "PROPN" and j + 1 not in covered:
                j += 1
            span = doc[i : j + 1]
            spans.append((span.start_char, span.end_char, "PROPN"))
            i = j + 1
        else:
            i += 1
    return spans


def _other_ent_spans(doc) -> list[tuple[int, int, str]]:
    return [
        (e.start_char, e.end_char, e.label_)
        for e in doc.ents
        if e.label_ in ("ORG", "GPE", "NORP", "FAC", "LOC", "WORK_OF_ART")
    ]


def analyse(docs_and_inputs) -> list[SentenceCandidates]:
    """Candidates with features for each (spaCy Doc, DetectionInput)."""
    return [_analyse_one(doc, inp) for doc, inp in docs_and_inputs]


def parse_inputs(inputs: list[DetectionInput]):
    """Parse the sentences (only) with spaCy, batched."""
    return list(nlp().pipe([inp.sentence for inp in inputs], batch_size=64))


def _recent_context(context: str, n_chars: int = 600) -> str:
    return context[-n_chars:]


def _analyse_one(doc, inp: DetectionInput) -> SentenceCandidates:
    sentence, context = inp.sentence, inp.context
    ctx_lower = _words(context)
    ctx_cased = _cased_words(context)
    recent = _words(_recent_context(context))
    n_ctx_words = len(context.split())
    candidates: list[Candidate] = []
    seen_names: set[str] = set()
    person_like = _person_spans(doc)
    for start, end, kind in person_like + _other_ent_spans(doc):
        text = sentence[start:end]
        toks = _name_tokens(text)
        if not toks:
            continue
        key = " ".join(toks)
        if key in seen_names:
            continue
        seen_names.add(key)
        in_ctx = [t in ctx_cased for t in toks]
        span = doc.char_span(start, end, alignment_mode="expand")
        head = span.root if span is not None else None
        appos = bool(
            head is not None
            and (any(c.dep_ == "appos" for c in head.children) or head.dep_ == "appos")
        )
        after = sentence[end : end + 5]
        feats = {
            "is_person": float(kind == "PERSON"),
            "is_propn": float(kind == "PROPN"),
            "is_other_ent": float(kind not in ("PERSON", "PROPN")),
            "all_new": float(not any(in_ctx)),
            "any_new": float(not all(in_ctx)),
            "frac_seen": sum(in_ctx) / len(in_ctx),
            "full_in_ctx": float(text in context),
            "appos": appos,
            "comma_after": float(after.startswith(",")),
            "possessive": float(sentence[end : end + 2] == "'s"),
            "sent_initial": float(start == 0),
            "n_tokens": float(len(toks)),
            "is_subject": float(head is not None and head.dep_ in ("nsubj", "nsubjpass")),
            "ctx_empty": float(n_ctx_words == 0),
            "log_ctx": min(1.0, n_ctx_words / 1000),
            "opens_segment": float(inp.opens_segment),
        }
        feats.update(introduction_features(sentence, start, end, context))
        if inp.people is not None:  # the import's clusters: whole-document evidence
            feats.update(candidate_features(inp.people, start, end))
        candidates.append(Candidate("character", start, end, text, feats))
    # people named only by a role ("the cook"): CharE candidates of their own label
    names_at = [(c.start, c.end) for c in candidates]
    for chunk in role_chunks(doc, ctx_lower, names_at):
        feats = role_features(chunk, inp, ctx_lower, n_ctx_words)
        if inp.people is not None:
            feats.update(candidate_features(inp.people, chunk.start_char, chunk.end_char))
        candidates.append(Candidate("role", chunk.start_char, chunk.end_char, chunk.text, feats))
    # definite / possessive noun phrases and pronouns (RefE)
    for chunk in doc.noun_chunks:
        first = chunk[0].lower_
        head = chunk.root
        if head.pos_ == "PRON":
            if head.lower_ not in PRONOUNS:
                continue
            kind = "pronoun"
        elif first == "the":
            kind = "definite"
        elif first in POSSESSIVES or any(t.tag_ == "POS" for t in chunk):
            kind = "possessive"
        else:
            continue
        if head.ent_type_ in ("PERSON", "DATE", "TIME", "CARDINAL", "ORDINAL"):
            continue
        lemma = head.lemma_.lower()
        content = [t for t in chunk if t.pos_ in ("NOUN", "ADJ", "PROPN")]
        feats = {
            "pronoun": float(kind == "pronoun"),
            "definite": float(kind == "definite"),
            "possessive": float(kind == "possessive"),
            "head_new": float(head.lower_ not in ctx_lower and lemma not in ctx_lower),
            "head_recent": float(head.lower_ in recent or lemma in recent),
            "content_new": (
                sum(t.lower_ not in ctx_lower for t in content) / len(content) if content else 0.0
            ),
            "generic_head": float(lemma in GENERIC_HEADS),
            "n_tokens": float(len(chunk)),
            "ctx_empty": float(n_ctx_words == 0),
            "no_person_ctx": float(not any(w[:1].isupper() for w in ctx_cased)),
            "log_ctx": min(1.0, n_ctx_words / 1000),
            "opens_segment": float(inp.opens_segment),
        }
        candidates.append(Candidate("event", chunk.start_char, chunk.end_char, chunk.text, feats))
    content_words = {t.lower_ for t in doc if t.pos_ in ("NOUN", "PROPN") and not t.is_stop}
    names = {t for s, e, _ in person_like for t in _name_tokens(sentence[s:e])}
    low = sentence.lower()
    sentence_feats = {
        "opens_segment": float(inp.opens_segment),
        "ctx_empty": float(n_ctx_words == 0),
        "opener": float(any(low.startswith(o) for o in SCENE_OPENERS)),
        "starts_prep": float(len(doc) > 0 and doc[0].dep_ == "prep"),
        "content_recent": (
            len(content_words & recent) / len(content_words) if content_words else 0.0
        ),
        "content_seen": (
            len(content_words & ctx_lower) / len(content_words) if content_words else 0.0
        ),
        "names_recent": (len({n.lower() for n in names} & recent) / len(names) if names else 0.5),
        "n_new_names": float(sum(n not in ctx_cased for n in names)),
        "starts_pronoun": float(len(doc) > 0 and doc[0].lower_ in PRONOUNS),
        "log_ctx": min(1.0, n_ctx_words / 1000),
        "n_words": min(1.0, len(doc) / 50),
    }
    candidates.append(Candidate("scene", 0, len(sentence), sentence, dict(sentence_feats)))
    return SentenceCandidates(sentence, candidates, sentence_feats)
