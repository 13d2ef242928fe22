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

Modules: ``nlp`` loads spaCy, ``names`` is the name lexicon, ``markup`` reads FALTE spans,
``tokens`` and ``candidates`` find names per segment, ``characters`` decides which are people
and groups them, ``results`` holds the returned types, ``store`` writes them to the database.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from app.entities.candidates import _Candidate, _segment_candidates
from app.entities.characters import (
    _decide_people,
    _given_entities,
    _group,
    _list_neighbours,
    _name_key,
    _not_people,
    _other_occurrences,
    _result,
)
from app.entities.markup import Cluster, strip_entity_markup
from app.entities.names import parse_name
from app.entities.nlp import load_pipeline
from app.entities.results import DocumentEntities, FoundEntity, FoundMention
from app.entities.store import store_entities
from app.entities.tokens import _View

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
        people -= _not_people(candidates, texts)
    mentions: list[tuple[int, int, int, str, str]] = []
    for cand in candidates:
        if cand.key in people:
            mentions.append((cand.segment, cand.start, cand.end, cand.text, "PERSON"))
        elif cand.label in wanted and cand.label != "PERSON":
            mentions.append((cand.segment, cand.start, cand.end, cand.text, cand.label))
    counter = (f"e{i}" for i in range(1, 1_000_000))
    groups, placed = _group(mentions, counter, texts)
    return _result(groups, placed)


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
