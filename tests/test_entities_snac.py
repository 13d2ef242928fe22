"""Entity cues on the real SNaC dev summaries: coverage of CharE spans and well-formed output."""

from __future__ import annotations

import json

import pytest

from app.entities import find_entities, load_pipeline
from tests.conftest import shared_file

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dev():
    dev = shared_file("snac", "dev.json")  # skips, or fails under MARGINALIA_REQUIRE_DATA
    nlp = load_pipeline(None)
    if nlp is None:
        pytest.skip("no spaCy English model installed")
    data = json.loads(dev.read_text())
    documents = [[body[k]["text"] for k in sorted(body, key=int)] for body in data.values()]
    errors = [[body[k]["errors"] for k in sorted(body, key=int)] for body in data.values()]
    return documents, errors, find_entities(documents, nlp, progress=False)


def test_chare_spans_overlap_person_mentions(dev):
    documents, errors, results = dev
    total = covered = 0
    for segments, errs, result in zip(documents, errors, results, strict=True):
        for index, (text, seg_errors) in enumerate(zip(segments, errs, strict=True)):
            mentions = [m for m in result.mentions if m.segment == index]
            for error in seg_errors:
                if error["error_type"] != "CharE":
                    continue
                total += 1
                start = text.find(error["span"])
                end = start + len(error["span"])
                covered += any(m.start < end and start < m.end for m in mentions)
    assert total == 204
    assert covered / total >= 0.90


def test_output_is_well_formed(dev):
    documents, _errors, results = dev
    for segments, result in zip(documents, results, strict=True):
        keys = [e.key for e in result.entities]
        assert len(keys) == len(set(keys))
        first: dict[str, int] = {}
        previous = None
        for m in result.mentions:
            text = segments[m.segment]
            assert 0 <= m.start < m.end <= len(text)
            mention = text[m.start : m.end]
            assert mention == mention.strip() and not mention.endswith(("'s", "’s"))
            assert m.entity in keys and m.label == "PERSON"
            if previous is not None and previous.segment == m.segment:
                assert previous.end <= m.start, "mentions overlap"
            previous = m
            first.setdefault(m.entity, m.segment)
        assert {e.key: e.first_segment for e in result.entities} == first
        assert all(e.name for e in result.entities)


def test_grouping_on_real_summaries(dev):
    documents, _errors, results = dev
    by_doc = dict(zip((tuple(d[:1]) for d in documents), results, strict=True))
    much_ado = next(r for d, r in by_doc.items() if d[0].startswith("Don Pedro of Aragon"))
    segments = next(d for d in documents if d[0].startswith("Don Pedro of Aragon"))
    forms: dict[str, set[str]] = {}
    for m in much_ado.mentions:
        forms.setdefault(m.entity, set()).add(segments[m.segment][m.start : m.end])
    assert {"Don Pedro", "Pedro"} in list(forms.values())
    names = [e.name for e in much_ado.entities]
    assert len(names) == len(set(names))
    assert {"Claudio", "Benedick", "Leonato", "Hero", "Beatrice"} <= set(names)
