"""Which names are people in a document, their other occurrences, grouping into characters."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.entities.candidates import _Candidate, _context_score
from app.entities.markup import Cluster
from app.entities.names import (
    NOT_NAME_TAGS,
    PATRONYMICS,
    PERSON_LIKE_LABELS,
    POSSESSIVE,
    TITLE_SPELLINGS,
    TITLES,
    ParsedName,
    _words,
    bare,
    parse_name,
)
from app.entities.results import DocumentEntities, FoundEntity, FoundMention
from app.entities.tokens import _View

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


# --------------------------------------------------------------------------- places, things

# The last word of a name that makes it a place or an organisation ("Fennick Hollow", "Old
# Hill", "Tully Orchard"): only for names of two words or more, so "Ridge" stays a person.
PLACE_WORDS = _words(
    """abbey academy alley army avenue bank bay bridge castle cathedral chapel church city
    club college company corporation council county court cove creek dale estate falls farm
    field fields forest gardens hall harbor harbour heights hill hills hollow hospital hotel
    inn island islands kingdom lake lane manor market mill mills moor mountain mountains navy
    ocean orchard palace park port prison republic ridge river road school sea society springs
    square station street temple tower town university vale valley village wood woods"""
)
# Single capitalised words that name things in the sky or the world, not characters.
THINGS = frozenset({"sun", "moon", "earth", "sky", "stars"})
# Words before a name that make it a place: "the town of Fennick Hollow".
PLACE_OF = ("town of", "city of", "village of", "kingdom of", "county of", "island of")


def _not_people(candidates: list[_Candidate], texts: Sequence[str]) -> set[str]:
    """Name keys a reader takes for places, organisations or things, not characters: names
    ending in a place word, names introduced as "the town of X", "the Sun" and "the Moon".

    (Single names that always follow "the" were tried too: on SNaC dev that drops "the
    Albatross", which the annotators marked as a character, so it is not done.)"""
    found: set[str] = set()
    for cand in candidates:
        if not cand.key or cand.role:
            continue
        words = cand.key.split()
        before = texts[cand.segment][max(0, cand.start - 40) : cand.start].casefold().rstrip()
        place = len(words) >= 2 and words[-1] in PLACE_WORDS
        if place or before.endswith(PLACE_OF) or cand.key in THINGS:
            found.add(cand.key)
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
    mentions: list[tuple[int, int, int, str, str]],
    next_key: Iterable[str],
    texts: Sequence[str] = (),
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
    return _join_title_only(groups, placed, texts)


# A capitalised title right before a mention, at most one capitalised name word between:
# "Mayor" of "Mayor June Ashby" when the NER kept only "Ashby". No punctuation in between.
# (A full stop only after a short abbreviation: "Dr. Ashby", not "the King. Autolycus".)
_TITLE_BEFORE = re.compile(r"\b([A-Z][a-z]{1,2}\.|[A-Z][a-z]+) +(?:[A-Z][\w'-]* +)?$")


def _titles_before(text: str, start: int) -> set[str]:
    """The title written just before a mention, if any."""
    found = _TITLE_BEFORE.search(text[max(0, start - 40) : start])
    word = bare(found.group(1)) if found else ""
    return {TITLE_SPELLINGS.get(word, word)} if word in TITLES else set()


def _join_title_only(
    groups: list[_Group], placed: list[tuple[_Group, int, int, int]], texts: Sequence[str]
) -> tuple[list[_Group], list[tuple[_Group, int, int, int]]]:
    """Join a title-only character ("the Prince", "the mayor") to the one named character
    holding that title ("Prince John", "Mayor Ashby"); left apart when none or several do."""
    named = [g for g in groups if g.label == "PERSON" and (g.fulls or g.singles)]
    held = {g.key: set(g.titles) for g in named}
    for group, segment, start, _end in placed:
        if group.key in held and segment < len(texts):
            held[group.key] |= _titles_before(texts[segment], start)
    into: dict[str, _Group] = {}
    for group in groups:
        if group.label != "PERSON" or group.fulls or group.singles or not group.titles:
            continue
        owners = [g for g in named if held[g.key] & group.titles]
        genders = {g.gender for g in owners} | {group.gender}
        if len(owners) == 1 and len(genders - {None}) <= 1:
            into[group.key] = owners[0]
    for key, owner in into.items():
        joined = next(g for g in groups if g.key == key)
        owner.forms.extend(joined.forms)
        owner.last_seen = max(owner.last_seen, joined.last_seen)
    kept = [g for g in groups if g.key not in into]
    return kept, [(into.get(g.key, g), seg, s, e) for g, seg, s, e in placed]


# --------------------------------------------------------------------------- other occurrences


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


# --------------------------------------------------------------------------- results


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
