"""Entity cues: FALTE markup stripping, name parsing, reader-style grouping, storage."""

from __future__ import annotations

import json
import logging

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from app.entities import (
    DocumentEntities,
    FoundEntity,
    FoundMention,
    find_entities,
    load_pipeline,
    parse_name,
    store_entities,
    strip_entity_markup,
)
from app.entities import nlp as nlp_module
from app.models import Base, Document, Entity, EntityMention, Study
from tests.conftest import shared_file


@pytest.fixture(scope="module")
def nlp():
    pipeline = load_pipeline(None)
    if pipeline is None:
        pytest.skip("no spaCy English model installed")
    return pipeline


def run(nlp, segments: list[str], **kwargs) -> DocumentEntities:
    return find_entities([segments], nlp, progress=False, **kwargs)[0]


def groups(result: DocumentEntities, segments: list[str]) -> dict[str, list[str]]:
    """Entity name -> the texts of its mentions, in reading order."""
    out: dict[str, list[str]] = {}
    names = {e.key: e.name for e in result.entities}
    for m in result.mentions:
        out.setdefault(names[m.entity], []).append(segments[m.segment][m.start : m.end])
    return out


def entity_of(result: DocumentEntities, segments: list[str], text: str, segment: int) -> str:
    """The key of the entity whose mention in ``segment`` reads ``text``."""
    for m in result.mentions:
        if m.segment == segment and segments[segment][m.start : m.end] == text:
            return m.entity
    raise AssertionError(f"no mention {text!r} in segment {segment}: {groups(result, segments)}")


# --------------------------------------------------------------------------- FALTE markup


def test_strip_markup_with_spaces_inside_spans():
    raw = (
        '<span class = "ne ne-4"> John</span><span class = "ne ne-0"> Fenwick</span>, an '
        'aspiring artist, accepts a loan from Mr.<span class = "ne ne-10"> Morrison</span> to move.'
    )
    text, marks = strip_entity_markup(raw)
    assert text == "John Fenwick, an aspiring artist, accepts a loan from Mr. Morrison to move."
    assert marks == [(0, 4, "4"), (5, 12, "0"), (58, 66, "10")]
    assert [text[s:e] for s, e, _ in marks] == ["John", "Fenwick", "Morrison"]


def test_strip_markup_names_between_plain_words():
    raw = (
        '<span class = "ne ne-0"> Fenwick</span> becomes infatuated with<span class = "ne ne-12">'
        ' Madame</span> de<span class = "ne ne-5"> Pastourelles</span>, an artist.'
    )
    text, marks = strip_entity_markup(raw)
    assert text == "Fenwick becomes infatuated with Madame de Pastourelles, an artist."
    assert [(text[s:e], c) for s, e, c in marks] == [
        ("Fenwick", "0"),
        ("Madame", "12"),
        ("Pastourelles", "5"),
    ]
    assert marks[2] == (42, 54, "5")


def test_strip_markup_unescapes_entities_and_drops_other_tags():
    raw = '<p><b>Tom</b> &amp; <span class="ne ne-3">Zoë&#39;s</span> caf&eacute;</p>'
    text, marks = strip_entity_markup(raw)
    assert text == "Tom & Zoë's café"
    assert marks == [(6, 11, "3")]
    assert text[6:11] == "Zoë's"


def test_strip_markup_without_spans_is_plain_text():
    assert strip_entity_markup("  Just text, no names.  ") == ("Just text, no names.", [])


def test_strip_markup_on_the_falte_sample():
    path = shared_file("falte", "stories.json")
    stories = json.loads(path.read_text())
    text, marks = strip_entity_markup(stories["test1"]["sentences"][1])
    assert text.startswith("Mr. Collins, a clergyman, arrives")
    assert [(text[s:e], c) for s, e, c in marks][:3] == [
        ("Mr.", "13"),
        ("Collins", "1"),
        ("Bennet", "16"),
    ]
    for sentences in (s["sentences"] for s in stories.values()):
        for raw in sentences:
            plain, found = strip_entity_markup(raw)
            assert "<" not in plain
            for s, e, _ in found:
                assert plain[s:e] == plain[s:e].strip() and plain[s:e]


# --------------------------------------------------------------------------- names


def test_parse_name_titles_possessives_and_gender():
    assert parse_name("Mr. John Fenwick") == parse_name("Mr. John Fenwick's")
    p = parse_name("Mrs. Morrison")
    assert (p.titles, p.names, p.gender) == (("mrs",), ("morrison",), "f")
    p = parse_name("Don Pedro")
    assert (p.titles, p.names, p.gender) == (("don",), ("pedro",), "m")
    p = parse_name("the Prince")
    assert (p.titles, p.names) == (("prince",), ())
    p = parse_name("Sir Rowland de Boys")
    assert (p.first, p.names[-1]) == ("rowland", "boys")
    assert parse_name("Marcus Crassus'").names == ("marcus", "crassus")
    assert parse_name("Dr. Harris").gender is None


# --------------------------------------------------------------------------- grouping

MUCH_ADO = [
    "Don Pedro of Aragon arrives in Messina with Claudio, Benedick, and Balthasar. He invites "
    "Claudio and Benedick to stay at Leonato's house for a month.",
    "Claudio tells Benedick that he's in love with Hero, Leonato's daughter. Pedro says he will "
    "pretend to be Claudio and talk to Leonato about letting Claudio marry Hero.",
    "Antonio overhears the Prince saying he plans to marry Hero himself. John decides to thwart "
    "the Prince's plan.",
]


def test_snac_much_ado_don_pedro_pedro_and_the_prince(nlp):
    result = run(nlp, MUCH_ADO)
    pedro = entity_of(result, MUCH_ADO, "Don Pedro", 0)
    assert entity_of(result, MUCH_ADO, "Pedro", 1) == pedro
    prince = entity_of(result, MUCH_ADO, "the Prince", 2)
    assert [m.start for m in result.mentions if m.entity == prince] == [
        MUCH_ADO[2].index("the Prince"),
        MUCH_ADO[2].rindex("the Prince"),
    ]
    assert entity_of(result, MUCH_ADO, "John", 2) not in (pedro, prince)
    names = {e.name for e in result.entities}
    assert {"Don Pedro", "Claudio", "Benedick", "Leonato", "Hero", "Antonio"} <= names
    assert "Messina" not in names and "Aragon" not in names


def test_snac_names_the_ner_labels_as_places_become_people(nlp):
    # en_core_web_sm tags "Balthasar" GPE here; the list "Claudio, Benedick, and Balthasar"
    # tells a reader it is a person.
    result = run(nlp, MUCH_ADO)
    balthasar = entity_of(result, MUCH_ADO, "Balthasar", 0)
    assert next(e for e in result.entities if e.key == balthasar).label == "PERSON"


def test_possessives_are_not_part_of_mentions(nlp):
    result = run(nlp, MUCH_ADO)
    leonato = entity_of(result, MUCH_ADO, "Leonato", 0)
    texts = [MUCH_ADO[m.segment][m.start : m.end] for m in result.mentions if m.entity == leonato]
    assert texts == ["Leonato", "Leonato", "Leonato"]
    entity = next(e for e in result.entities if e.key == leonato)
    assert entity == FoundEntity(leonato, "Leonato", "PERSON", 0)


FENWICK = [
    "John Fenwick, an aspiring artist, accepts a loan from Mr. Morrison to move to London.",
    "Fenwick writes a letter to Mrs. Morrison expressing his sympathy for her husband's suicide.",
    "Mr. Fenwick meets Mr. Morrison's brother. Later, Mary Fenwick arrives in London.",
]


def test_john_fenwick_fenwick_and_mr_fenwick_are_one_person(nlp):
    result = run(nlp, FENWICK)
    john = entity_of(result, FENWICK, "John Fenwick", 0)
    assert entity_of(result, FENWICK, "Fenwick", 1) == john
    assert entity_of(result, FENWICK, "Mr. Fenwick", 2) == john
    assert next(e for e in result.entities if e.key == john).name == "John Fenwick"


def test_mr_and_mrs_morrison_are_two_people(nlp):
    result = run(nlp, FENWICK)
    mr = entity_of(result, FENWICK, "Mr. Morrison", 0)
    mrs = entity_of(result, FENWICK, "Mrs. Morrison", 1)
    assert mr != mrs
    assert entity_of(result, FENWICK, "Mr. Morrison", 2) == mr
    assert {e.key: e.first_segment for e in result.entities}[mrs] == 1


def test_conflicting_first_names_split(nlp):
    result = run(nlp, FENWICK)
    assert entity_of(result, FENWICK, "Mary Fenwick", 2) != entity_of(
        result, FENWICK, "John Fenwick", 0
    )


def test_surname_joins_the_most_recent_compatible_full_name(nlp):
    segments = [
        "Jane Bennet dances with Charles Bingley at the ball.",
        "Elizabeth Bennet refuses Darcy. Bennet walks home alone.",
    ]
    result = run(nlp, segments)
    assert entity_of(result, segments, "Bennet", 1) == entity_of(
        result, segments, "Elizabeth Bennet", 1
    )
    assert entity_of(result, segments, "Jane Bennet", 0) != entity_of(
        result, segments, "Elizabeth Bennet", 1
    )


def test_a_patronymic_is_not_a_conflicting_surname(nlp):
    # SNaC dev (The Brothers Karamazov).
    segments = [
        "Dmitri Karamazov quarrels with his father over money.",
        "At the trial, Ippolit Kirillovitch accuses Dmitri Fyodorovitch of the murder.",
    ]
    result = run(nlp, segments)
    assert entity_of(result, segments, "Dmitri Fyodorovitch", 1) == entity_of(
        result, segments, "Dmitri Karamazov", 0
    )


def test_a_titled_given_name_is_not_a_bare_given_name(nlp):
    segments = ["John Fenwick paints all day.", "Don John plots against Claudio."]
    result = run(nlp, segments)
    assert entity_of(result, segments, "Don John", 1) != entity_of(
        result, segments, "John Fenwick", 0
    )


def test_later_occurrences_the_ner_missed_are_mentions(nlp):
    # From SNaC dev (The Winter's Tale): the tagger reads the sentence-initial "Antigonus"
    # as a plural noun and the NER skips it, but it is the same person named later on.
    segments = [
        "Antigonus leaves the baby on the shore of Bohemia.",
        "A bear chases Antigonus, who dies.",
    ]
    result = run(nlp, segments)
    key = entity_of(result, segments, "Antigonus", 1)
    assert entity_of(result, segments, "Antigonus", 0) == key
    assert next(e for e in result.entities if e.key == key).first_segment == 0


def test_senior_and_junior_are_different_people(nlp):
    # From SNaC dev (a soap-opera recap).
    segments = [
        "Rex, Mimi, Shawn and Shawn Sr. are at the hospital.",
        "Shawn Sr. tells Shawn to leave. Shawn refuses.",
    ]
    result = run(nlp, segments)
    senior = entity_of(result, segments, "Shawn Sr", 1)
    assert entity_of(result, segments, "Shawn", 1) != senior
    assert [m.segment for m in result.mentions if m.entity == senior] == [0, 1]


def test_definite_role_nouns_are_characters(nlp):
    segments = [
        "Leontes asks the doctor about Hermione. The doctor says she is dying.",
        "The doctor leaves; a doctor from Rome arrives.",
    ]
    result = run(nlp, segments)
    doctor = entity_of(result, segments, "the doctor", 0)
    assert entity_of(result, segments, "The doctor", 1) == doctor
    assert next(e for e in result.entities if e.key == doctor).name == "the doctor"
    assert "a doctor" not in {segments[m.segment][m.start : m.end] for m in result.mentions}


def test_names_the_tagger_misses_beside_a_person(nlp):
    # SNaC train: the tagger reads the sentence-initial "Lily" as an adverb.
    segments = ["Lily and Holden talk about the baby.", "Later, Lily tells Holden the truth."]
    result = run(nlp, segments)
    lily = entity_of(result, segments, "Lily", 0)
    assert entity_of(result, segments, "Lily", 1) == lily


def test_unknown_sentence_subjects_and_names_across_a_full_stop(nlp):
    # SNaC dev: the tagger reads "Cupid" as a common noun, and the NER runs "Blithedale.
    # Zenobia" together as one place. "Time" is a word the document also uses in lower case.
    segments = [
        "Cupid enters with a group of ladies who perform a dance for the guests.",
        "The next day, Coverdale arrives at Blithedale. Zenobia, whom he has never seen "
        "before, enters the parlor.",
        "Time passes and the guests leave, for it is time to sleep.",
    ]
    result = run(nlp, segments)
    texts = {segments[m.segment][m.start : m.end] for m in result.mentions}
    assert {"Cupid", "Coverdale", "Zenobia"} <= texts
    assert "Blithedale" not in texts and "Time" not in texts


def test_destinations_are_not_people(nlp):
    # SNaC dev (The White Devil): the NER calls Padua a PERSON once; a reader does not.
    segments = [
        "Brachiano decides to go to Padua to concoct a plan.",
        "Flamineo and Brachiano make for Padua.",
        "Polixenes, the King of Bohemia, visits his friend Leontes.",
    ]
    result = run(nlp, segments)
    names = {e.name for e in result.entities}
    assert {"Brachiano", "Flamineo", "Leontes"} <= names
    assert "Padua" not in names and "Bohemia" not in names


def test_mentions_never_overlap(nlp):
    # SNaC train: "Cardinal" and "Cardinal Monticelso" once overlapped, and "Gwen" (between
    # two people in a list) was found twice.
    segments = [
        "Enter Francisco de Medicis, Cardinal Monticelso, and Isabella.",
        "The time goes on and on. Sheridan, Gwen, Noah, Maddie, and the boys are still stuck "
        "in the bomb shelter.",
    ]
    result = run(nlp, segments)
    texts = [segments[m.segment][m.start : m.end] for m in result.mentions]
    assert "Cardinal Monticelso" in texts and "Cardinal" not in texts
    assert texts.count("Gwen") == 1
    spans = [(m.segment, m.start, m.end) for m in result.mentions]
    assert all(a[0] != b[0] or a[2] <= b[1] for a, b in zip(spans, spans[1:], strict=False))


def test_offsets_are_code_points(nlp):
    segments = ["Ça va 😀 — Claudio tells Benedick about the café."]
    result = run(nlp, segments)
    texts = {segments[0][m.start : m.end] for m in result.mentions}
    assert {"Claudio", "Benedick"} <= texts


def test_other_labels_on_request(nlp):
    segments = ["Claudio travels from Messina to Rome with Benedick."]
    result = run(nlp, segments, labels=("GPE",))
    assert {e.label for e in result.entities} == {"GPE"}
    assert {e.name for e in result.entities} >= {"Rome"}


def test_mentions_are_sorted_and_entities_ordered_by_first_appearance(nlp):
    result = run(nlp, MUCH_ADO)
    order = [(m.segment, m.start) for m in result.mentions]
    assert order == sorted(order)
    firsts = [e.first_segment for e in result.entities]
    assert firsts == sorted(firsts)
    keys = {e.key for e in result.entities}
    assert {m.entity for m in result.mentions} == keys
    for m in result.mentions:
        assert MUCH_ADO[m.segment][m.start : m.end].strip() == MUCH_ADO[m.segment][m.start : m.end]


def test_given_clusters_are_used_as_given_without_a_pipeline():
    segments = ["John Fenwick borrows from Mr. Morrison.", "Fenwick thanks Mrs. Morrison."]
    clusters = [
        [(0, 4, "4"), (5, 12, "0"), (30, 38, "10")],
        [(0, 7, "0"), (20, 28, "10")],
    ]
    result = find_entities([segments], None, given_clusters=[clusters], progress=False)[0]
    assert [e.key for e in result.entities] == ["ne-4", "ne-0", "ne-10"]
    assert {e.key: e.name for e in result.entities}["ne-10"] == "Morrison"
    assert result.mentions[-1] == FoundMention("ne-10", 1, 20, 28, "PERSON")
    assert len(result.mentions) == 5


def test_two_processes_give_the_same_entities(nlp):
    docs = [MUCH_ADO, FENWICK]
    assert find_entities(docs, nlp, progress=False, n_process=2) == find_entities(
        docs, nlp, progress=False
    )


def test_given_and_found_documents_in_one_call(nlp):
    marked = ["Fenwick thanks Mrs. Morrison."]
    results = find_entities(
        [MUCH_ADO, marked],
        nlp,
        given_clusters=[None, [[(0, 7, "0"), (20, 28, "10")]]],
        progress=False,
    )
    assert results[0] == run(nlp, MUCH_ADO)
    assert [e.key for e in results[1].entities] == ["ne-0", "ne-10"]


def test_without_a_pipeline_documents_get_no_entities():
    result = find_entities([["Claudio arrives."], []], None, progress=False)
    assert result == [DocumentEntities(), DocumentEntities()]


def test_many_documents_in_one_pass_keep_their_own_entities(nlp):
    docs = [MUCH_ADO, FENWICK, ["Nobody is named here."]]
    results = find_entities(docs, nlp, batch_size=2, progress=False)
    assert len(results) == 3
    assert results[0] == run(nlp, MUCH_ADO)
    assert results[1] == run(nlp, FENWICK)
    assert results[2].mentions == []


# --------------------------------------------------------------------------- loading


def test_load_pipeline_keeps_only_what_ner_needs(nlp):
    assert "ner" in nlp.pipe_names
    assert "parser" not in nlp.pipe_names and "lemmatizer" not in nlp.pipe_names


def test_unknown_model_falls_back_to_the_installed_english_pipeline(nlp):
    fallback = load_pipeline("no_such_model_xyz")
    assert fallback is not None and "ner" in fallback.pipe_names


def test_no_model_warns_once(monkeypatch, caplog):
    import spacy

    def fail(name, **kwargs):
        raise OSError(f"[E050] Can't find model '{name}'")

    monkeypatch.setattr(spacy, "load", fail)
    monkeypatch.setattr(nlp_module, "_warned", False)
    monkeypatch.setattr(nlp_module, "_LOADED", {})  # as in a process that loaded none yet
    with caplog.at_level(logging.WARNING, logger="app.entities.nlp"):
        assert load_pipeline("en_core_web_sm") is None
        assert load_pipeline(None) is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "without entity cues" in warnings[0].getMessage().lower()


# --------------------------------------------------------------------------- storage


def test_store_entities_writes_rows():
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        study = Study(slug="s", taxonomy_name="snac", taxonomy={}, taxonomy_hash="h")
        document = Document(study=study, external_id="d1")
        session.add_all([study, document])
        session.flush()
        result = DocumentEntities(
            entities=[
                FoundEntity("e1", "John Fenwick", "PERSON", 0),
                FoundEntity("e2", "Mrs. Morrison", "PERSON", 1),
            ],
            mentions=[
                FoundMention("e1", 0, 0, 12, "PERSON"),
                FoundMention("e1", 1, 0, 7, "PERSON"),
                FoundMention("e2", 1, 20, 33, "PERSON"),
            ],
        )
        store_entities(session, document.id, result)
        session.commit()
        rows = session.scalars(select(Entity).order_by(Entity.key)).all()
        assert [(r.key, r.name, r.label, r.first_segment) for r in rows] == [
            ("e1", "John Fenwick", "PERSON", 0),
            ("e2", "Mrs. Morrison", "PERSON", 1),
        ]
        mentions = session.scalars(select(EntityMention).order_by(EntityMention.id)).all()
        by_id = {r.id: r.key for r in rows}
        assert [(by_id[m.entity_id], m.segment, m.start, m.end) for m in mentions] == [
            ("e1", 0, 0, 12),
            ("e1", 1, 0, 7),
            ("e2", 1, 20, 33),
        ]
        assert all(m.document_id == document.id for m in mentions)
