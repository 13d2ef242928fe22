"""Candidate names in one segment and the person evidence of each occurrence's context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.entities.names import (
    ABBREVIATED_TITLES,
    AMBIGUOUS_ROLES,
    KIN,
    MOTION_VERBS,
    NAME_PARTICLES,
    NAME_TAGS,
    NOT_NAMES,
    PERSON_LIKE_LABELS,
    PLACE_LABELS,
    PLACE_PREPOSITIONS,
    PLACE_WORDS,
    ROLES,
    RULER_TITLES,
    STOP_WORDS,
    TITLES,
    TRAVEL_VERBS,
    VERB_TAGS,
    is_capitalised,
)
from app.entities.tokens import _is_name_token, _is_sentence_start, _Tok, _View


@dataclass
class _Candidate:
    segment: int
    start: int
    end: int
    text: str
    label: str  # the NER label, or "" for a proper-noun run the NER left out
    score: float = 0.0  # person evidence from this occurrence's context
    role: bool = False  # a bare role noun ("the Prince", "POET")
    key: str = ""


def _trim(v: _View, start: int, end: int) -> tuple[int, int]:
    """Token range without a leading article, trailing possessive or punctuation."""
    toks = v.toks
    while start < end and (
        toks[start].lower in ("a", "an") or toks[start].bare in NOT_NAMES or toks[start].punct
    ):
        start += 1
    while end > start and (
        toks[end - 1].punct or toks[end - 1].tag == "POS" or toks[end - 1].lower in ("'s", "’s")
    ):
        end -= 1
    return start, end


def _extend_titles(v: _View, start: int) -> int:
    while start > 0 and v.toks[start - 1].bare in TITLES and is_capitalised(v.toks[start - 1].text):
        start -= 1
    return start


def _context_score(v: _View, start: int, end: int, label: str) -> float:
    """Evidence, from one occurrence, that a proper name names a person (> 0) or a place (< 0)."""
    toks = v.toks
    score = 0.0
    if label == "PERSON":
        score += 2
    elif label in PLACE_LABELS:
        score -= 0.5
    words = [t.bare for t in toks[start:end]]
    if words and words[0] in TITLES and len(words) > 1:
        score += 3
    if any(w in PLACE_WORDS for w in words[1:] or words):
        score -= 3
    prev = toks[start - 1] if start > 0 else None
    nxt = toks[end] if end < len(toks) else None
    after = toks[end + 1] if end + 1 < len(toks) else None
    if prev is not None:
        before = toks[start - 2].lower if start > 1 else ""
        if prev.lower in PLACE_PREPOSITIONS:
            score -= 1.5
        elif prev.text == "," and before in KIN or prev.lower in KIN:
            score += 2  # "his wife, Fulvia,", "his friend Leontes"
        elif prev.tag.startswith("VB") and prev.lower not in MOTION_VERBS:
            score += 1
        elif prev.lower == "of":
            # "the town of Patusan", "King of Bohemia" name places; "Don Pedro of Aragon
            # arrives": the verb is Don Pedro's.
            score -= 2 if before in PLACE_WORDS or before in RULER_TITLES else 0.5
            nxt = None
        elif prev.lower in ("to", "for", "toward", "towards") and before in TRAVEL_VERBS:
            score -= 1.5  # "go to Padua", "make for Padua"
        elif prev.lower in ("by", "with"):
            score += 0.5

    if nxt is None:
        return score
    if nxt.lower in ("who", "whom") or (
        nxt.text == "," and after is not None and after.lower in ("who", "whom")
    ):
        score += 2  # "Lance, who ..."
    elif nxt.tag in VERB_TAGS or nxt.lower in ("says", "tells", "asks"):
        score += 1
    elif nxt.tag == "POS" or nxt.lower in ("'s", "’s", "'"):
        score += 2 if after is not None and after.lower in KIN else 0.5
    return score


def _proper_runs(v: _View, taken: list[bool]) -> Iterable[tuple[int, int]]:
    """Maximal runs of proper-noun tokens (with name particles inside) not already taken."""
    toks, i, n = v.toks, 0, len(v)
    while i < n:
        if taken[i] or not _is_name_token(toks[i]):
            i += 1
            continue
        j = i + 1
        while j < n and not taken[j]:
            if _is_name_token(toks[j]):
                j += 1
            elif toks[j].lower in NAME_PARTICLES and j + 1 < n and _is_name_token(toks[j + 1]):
                j += 2
            else:
                break
        yield i, j
        i = j


def _looks_like_group(toks: list[_Tok], label: str) -> bool:
    """Plural names and shouted phrases: "the Jesuits", "African Americans", "YOU ARE OLD"."""
    last = toks[-1]
    if label == "PERSON" or toks[0].bare in TITLES or last.bare in ROLES:
        return False
    plural = last.text.endswith("s") and not last.text.endswith(
        ("es", "us", "os", "is", "as", "ss")
    )
    if plural and (last.tag == "NNPS" or label == "NORP"):
        return True  # "the Jesuits", not "Leontes" or "Socrates"
    return len(toks) >= 3 and all(t.text.isupper() for t in toks)


def _split_list(toks: list[_Tok], start: int, end: int) -> list[tuple[int, int]]:
    """An entity the NER ran over a list or a full stop ("Leontes, Cleomenes, Dion"), split."""
    parts, begin = [], start
    for i in range(start, end):
        if toks[i].text in (",", ";", "&", ".", "!", "?") or toks[i].lower == "and":
            parts.append((begin, i))
            begin = i + 1
    parts.append((begin, end))
    return [(a, b) for a, b in parts if a < b]


def _beside_people(v: _View, taken: list[bool]) -> list[int]:
    """Capitalised words the tagger missed in "Lily and Holden", "Holden, Lily": names too."""
    toks, found = v.toks, []
    people = [(s, e) for s, e, label in v.ents if label == "PERSON"]
    for start, end in people:
        for i, link in ((start - 2, start - 1), (end + 1, end)):
            if not (0 <= i < len(toks)) or taken[i] or toks[link].lower not in ("and", ","):
                continue
            tok = toks[i]
            if (
                is_capitalised(tok.text)
                and tok.text.isalpha()
                and tok.bare not in NOT_NAMES
                and tok.lower not in STOP_WORDS
                and tok.tag not in ("DT", "PRP", "PRP$", "IN", "CC", "WDT", "WP", "EX", "MD")
            ):
                found.append(i)
    return found


def _unknown_subjects(v: _View, taken: list[bool], lowercase_words: set[str]) -> list[int]:
    """Sentence-initial words like "Cupid enters" that the document never uses in lower case."""
    toks, found = v.toks, []
    for i, tok in enumerate(toks[:-1]):
        if taken[i] or not _is_sentence_start(v, i) or toks[i + 1].tag != "VBZ":
            continue
        if toks[i + 1].lower in ("is", "has", "does", "was", "seems", "appears", "remains"):
            continue
        if (
            tok.text[:1].isupper()
            and tok.text[1:].islower()
            and tok.text.isalpha()
            and tok.tag in ("NN", "NNS", "NNP", "NNPS", "JJ")
            and tok.lower not in STOP_WORDS
            and tok.bare not in NOT_NAMES
            and tok.lower not in lowercase_words
        ):
            found.append(i)
    return found


def _segment_candidates(
    v: _View, segment: int, labels: frozenset[str], lowercase_words: set[str] | None = None
) -> list[_Candidate]:
    """Every name in one segment that might be a wanted entity, with its context evidence."""
    toks = v.toks
    out: list[_Candidate] = []
    taken = [False] * len(toks)  # inside an NER entity or a candidate
    used = [False] * len(toks)  # inside a candidate
    want_person = "PERSON" in labels
    lowercase_words = lowercase_words or set()

    def add(start: int, end: int, label: str) -> None:
        start, end = _trim(v, start, end)
        if start >= end:
            return
        role = end - start == 1 and toks[start].bare in ROLES
        if not role and not is_capitalised(toks[start].text):
            return
        if role and end < len(toks) and _is_name_token(toks[end]) and not used[end]:
            for k in range(start, end):  # "the Countess Olenska": a title, not a bare role
                taken[k] = False
            return
        if role and start > 0 and toks[start - 1].lower == "the":
            start -= 1
        if not role:
            start = _extend_titles(v, start)
        if any(used[start:end]):
            return
        first, last = v.chars(start, end)
        text = v.text[first:last]
        if sum(ch.isalpha() for ch in text) < 2 or _looks_like_group(toks[start:end], label):
            return
        if role and (toks[end - 1].bare in ABBREVIATED_TITLES or text.endswith(".")):
            return
        score = _context_score(v, start, end, label)
        out.append(_Candidate(segment, first, last, text, label, score, role))
        for k in range(start, end):
            taken[k] = used[k] = True

    for start, end, _label in v.ents:
        for k in range(start, end):
            taken[k] = True
    for ent_start, ent_end, label in v.ents:
        for start, end in _split_list(toks, ent_start, ent_end):
            if label in labels:
                add(start, end, label)
            elif want_person and label in PERSON_LIKE_LABELS:
                if toks[start].lower == "the" and not any(t.bare in ROLES for t in toks[start:end]):
                    continue  # "the Coast Guard", "the Dominican Republic"
                add(start, end, label)
    if not want_person:
        return out
    for i in sorted(set(_beside_people(v, taken) + _unknown_subjects(v, taken, lowercase_words))):
        add(i, i + 1, "")
    for start, end in list(_proper_runs(v, taken)):
        if end - start == 1 and toks[start].bare in ROLES:
            continue  # bare role nouns are handled below
        add(start, end, "")
    for tok in toks:
        if taken[tok.i] or used[tok.i] or tok.bare not in ROLES:
            continue
        nxt = toks[tok.i + 1] if tok.i + 1 < len(toks) else None
        if nxt is not None and is_capitalised(nxt.text) and nxt.tag in NAME_TAGS:
            continue  # a title before a name, not a bare role
        with_article = tok.i > 0 and toks[tok.i - 1].lower == "the"
        # "the doctor", "the queen": a definite role noun names one character, unless it is a
        # modifier ("the doctor bag") or a word with other senses ("the page", "the coach").
        if not is_capitalised(tok.text) and (
            not with_article
            or tok.tag != "NN"
            or tok.bare in AMBIGUOUS_ROLES
            or (nxt is not None and nxt.tag.startswith("NN"))
        ):
            continue
        leads = nxt is not None and nxt.tag in VERB_TAGS and tok.tag in NAME_TAGS  # "Nurse tells"
        if not (with_article or tok.text.isupper() or leads or not _is_sentence_start(v, tok.i)):
            continue
        if tok.bare in ABBREVIATED_TITLES or tok.text.endswith("."):
            continue
        first = toks[tok.i - 1].idx if with_article else tok.idx
        out.append(_Candidate(segment, first, tok.end, v.text[first : tok.end], "", 1.0, role=True))
        taken[tok.i] = used[tok.i] = True
    return out
