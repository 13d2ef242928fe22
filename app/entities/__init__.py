"""Entity cues: find the people (or places, organisations) a reader tracks, and group mentions.

``find_entities`` runs spaCy over every segment in one batched pass, keeps mentions with the
wanted labels and groups them the way a reader would ("John Fenwick", "Fenwick" and
"Mr. Fenwick" are one person; "Mr. Morrison" and "Mrs. Morrison" are two). Offsets are Unicode
code-point offsets into a segment's plain text, end exclusive.

For PERSON, the small English model alone finds about a third of the characters of a narrative
summary (it calls "Balthasar" a place and "Enobarbus" an organisation), so names are decided per
document, as a reader does: every proper name (NER entity of any name-like label, run of
proper-noun tags, capitalised role noun such as "the Clown") is a candidate; each occurrence
adds evidence from its context (a title, "X says", "tells X", "X, who", "his wife X", a list
with a known person, against "in X", "go to X", "the town of X"); a name whose evidence over
the document is positive is a person at every occurrence, including ones the model missed.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.entities.names import (
    ABBREVIATED_TITLES,
    AMBIGUOUS_ROLES,
    KIN,
    MOTION_VERBS,
    NAME_PARTICLES,
    NAME_TAGS,
    NOT_NAME_TAGS,
    NOT_NAMES,
    PATRONYMICS,
    PERSON_LIKE_LABELS,
    PLACE_LABELS,
    PLACE_PREPOSITIONS,
    PLACE_WORDS,
    POSSESSIVE,
    ROLES,
    RULER_TITLES,
    STOP_WORDS,
    TITLES,
    TRAVEL_VERBS,
    VERB_TAGS,
    WORD_PATTERN,
    ParsedName,
    bare,
    is_capitalised,
    parse_name,
)
from app.entities.nlp import load_pipeline

__all__ = [
    "DocumentEntities",
    "FoundEntity",
    "FoundMention",
    "find_entities",
    "load_pipeline",
    "parse_name",
    "store_entities",
    "strip_entity_markup",
]

Cluster = tuple[int, int, str]


@dataclass(frozen=True)
class FoundEntity:
    """One entity of a document: ``name`` is its fullest form, ``first_segment`` where it first appears."""

    key: str
    name: str
    label: str
    first_segment: int


@dataclass(frozen=True)
class FoundMention:
    """Where an entity is named: ``text[start:end]`` of segment ``segment``."""

    entity: str
    segment: int
    start: int
    end: int
    label: str


@dataclass
class DocumentEntities:
    """The entities of one document and their mentions, in reading order."""

    entities: list[FoundEntity] = field(default_factory=list)
    mentions: list[FoundMention] = field(default_factory=list)


# --------------------------------------------------------------------------- FALTE markup

_NE_SPAN = re.compile(
    r"""<span\b[^>]*?\bclass\s*=\s*["'][^"']*?\bne-(\w+)[^"']*["'][^>]*>(.*?)</span\s*>""",
    re.IGNORECASE | re.DOTALL,
)
_TAG = re.compile(r"<[^>]*>")


def _plain(fragment: str) -> str:
    return html.unescape(_TAG.sub("", fragment))


def strip_entity_markup(html_segment: str) -> tuple[str, list[Cluster]]:
    """Strip HTML from a FALTE segment; return its plain text and its marked names.

    Each ``<span class="ne ne-N">Name</span>`` becomes ``(start, end, "N")`` in the plain text,
    trimmed of the whitespace FALTE leaves inside spans. Other tags are dropped, entities
    unescaped, and the whole text is stripped of leading and trailing whitespace.
    """
    parts: list[str] = []
    marks: list[Cluster] = []
    length = 0
    pos = 0
    for match in _NE_SPAN.finditer(html_segment):
        before = _plain(html_segment[pos : match.start()])
        parts.append(before)
        length += len(before)
        inner = _plain(match.group(2))
        stripped = inner.strip()
        if stripped:
            start = length + (len(inner) - len(inner.lstrip()))
            marks.append((start, start + len(stripped), match.group(1)))
        parts.append(inner)
        length += len(inner)
        pos = match.end()
    parts.append(_plain(html_segment[pos:]))
    text = "".join(parts)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    marks = [
        (s - lead, e - lead, c) for s, e, c in marks if s - lead >= 0 and e - lead <= len(text)
    ]
    return text, marks


# --------------------------------------------------------------------------- candidates


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


@dataclass(slots=True)
class _Tok:
    """What the rules read of a spaCy token, copied once (spaCy builds a Token per access)."""

    i: int
    text: str
    lower: str
    bare: str
    tag: str
    ent: str  # the NER label of the entity the token is in, or ""
    idx: int
    end: int
    punct: bool


class _View:
    """A segment's tokens and entities as plain Python objects."""

    def __init__(self, doc: Any) -> None:
        self.text: str = doc.text
        from spacy.attrs import ENT_TYPE, IDX, IS_PUNCT, LOWER, ORTH, TAG

        strings = doc.vocab.strings
        rows = (
            doc.to_array([ORTH, LOWER, TAG, ENT_TYPE, IDX, IS_PUNCT]).tolist() if len(doc) else []
        )
        self.toks = []
        for i, (orth, lower, tag, ent, idx, punct) in enumerate(rows):
            text = strings[orth]
            self.toks.append(
                _Tok(
                    i,
                    text,
                    strings[lower],
                    bare(text),
                    strings[tag] if tag else "",
                    strings[ent] if ent else "",
                    idx,
                    idx + len(text),
                    bool(punct),
                )
            )
        self.ents = [(e.start, e.end, e.label_) for e in doc.ents]
        self.by_start = {t.idx: t.i for t in self.toks}
        self.by_end = {t.end: t.i for t in self.toks}

    def __len__(self) -> int:
        return len(self.toks)

    def chars(self, start: int, end: int) -> tuple[int, int]:
        return self.toks[start].idx, self.toks[end - 1].end

    def token_range(self, start_char: int, end_char: int) -> tuple[int, int] | None:
        """Tokens exactly covering ``text[start_char:end_char]``, or None."""
        first, last = self.by_start.get(start_char), self.by_end.get(end_char)
        return None if first is None or last is None else (first, last + 1)


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
    while (
        start > 0 and v.toks[start - 1].bare in TITLES and is_capitalised(v.toks[start - 1].text)
    ):
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


def _is_name_token(tok: _Tok) -> bool:
    return (
        tok.tag in NAME_TAGS
        and is_capitalised(tok.text)
        and tok.bare not in NOT_NAMES
        and WORD_PATTERN.fullmatch(tok.text) is not None
    )


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


def _is_sentence_start(v: _View, i: int) -> bool:
    return i == 0 or v.toks[i - 1].text in (".", "!", "?", '"', "“", ":", ";")


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


# --------------------------------------------------------------------------- person decision


def _name_key(text: str) -> str:
    parsed = parse_name(text)
    return parsed.full or " ".join(parsed.titles)


def _decide_people(candidates: list[_Candidate]) -> set[str]:
    """Name keys that, over the whole document, a reader would take for people."""
    scores: dict[str, float] = defaultdict(float)
    for cand in candidates:
        scores[cand.key] += cand.score
    people = {k for k, s in scores.items() if s > 0 and k}
    # Name parts: "Pedro" is a person when "Don Pedro" is.
    parts = {w for k in people for w in k.split() if len(k.split()) > 1}
    for key, score in scores.items():
        if key and key not in people and score >= 0 and set(key.split()) <= parts:
            people.add(key)
    return people


def _list_neighbours(
    candidates: list[_Candidate], texts: Sequence[str], people: set[str]
) -> set[str]:
    """Keys joined to a person's name by ", " or " and " ("Claudio, Benedick, and Balthasar")."""
    found: set[str] = set()
    ordered = sorted(candidates, key=lambda c: (c.segment, c.start))
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a.segment != b.segment:
            continue
        gap = texts[a.segment][a.end : b.start].strip().lower()
        if gap not in (",", "and", ", and", "&", "or"):
            continue
        if a.key in people and b.key not in people:
            found.add(b.key)
        elif b.key in people and a.key not in people:
            found.add(a.key)
    return found


# --------------------------------------------------------------------------- grouping


@dataclass
class _Group:
    key: str
    label: str
    forms: list[tuple[int, str]] = field(default_factory=list)  # (reading order, text)
    titles: set[str] = field(default_factory=set)
    firsts: set[str] = field(default_factory=set)
    lasts: set[str] = field(default_factory=set)
    singles: set[str] = field(default_factory=set)
    fulls: set[str] = field(default_factory=set)
    gender: str | None = None
    suffix: str | None = None
    last_seen: int = 0

    def add(self, parsed: ParsedName, text: str, order: int) -> None:
        if not self.forms:
            self.suffix = parsed.suffix
        self.forms.append((order, text))
        self.titles.update(parsed.titles)
        if parsed.first:
            self.firsts.add(parsed.first)
        if len(parsed.names) >= 2:
            self.lasts.add(parsed.names[-1])
        elif parsed.names:
            self.singles.add(parsed.names[0])
        if parsed.full:
            self.fulls.add(parsed.full)
        self.gender = self.gender or parsed.gender
        self.last_seen = order

    def accepts(self, parsed: ParsedName) -> bool:
        if parsed.gender and self.gender and parsed.gender != self.gender:
            return False
        if parsed.suffix != self.suffix:
            return False
        if not parsed.names:  # a bare title or role: "the Prince"
            return bool(set(parsed.titles) & self.titles)
        if parsed.full in self.fulls:
            return True
        if parsed.first:  # "John Fenwick"
            last = parsed.names[-1]
            if self.firsts and parsed.first not in self.firsts:
                return False
            if last in self.lasts or (last in self.singles and not self.firsts):
                return True
            if parsed.first in self.firsts and (
                last.endswith(PATRONYMICS) or any(n.endswith(PATRONYMICS) for n in self.lasts)
            ):
                return True  # "Dmitri Fyodorovitch" is "Dmitri Karamazov"
            return parsed.first in self.singles and not self.lasts
        single = parsed.names[0]  # "Fenwick", "Mr. Fenwick", "Pedro"
        if single in self.lasts or single in self.singles:
            return True
        # A bare given name joins "John Fenwick"; a titled one ("Don John") only a titled group.
        return single in self.firsts and (
            not parsed.titles or bool(self.titles & set(parsed.titles))
        )

    def name(self) -> str:
        best = max(
            self.forms,
            key=lambda f: (len(parse_name(f[1]).names), len(f[1].split()), -f[0]),
        )
        name = POSSESSIVE.sub("", best[1]) if len(best[1]) > 2 else best[1]
        return "the " + name[4:] if name.startswith("The ") else name


def _group(
    mentions: list[tuple[int, int, int, str, str]], next_key: Iterable[str]
) -> tuple[list[_Group], list[tuple[_Group, int, int, int]]]:
    """Group (segment, start, end, text, label) mentions in reading order, reader-style."""
    groups: list[_Group] = []
    placed: list[tuple[_Group, int, int, int]] = []
    keys = iter(next_key)
    for order, (segment, start, end, text, label) in enumerate(sorted(mentions)):
        parsed = parse_name(text) if label == "PERSON" else ParsedName((), (text.casefold(),), None)
        match = None
        for group in sorted(groups, key=lambda g: -g.last_seen):
            if group.label == label and (
                group.accepts(parsed) if label == "PERSON" else parsed.full in group.fulls
            ):
                match = group
                break
        if match is None:
            match = _Group(next(keys), label)
            groups.append(match)
        match.add(parsed, text, order)
        placed.append((match, segment, start, end))
    return groups, placed


# --------------------------------------------------------------------------- public API


def _whole_word_occurrences(text: str, form: str) -> Iterable[tuple[int, int]]:
    """Where ``form`` occurs in ``text`` not inside a longer word."""
    start = text.find(form)
    while start >= 0:
        end = start + len(form)
        if (start == 0 or not text[start - 1].isalnum()) and (
            end == len(text) or not (text[end].isalnum() or text[end] == "_")
        ):
            yield start, end
        start = text.find(form, start + 1)


def _name_part(text: str) -> str:
    """``text`` without leading titles: the form to look for elsewhere ("Fenwick" of "Mr. Fenwick")."""
    words = text.split(" ")
    rest = list(words)
    while len(rest) > 1 and bare(rest[0]) in TITLES:
        rest = rest[1:]
    return " ".join(words if rest[0].casefold() == "of" else rest)


def _other_occurrences(
    candidates: list[_Candidate], views: Sequence[_View], texts: Sequence[str]
) -> list[_Candidate]:
    """Every other whole-word occurrence of a candidate's name, with its own context evidence.

    The tagger and NER miss some occurrences of a name ("Antigonus leaves"); a reader still
    sees them, and each one is more evidence of what the name stands for.
    """
    forms = {_name_part(c.text): c.key for c in candidates if not c.role}
    added: list[_Candidate] = []
    occupied: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for c in candidates:
        occupied[c.segment].append((c.start, c.end))
    for form in sorted(forms, key=len, reverse=True):
        if len(form) < 2:
            continue
        for segment, text in enumerate(texts):
            if form not in text:
                continue
            view = views[segment]
            for start, end in _whole_word_occurrences(text, form):
                if any(s < end and start < e for s, e in occupied[segment]):
                    continue
                found = view.token_range(start, end)
                if found is None or view.toks[found[0]].tag in NOT_NAME_TAGS:
                    continue
                ent = view.toks[found[0]].ent
                if ent and ent not in PERSON_LIKE_LABELS and ent != "PERSON":
                    continue  # "May" the month
                score = _context_score(view, found[0], found[1], ent)
                added.append(_Candidate(segment, start, end, form, "", score, key=forms[form]))
                occupied[segment].append((start, end))
    return added


def _document_entities(
    docs: Sequence[Any], texts: Sequence[str], labels: tuple[str, ...]
) -> DocumentEntities:
    wanted = frozenset(labels)
    views = [_View(doc) for doc in docs]
    candidates: list[_Candidate] = []
    lowercase_words = {t.text for view in views for t in view.toks if t.text.islower()}
    for segment, view in enumerate(views):
        candidates.extend(_segment_candidates(view, segment, wanted, lowercase_words))
    for cand in candidates:
        cand.key = _name_key(cand.text)
    people: set[str] = set()
    if "PERSON" in wanted:
        candidates += _other_occurrences(candidates, views, texts)
        people = _decide_people(candidates)
        totals: dict[str, float] = defaultdict(float)
        for cand in candidates:
            totals[cand.key] += cand.score
        while True:  # "Enter Caesar, AGRIPPA, DOLABELLA, GALLUS": follow the whole list
            more = {k for k in _list_neighbours(candidates, texts, people) if totals[k] > -1}
            if not more - people:
                break
            people |= more
        people |= {c.key for c in candidates if c.role}
    mentions: list[tuple[int, int, int, str, str]] = []
    for cand in candidates:
        if cand.key in people:
            mentions.append((cand.segment, cand.start, cand.end, cand.text, "PERSON"))
        elif cand.label in wanted and cand.label != "PERSON":
            mentions.append((cand.segment, cand.start, cand.end, cand.text, cand.label))
    counter = (f"e{i}" for i in range(1, 1_000_000))
    groups, placed = _group(mentions, counter)
    return _result(groups, placed)


def _result(groups: list[_Group], placed: list[tuple[_Group, int, int, int]]) -> DocumentEntities:
    first: dict[str, int] = {}
    for group, segment, _s, _e in placed:
        first[group.key] = min(first.get(group.key, segment), segment)
    order = sorted(groups, key=lambda g: (first[g.key], min(f[0] for f in g.forms)))
    entities = [FoundEntity(g.key, g.name(), g.label, first[g.key]) for g in order]
    mentions = sorted(
        (FoundMention(g.key, seg, s, e, g.label) for g, seg, s, e in placed),
        key=lambda m: (m.segment, m.start, m.end),
    )
    return DocumentEntities(entities, mentions)


def _given_entities(
    texts: Sequence[str], clusters: Sequence[Sequence[Cluster]], label: str
) -> DocumentEntities:
    """FALTE's ``ne-N`` clusters taken as given: one entity per cluster id."""
    groups: dict[str, _Group] = {}
    placed: list[tuple[_Group, int, int, int]] = []
    order = 0
    for segment, marks in enumerate(clusters):
        text = texts[segment] if segment < len(texts) else ""
        for start, end, cluster in sorted(marks or []):
            if not (0 <= start < end <= len(text)):
                continue
            key = f"ne-{cluster}"
            group = groups.setdefault(key, _Group(key, label))
            group.add(parse_name(text[start:end]), text[start:end], order)
            placed.append((group, segment, start, end))
            order += 1
    return _result(list(groups.values()), placed)


def _progress(iterable: Iterable[Any], total: int, enabled: bool) -> Iterable[Any]:
    """``iterable`` under a progress bar on standard error (tqdm, else rich) when enabled."""
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        from rich.console import Console
        from rich.progress import track

        return track(
            iterable,
            total=total,
            description="Entity cues",
            console=Console(stderr=True),
            transient=True,
        )
    return tqdm(iterable, total=total, desc="Entity cues", unit="segment", leave=False)


def find_entities(
    documents: list[list[str]],
    nlp: Any,
    labels: Sequence[str] = ("PERSON",),
    batch_size: int = 64,
    progress: bool = True,
    given_clusters: Sequence[Sequence[Sequence[Cluster]] | None] | None = None,
    n_process: int = 1,
) -> list[DocumentEntities]:
    """Entities and mentions of each document (a list of segment texts), in one spaCy pass.

    ``given_clusters[i]``, when not None, holds per segment the (start, end, cluster id) names
    marked in document i (FALTE's ``ne-N`` spans): those are taken as the entities as given,
    and the document is not run through spaCy. With ``nlp`` None, other documents get no
    entities. ``n_process`` > 1 parses in that many processes (worth it only on idle cores).
    """
    labels = tuple(labels) or ("PERSON",)
    given = list(given_clusters or [])
    given += [None] * (len(documents) - len(given))
    results: list[DocumentEntities | None] = [None] * len(documents)
    todo = []
    for i, (segments, clusters) in enumerate(zip(documents, given, strict=True)):
        if clusters and any(clusters):
            results[i] = _given_entities(segments, clusters, labels[0])
        elif nlp is None or not segments:
            results[i] = DocumentEntities()
        else:
            todo.append(i)
    owners = [i for i in todo for _ in documents[i]]
    if owners:
        texts = (text for i in todo for text in documents[i])
        parsed_stream = nlp.pipe(texts, batch_size=batch_size, n_process=n_process)
        stream = _progress(parsed_stream, len(owners), progress)
        parsed: list[Any] = []
        for n, (owner, doc) in enumerate(zip(owners, stream, strict=True)):
            parsed.append(doc)
            if n + 1 == len(owners) or owners[n + 1] != owner:  # a document is complete
                results[owner] = _document_entities(parsed, documents[owner], labels)
                parsed = []
    return [r if r is not None else DocumentEntities() for r in results]


def store_entities(session: Any, document_id: int, result: DocumentEntities) -> None:
    """Add ``result`` as Entity / EntityMention rows of document ``document_id`` (flushes)."""
    from app.models import Entity, EntityMention

    rows: dict[str, Entity] = {}
    for ent in result.entities:
        row = Entity(
            document_id=document_id,
            key=ent.key[:100],
            name=ent.name[:300],
            label=ent.label[:30],
            first_segment=ent.first_segment,
        )
        session.add(row)
        rows[ent.key] = row
    session.flush()
    session.add_all(
        EntityMention(
            document_id=document_id,
            entity_id=rows[m.entity].id,
            segment=m.segment,
            start=m.start,
            end=m.end,
            label=m.label[:30],
        )
        for m in result.mentions
        if m.entity in rows
    )
    session.flush()
