"""Entity cues: places and organisations are not listed as characters, and a
title-only mention ("the mayor", "the Prince") joins the one named character holding that
title when there is exactly one."""

from __future__ import annotations

import pytest

from app.entities import find_entities, load_pipeline
from app.entities.results import DocumentEntities


@pytest.fixture(scope="module")
def nlp():
    pipeline = load_pipeline(None)
    if pipeline is None:
        pytest.skip("no spaCy English model installed")
    return pipeline


def run(nlp, segments: list[str]) -> DocumentEntities:
    return find_entities([segments], nlp, progress=False)[0]


def grouped(result: DocumentEntities, segments: list[str]) -> dict[str, list[str]]:
    names = {e.key: e.name for e in result.entities}
    out: dict[str, list[str]] = {}
    for m in result.mentions:
        out.setdefault(names[m.entity], []).append(segments[m.segment][m.start : m.end])
    return out


DEMO = [
    "In the apple-growing town of Fennick Hollow, deputy sheriff Nora Quaid is called to the "
    "Tully orchard after its elderly owner, Amos Tully, fails to open his cider stand.",
    "At a town council meeting, Mayor June Ashby urges Nora to close the case quickly.",
    "Wilhelmina Sorrell hands Nora a photograph of Amos standing beside the mayor.",
    "Greta, visiting Fennick Hollow for the first time, asks Nora to show her the old mill.",
    "Robert tells James that he isn't buying Old Hill. The Sun rises over the bay.",
]


def test_places_are_not_characters(nlp):
    result = run(nlp, DEMO)
    names = {e.name for e in result.entities}
    assert "Fennick Hollow" not in names and "Old Hill" not in names and "Sun" not in names
    assert {"Nora Quaid", "Amos Tully", "Greta", "Robert", "James"} <= names


def test_the_mayor_joins_mayor_ashby(nlp):
    result = run(nlp, DEMO)
    mentions = grouped(result, DEMO)
    [ashby] = [name for name in mentions if "Ashby" in name]
    assert "the mayor" in mentions[ashby]
    assert not any(name.lower() == "the mayor" for name in mentions)


def test_a_title_held_by_two_named_characters_stays_apart(nlp):
    segments = [
        "The Prince speaks to the guards.",
        "Prince John and Prince Hal ride to the castle.",
    ]
    names = {e.name.lower() for e in run(nlp, segments).entities}
    assert "the prince" in names


def test_a_title_held_by_one_named_character_joins_it(nlp):
    segments = [
        "The Prince speaks to Benedick at the gate.",
        "Prince John rides to the castle with Benedick.",
    ]
    mentions = grouped(run(nlp, segments), segments)
    assert not any(name.lower() == "the prince" for name in mentions)
    [john] = [name for name in mentions if "John" in name]
    assert any(text.lower() == "the prince" for text in mentions[john])
