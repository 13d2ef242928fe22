"""The name lexicon of entity cues: titles, roles, particles, and parsing a name.

``parse_name("Mr. John Fenwick's")`` gives titles ``("mr",)``, names ``("john", "fenwick")``
and gender ``"m"``; :mod:`app.entities` groups mentions with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


MALE_TITLES = _words(
    "mr mister sir lord king prince duke count earl baron marquis master monsieur don signor "
    "signore senor señor herr father brother friar uncle emperor sultan rajah tsar czar abbot "
    "pope abbe abbé"
)
FEMALE_TITLES = _words(
    "mrs ms miss lady queen princess duchess countess baroness marquise dame madame mme mlle "
    "mademoiselle madam donna doña signora senora señora frau fraulein mother sister aunt "
    "empress abbess mistress"
)
NEUTRAL_TITLES = _words(
    "dr doctor captain capt colonel col general gen major lieutenant lt sergeant sgt admiral "
    "commander professor prof judge reverend rev cardinal bishop inspector detective officer "
    "nurse governor senator president chancellor mayor sheriff agent coach chief"
)
TITLES = MALE_TITLES | FEMALE_TITLES | NEUTRAL_TITLES
# Capitalised role nouns that name a character on their own ("the Clown", "POET").
ROLES = TITLES | _words(
    "clown fool poet painter jeweller jeweler merchant mercer shepherd shepherdess servant "
    "pilot mariner messenger soldier narrator stranger ghost witch hermit porter steward "
    "widow priest monk nun gardener gaoler jailer watchman musician professor pedlar peddler "
    "boatswain gentleman gentlewoman host hostess landlord landlady apothecary physician "
    "tribune emissary ambassador knight squire herald page cook maid conjurer soothsayer "
    "orator teacher tutor governess butler valet footman coachman innkeeper fisherman "
    "huntsman woodcutter blacksmith sailor prisoner lawyer banker thief beggar"
)
NAME_PARTICLES = _words("de du des da di del della van von der den la le st ibn bin al")
SUFFIXES = _words("jr sr ii iii iv junior senior")
KIN = _words(
    "daughter son wife husband father mother brother sister uncle aunt nephew niece cousin "
    "servant maid friend lover fiance fiancé fiancee fiancée widow mistress master nurse "
    "children child baby sons daughters brothers sisters parents family heir bride groom "
    "grandfather grandmother grandson granddaughter stepfather stepmother stepson "
    "stepdaughter father-in-law mother-in-law son-in-law daughter-in-law sister-in-law "
    "brother-in-law girlfriend boyfriend companion wife's love death life neck hand hands "
    "head face body heart arm arms eyes hair mind blood grave murder ghost bedroom lodging "
    "chamber advice help plan plans affection letter orders feelings behalf name"
)
PLACE_WORDS = _words(
    "house park street hall castle island river city farm abbey church court road bay forest "
    "mountain mountains lake palace inn hotel school college university hospital manor square "
    "bridge tower navy army company republic kingdom empire states county village town "
    "valley sea ocean station prison cathedral chapel street avenue lane garden gardens "
    "club society senate parliament council ministry department office corporation "
    "inc ltd bank theatre theater museum academy land country province port coast shore "
    "shores streets region capital colony state"
)
PLACE_PREPOSITIONS = _words(
    "in at from into near across through throughout toward towards around outside inside "
    "onto within"
)
MOTION_VERBS = _words(
    "go goes went going gone arrive arrives arrived arriving return returns returned "
    "returning travel travels traveled travelled leave leaves left leaving reach reaches "
    "reached visit visits visited enter enters entered flee flees fled move moves moved "
    "sail sails sailed rule rules ruled invade invades invaded attack attacks attacked"
)
# "King of Bohemia": what follows "of" is a realm.
RULER_TITLES = _words(
    "king queen prince princess duke duchess count countess earl baron baroness emperor empress "
    "sultan rajah tsar czar governor mayor bishop archbishop marquis marquise"
)
# Verbs before "to X" / "for X" where X is a destination.
TRAVEL_VERBS = MOTION_VERBS | _words(
    "head heads headed make makes made set sets journey journeys journeyed fly flies flew "
    "drive drives drove ride rides rode walk walks walked run runs ran escape escapes escaped "
    "bound"
)
NOT_NAMES = _words(
    "enter exit exeunt act scene chapter part book meanwhile later then i the a an and or but "
    "he she they we it his her their its god ok yes no oh"
)
PERSON_LIKE_LABELS = _words("ORG GPE NORP LOC FAC PRODUCT WORK_OF_ART EVENT LAW LANGUAGE")
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$")
VERB_TAGS = frozenset({"VBZ", "VBD", "VBP", "MD"})
NAME_TAGS = frozenset({"NNP", "NNPS"})
NOT_NAME_TAGS = frozenset(
    {"MD", "VB", "VBP", "VBZ", "VBD", "RB", "IN", "DT", "PRP", "CC", "WDT", "WP"}
)
# Role words that, in lower case, usually mean something else.
AMBIGUOUS_ROLES = _words(
    "page host count coach general major chief master mistress agent officer fool ghost "
    "judge governor president senator herald"
)
# Russian patronymics: "Dmitri Fyodorovitch" and "Dmitri Karamazov" are one man.
PATRONYMICS = ("ovitch", "evitch", "ovich", "evich", "ovna", "evna", "ichna", "yevich")
# One spelling per title, so that "the doctor" can join "Dr. Harris".
TITLE_SPELLINGS = {
    "dr": "doctor",
    "capt": "captain",
    "col": "colonel",
    "gen": "general",
    "lt": "lieutenant",
    "sgt": "sergeant",
    "prof": "professor",
    "rev": "reverend",
    "mme": "madame",
    "mlle": "mademoiselle",
    "abbé": "abbe",
    "señor": "senor",
    "señora": "senora",
    "doña": "donna",
    "mister": "mr",
    "jeweler": "jeweller",
    "peddler": "pedlar",
}
# Abbreviated titles never name a character on their own.
ABBREVIATED_TITLES = _words("mr mrs ms dr lt capt col gen sgt rev prof mme mlle st m")
# Function words, never names even when capitalised ("Then and Alice ...").
STOP_WORDS = _words(
    "about after again all also although always another any anyone anything as at because "
    "before both each either even every everyone everything few finally first for from here "
    "how however if in instead last later many may meanwhile more most much never next none "
    "nothing now often once only other others over perhaps since so some someone something "
    "soon still such that then there these this those though thus to today together tomorrow "
    "nobody somebody everybody anybody nothing everyone "
    "too under until upon very what when where whether which while who why with yet you"
)
WORD_PATTERN = re.compile(r"[^\W\d_][\w.'’-]*", re.UNICODE)


def bare(word: str) -> str:
    return word.casefold().rstrip(".")


def is_capitalised(word: str) -> bool:
    return bool(word) and word[0].isupper()


@dataclass(frozen=True)
class ParsedName:
    """A mention's name split the way grouping needs: titles, given name, surname."""

    titles: tuple[str, ...]
    names: tuple[str, ...]  # casefolded name words, titles and suffixes removed
    gender: str | None
    suffix: str | None = None  # "sr", "jr", "ii": Shawn Sr. is not Shawn

    @property
    def first(self) -> str | None:
        return self.names[0] if len(self.names) >= 2 else None

    @property
    def full(self) -> str:
        return " ".join(self.names)


def parse_name(text: str) -> ParsedName:
    """Split "Mr. John Fenwick's" into titles ("mr",), names ("john", "fenwick") and gender."""
    words = text.split()
    if len(words) > 1 and words[0].casefold() in ("the", "a", "an"):
        words = words[1:]
    if words:
        words[-1] = POSSESSIVE.sub("", words[-1]) or words[-1]
    titles: list[str] = []
    i = 0
    while i < len(words) - 1 and bare(words[i]) in TITLES:
        titles.append(TITLE_SPELLINGS.get(bare(words[i]), bare(words[i])))
        i += 1
    rest = [w for w in words[i:] if bare(w) not in SUFFIXES or len(words) - i == 1]
    suffixes = [bare(w) for w in words[i:] if bare(w) in SUFFIXES and w not in rest]
    suffix = {"senior": "sr", "junior": "jr"}.get(suffixes[-1], suffixes[-1]) if suffixes else None
    if len(rest) == 1 and not titles and bare(rest[0]) in ROLES:
        titles, rest = [TITLE_SPELLINGS.get(bare(rest[0]), bare(rest[0]))], []
    if titles and len(rest) > 1 and rest[0].casefold() == "of":
        # "King of Bohemia": a title held over a realm; the realm alone is a place.
        names: tuple[str, ...] = (" ".join(bare(w) for w in rest),)
    else:
        names = tuple(bare(w) for w in rest if bare(w) not in NAME_PARTICLES or w == rest[-1])
    genders = {"m" if t in MALE_TITLES else "f" for t in titles if t not in NEUTRAL_TITLES}
    gender = genders.pop() if len(genders) == 1 else None
    return ParsedName(tuple(titles), names, gender, suffix)
