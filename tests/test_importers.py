"""Importing documents: every CONTRACT format, re-segmenting, gold spans, and malformed files
refused with a clear message and nothing stored (one transaction per file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from app.errors import InvalidInput
from app.formats import parse_documents
from app.models import Document, GoldError, Segment
from tests.conftest import REPO, make_database_url, shared_file
from tests.helpers import count_rows


@pytest.fixture
def database_url(request, tmp_path):
    return make_database_url("sqlite", request, tmp_path)


def write(tmp_path: Path, name: str, content) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


@pytest.fixture
def study(app) -> str:
    """An empty study (snac taxonomy) named ``demo``."""
    from app.db import session_scope
    from app.documents.studies import create_study

    with app.app_context(), session_scope() as session:
        create_study(session, "demo", REPO / "taxonomies" / "snac.yaml", suggestions="off")
    return "demo"


def import_file(
    app,
    path: Path,
    fmt: str = "auto",
    *,
    slug: str = "demo",
    gold: bool = False,
    sentences_per_segment: int | None = None,
):
    """Parse and store a file in one transaction, as ``marginalia import`` does."""
    from app.db import session_scope
    from app.documents.studies import get_study, import_documents

    with app.app_context(), session_scope() as session:
        documents = parse_documents(
            path, fmt, gold=gold, sentences_per_segment=sentences_per_segment
        )
        return import_documents(session, get_study(session, slug), documents, gold=gold)


def stored(app) -> dict[str, list[str]]:
    """external_id -> segment texts of every stored document, in import order."""
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        documents = session.scalars(select(Document).order_by(Document.position)).all()
        return {d.external_id: [s.text for s in d.segments] for d in documents}


def counts(app) -> tuple[int, int, int]:
    return count_rows(app, Document), count_rows(app, Segment), count_rows(app, GoldError)


# --- formats ----------------------------------------------------------------------------


def test_falte_stories_import_with_html_stripped(app, study):
    path = shared_file("falte", "stories.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    documents = parse_documents(path, "falte")
    assert [d.external_id for d in documents] == list(raw)
    for document in documents:
        assert len(document.segments) == len(raw[document.external_id]["sentences"])
        for text in document.segments:
            assert "<" not in text and ">" not in text and "ne-" not in text
            assert text == text.strip() and "  " not in text
    first = documents[0].segments[0]
    assert first.startswith("John Fenwick, an aspiring artist, accepts a loan from Mr. Morrison")
    # The FALTE markup's names survive as entity clusters pointing at the plain text.
    clusters = documents[0].entity_clusters
    assert clusters is not None
    for segment, marks in zip(documents[0].segments, clusters, strict=True):
        for start, end, _cluster in marks:
            name = segment[start:end]
            assert name and name == name.strip()
    assert "Fenwick" in {documents[0].segments[0][s:e] for s, e, _ in clusters[0]}

    result = import_file(app, path, "falte")
    assert result.documents == len(raw)
    assert stored(app) == {d.external_id: d.segments for d in documents}


def test_inline_falte_document(tmp_path):
    path = write(
        tmp_path,
        "falte.json",
        {
            "story-1": {
                "sentences": [
                    '<span class = "ne ne-1"> Anna</span> meets <b>Tom</b> &amp; co. at 5&lt;6.',
                    "Then <i>she</i> leaves.",
                ],
                "title": "A story",
            }
        },
    )
    (document,) = parse_documents(path)  # auto-detected
    assert document.external_id == "story-1"
    assert document.segments == ["Anna meets Tom & co. at 5<6.", "Then she leaves."]
    assert document.meta == {"title": "A story"}
    assert document.entity_clusters is not None
    assert [document.segments[0][s:e] for s, e, _ in document.entity_clusters[0]] == ["Anna"]


def test_paragraphs(app, study, tmp_path):
    path = write(tmp_path, "p.json", {"p1": ["One.", "Two."], "p2": ["Three."]})
    documents = parse_documents(path)
    assert [(d.external_id, d.segments) for d in documents] == [
        ("p1", ["One.", "Two."]),
        ("p2", ["Three."]),
    ]
    result = import_file(app, path, "paragraphs")
    assert (result.documents, result.segments) == (2, 3)
    assert stored(app) == {"p1": ["One.", "Two."], "p2": ["Three."]}


def test_jsonl(app, study, tmp_path):
    path = write(
        tmp_path,
        "docs.jsonl",
        "\n".join(
            [
                json.dumps({"id": "j1", "segments": ["Alpha.", "Beta."], "meta": {"model": "gpt"}}),
                "",
                json.dumps({"id": 7, "segments": ["Gamma."]}),
            ]
        )
        + "\n",
    )
    documents = parse_documents(path)
    assert [(d.external_id, d.segments, d.meta) for d in documents] == [
        ("j1", ["Alpha.", "Beta."], {"model": "gpt"}),
        ("7", ["Gamma."], {}),
    ]
    import_file(app, path)
    assert stored(app) == {"j1": ["Alpha.", "Beta."], "7": ["Gamma."]}
    # --format jsonl works whatever the file is called.
    renamed = write(tmp_path, "docs.txt", path.read_text())
    assert [d.external_id for d in parse_documents(renamed, "jsonl")] == ["j1", "7"]


SNAC_DOC = {
    "s1": {
        "1": {
            "text": "He finds the letter. Anna is tall.",
            "errors": [
                {"span": "the letter", "error_type": "RefE", "votes": 2},
                {
                    "span": "Anna is tall",
                    "error_type": "InconE",
                    "votes": 1,
                    "antecedants": ["Anna is short"],
                },
            ],
        },
        "0": {
            "text": "Anna is short.",
            "errors": [{"span": "Anna", "error_type": "CharE", "votes": 3}],
        },
    }
}


def test_snac_without_gold_ignores_errors(app, study, tmp_path):
    path = write(tmp_path, "snac.json", SNAC_DOC)
    (document,) = parse_documents(path)
    assert document.segments == ["Anna is short.", "He finds the letter. Anna is tall."]
    assert document.gold == []
    import_file(app, path)
    assert counts(app) == (1, 2, 0)


def test_snac_gold_spans_are_stored_with_offsets(app, study, tmp_path):
    path = write(tmp_path, "snac.json", SNAC_DOC)
    (document,) = parse_documents(path, "snac", gold=True)
    assert [(g.segment, g.text, g.category, g.votes, g.antecedents) for g in document.gold] == [
        (0, "Anna", "CharE", 3, []),
        (1, "the letter", "RefE", 2, []),
        (1, "Anna is tall", "InconE", 1, ["Anna is short"]),
    ]
    result = import_file(app, path, "snac", gold=True)
    assert (result.gold_errors, result.unlocated_gold) == (3, 0)
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        rows = session.scalars(select(GoldError).order_by(GoldError.id)).all()
        texts = stored(app)["s1"]
        assert [(r.segment, texts[r.segment][r.start : r.end], r.votes) for r in rows] == [
            (0, "Anna", 3),
            (1, "the letter", 2),
            (1, "Anna is tall", 1),
        ]
        assert session.scalar(select(Document.is_gold)) is True


def test_real_snac_dev_gold_import(app, study):
    path = shared_file("snac", "dev.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    errors = sum(len(seg["errors"]) for doc in raw.values() for seg in doc.values())
    blank = [
        (doc, index, e["error_type"])
        for doc, body in raw.items()
        for index, seg in body.items()
        for e in seg["errors"]
        if not e["span"].strip()
    ]
    # The release has one error with an empty span: kept, but it has no place in the text.
    assert blank == [("book_175b36", "27", "SceneE")]
    result = import_file(app, path, "snac", gold=True)
    assert result.documents == len(raw)
    assert result.gold_errors == errors
    assert result.unlocated_gold == len(blank)
    assert count_rows(app, GoldError) == errors
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        texts = {
            (d.external_id, s.index): s.text
            for d in session.scalars(select(Document))
            for s in d.segments
        }
        rows = session.execute(select(GoldError, Document.external_id).join(Document)).all()
        for gold, doc in rows:
            if gold.start is None:
                assert (doc, str(gold.segment), gold.category) in blank
                continue
            located = texts[(doc, gold.segment)][gold.start : gold.end]
            assert located.lower() == gold.text.lower()


def test_sentences_per_segment(app, study, tmp_path):
    path = write(
        tmp_path,
        "p.json",
        {
            "d": [
                "Mr. Smith arrives. He meets Dr. Jones! They talk.",
                "Was it late? J. R. Tolkien laughs. The end.",
            ]
        },
    )
    (document,) = parse_documents(path, sentences_per_segment=2)
    assert document.segments == [
        "Mr. Smith arrives. He meets Dr. Jones!",
        "They talk. Was it late?",
        "J. R. Tolkien laughs. The end.",
    ]
    (single,) = parse_documents(path, sentences_per_segment=1)
    assert len(single.segments) == 6
    import_file(app, path, sentences_per_segment=4)
    assert stored(app)["d"] == [
        "Mr. Smith arrives. He meets Dr. Jones! They talk. Was it late?",
        "J. R. Tolkien laughs. The end.",
    ]


# --- malformed files: a clear message, nothing stored ----------------------------------

BAD_FILES = {
    "bad JSON names its line": (
        "bad.json",
        '{\n  "d": [\n    "x",\n  ]\n}\n',
        {},
        ["bad.json:4:", "invalid JSON"],
    ),
    "bad JSONL names its line": (
        "bad.jsonl",
        '{"id": "a", "segments": ["x"]}\n{"id": "b", "segments": ["y"]}\n{"id": "c",\n',
        {},
        ["bad.jsonl:3:", "invalid JSON"],
    ),
    "JSONL line not an object": (
        "bad.jsonl",
        '{"id": "a", "segments": ["x"]}\n[1]\n',
        {},
        ["bad.jsonl:2:", "object"],
    ),
    "JSONL without segments": ("bad.jsonl", '{"id": "a"}\n', {}, ["'a'", "segments"]),
    "JSONL meta not an object": (
        "bad.jsonl",
        '{"id": "a", "segments": ["x"], "meta": 3}\n',
        {},
        ["'a'", "meta"],
    ),
    "JSONL missing id": ("bad.jsonl", '{"segments": ["x"]}\n', {}, ["document id"]),
    "empty segment": (
        "p.json",
        {"d": ["fine", "   "]},
        {"fmt": "paragraphs"},
        ["document 'd'", "segment 1", "empty"],
    ),
    "non-string segment": (
        "p.json",
        {"d": ["fine", 3]},
        {"fmt": "paragraphs"},
        ["document 'd'", "segment 1", "must be text"],
    ),
    "no segments": ("p.json", {"d": []}, {"fmt": "paragraphs"}, ["'d'", "segments"]),
    "falte without sentences": (
        "f.json",
        {"d": {"text": ["x"]}},
        {"fmt": "falte"},
        ["'d'", "sentences"],
    ),
    "falte segment only markup": (
        "f.json",
        {"d": {"sentences": ["ok", "<b> </b>"]}},
        {"fmt": "falte"},
        ["'d'", "segment 1", "empty"],
    ),
    "snac key gap": (
        "s.json",
        {"d": {"0": {"text": "a"}, "2": {"text": "b"}}},
        {"fmt": "snac"},
        ["'d'", "without gaps"],
    ),
    "snac non-integer key": (
        "s.json",
        {"d": {"0": {"text": "a"}, "x": {"text": "b"}}},
        {"fmt": "snac"},
        ["'d'", "integers"],
    ),
    "snac segment without text": (
        "s.json",
        {"d": {"0": {"errors": []}}},
        {"fmt": "snac"},
        ["'d'", "segment 0", "must be text"],
    ),
    "snac gold error without span": (
        "s.json",
        {"d": {"0": {"text": "a", "errors": [{"error_type": "CharE"}]}}},
        {"fmt": "snac", "gold": True},
        ["'d'", "segment 0", "span"],
    ),
    "snac gold bad votes": (
        "s.json",
        {"d": {"0": {"text": "a", "errors": [{"span": "a", "error_type": "CharE", "votes": 0}]}}},
        {"fmt": "snac", "gold": True},
        ["'d'", "votes"],
    ),
    "gold on a non-snac file": ("p.json", {"d": ["x"]}, {"gold": True}, ["--gold", "snac"]),
    "gold with re-segmenting": (
        "s.json",
        {"d": {"0": {"text": "a"}}},
        {"gold": True, "sentences_per_segment": 2},
        ["--gold", "--sentences-per-segment"],
    ),
    "no documents": ("p.json", {}, {"fmt": "paragraphs"}, ["no documents"]),
    "undetectable format": ("x.json", [1, 2], {}, ["cannot tell the format"]),
    "unknown format": ("p.json", {"d": ["x"]}, {"fmt": "csv"}, ["unknown format"]),
    "not UTF-8": ("p.json", None, {}, ["UTF-8"]),
    "missing file": ("nope.json", "", {}, ["nope.json", "cannot read"]),
    "duplicate document ids (JSONL)": (
        "d.jsonl",
        '{"id": "a", "segments": ["x"]}\n{"id": "a", "segments": ["y"]}\n',
        {},
        ["'a'", "twice"],
    ),
    "duplicate document ids (JSON object)": (
        "d.json",
        '{"a": ["x"], "b": ["y"], "a": ["z"]}',
        {},
        ["'a'", "appears twice"],
    ),
    "duplicate segment keys (snac)": (
        "s.json",
        '{"d": {"0": {"text": "a"}, "1": {"text": "b"}, "1": {"text": "c"}}}',
        {"fmt": "snac"},
        ["'1'", "twice"],
    ),
    "NUL in a segment": ("p.json", '{"a": ["x\\u0000y"]}', {}, ["'a'", "segment 0", "NUL"]),
    "unpaired surrogate in a segment": (
        "p.json",
        '{"a": ["x\\ud800y"]}',
        {},
        ["'a'", "segment 0", "surrogate"],
    ),
    "NUL in a document id": ("p.json", '{"a\\u0000b": ["x"]}', {}, ["document id", "NUL"]),
    "id too long": ("p.json", {"d" * 301: ["x"]}, {}, ["longer than"]),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_malformed_file_is_refused_and_nothing_stored(app, study, tmp_path, case):
    name, content, options, fragments = BAD_FILES[case]
    if content is None:
        path = tmp_path / name
        path.write_bytes(b'{"d": ["caf\xe9"]}')
    elif name == "nope.json":
        path = tmp_path / name
    else:
        path = write(tmp_path, name, content)
    before = counts(app)
    with pytest.raises(InvalidInput) as caught:
        import_file(
            app,
            path,
            options.get("fmt", "auto"),
            gold=options.get("gold", False),
            sentences_per_segment=options.get("sentences_per_segment"),
        )
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message, message
    assert counts(app) == before


def test_third_document_bad_stores_none(app, study, tmp_path):
    path = write(tmp_path, "p.json", {"a": ["One."], "b": ["Two."], "c": ["Three.", ""]})
    with pytest.raises(InvalidInput, match="document 'c': segment 1: is empty"):
        import_file(app, path)
    assert counts(app) == (0, 0, 0)
    jsonl = write(
        tmp_path,
        "p.jsonl",
        '{"id": "a", "segments": ["x"]}\n'
        '{"id": "b", "segments": ["y"]}\n{"id": "c", "segments": [5]}\n',
    )
    with pytest.raises(InvalidInput, match="document 'c': segment 0"):
        import_file(app, jsonl)
    assert counts(app) == (0, 0, 0)


def test_document_already_in_the_study_stores_none(app, study, tmp_path):
    import_file(app, write(tmp_path, "first.json", {"c": ["Old."]}))
    before = counts(app)
    path = write(tmp_path, "second.json", {"a": ["One."], "b": ["Two."], "c": ["Three."]})
    with pytest.raises(InvalidInput, match="already has document 'c'"):
        import_file(app, path)
    assert counts(app) == before
    assert stored(app) == {"c": ["Old."]}


def test_gold_with_unknown_error_type_stores_none(app, study, tmp_path):
    path = write(
        tmp_path,
        "s.json",
        {
            "a": {"0": {"text": "Fine.", "errors": []}},
            "b": {"0": {"text": "Bad.", "errors": [{"span": "Bad", "error_type": "Typo"}]}},
        },
    )
    with pytest.raises(InvalidInput, match="'Typo' is not a category"):
        import_file(app, path, gold=True)
    assert counts(app) == (0, 0, 0)
