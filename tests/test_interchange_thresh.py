"""Thresh's JSON in and out, on the files Thresh itself converted (SNaC, FRANK), on both
databases: every edit's category, offsets, text and votes survive import → export."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from app.documents.taxonomy import parse_taxonomy
from app.errors import InvalidInput
from app.formats import iter_export, parse_documents
from app.formats.thresh_typology import template_to_yaml
from app.models import Annotation, Assignment, Document, GoldError
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file
from tests.helpers import count_rows


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def thresh_study(app, name: str, slug: str | None = None) -> str:
    """A study whose taxonomy is made from Thresh's own template ``name``.yml."""
    from app.db import session_scope
    from app.documents.studies import create_study

    taxonomy = parse_taxonomy(template_to_yaml(shared_file("thresh", f"{name}.yml")))
    slug = slug or name
    with app.app_context(), session_scope() as session:
        create_study(session, slug, taxonomy=taxonomy, suggestions="off")
    return slug


def import_file(app, slug: str, path: Path, fmt: str = "thresh", **options) -> list:
    from app.db import session_scope
    from app.documents.studies import get_study, import_documents

    gold = options.pop("gold", False)
    documents = parse_documents(path, fmt, gold=gold, **options)
    with app.app_context(), session_scope() as session:
        import_documents(session, get_study(session, slug), documents, gold=gold)
    return documents


def export(app, slug: str, fmt: str = "thresh") -> str:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        return "".join(iter_export(session, get_study(session, slug), fmt))


def edit_votes(entries: list[dict]) -> Counter:
    """(entry, category, ranges, texts) → total votes over the file's edits."""
    votes: Counter = Counter()
    for n, entry in enumerate(entries):
        for edit in entry["edits"]:
            ranges = tuple(tuple(r) for r in edit.get("output_idx") or [])
            texts = tuple(entry["target"][s:e] for s, e in ranges)
            votes[(n, edit["category"], ranges, texts)] += edit.get("votes") or 1
    return votes


@pytest.mark.parametrize("per_segment", [None, 2])
def test_thresh_snac_round_trip_keeps_every_edit(app, per_segment):
    raw = json.loads(shared_file("thresh", "snac.json").read_text(encoding="utf-8"))
    slug = thresh_study(app, "snac")
    documents = import_file(
        app, slug, shared_file("thresh", "snac.json"), sentences_per_segment=per_segment
    )
    # One imported worker per vote: the edits are now submitted work.
    assert sum(len(d.work) for d in documents) == sum(e["votes"] for x in raw for e in x["edits"])
    with app.app_context():
        from app.db import session_scope

        with session_scope() as session:
            workers = set(session.scalars(select(Assignment.worker_id)))
            most = max(edit_votes(raw).values())  # repeated edits go to further workers
            assert workers == {f"import-{n}" for n in range(1, most + 1)}
            assert {a.status for a in session.scalars(select(Assignment))} == {"submitted"}
    out = json.loads(export(app, slug))
    assert [e["target"] for e in out] == [e["target"] for e in raw]
    assert [e["source"] for e in out] == [e["source"] for e in raw]
    assert edit_votes(out) == edit_votes(raw)
    for entry in out:
        for edit in entry["edits"]:
            assert edit["votes"] == len(edit["annotators"])


def test_thresh_frank_round_trip_keeps_context_and_sentence_level_edits(app):
    raw = json.loads(shared_file("thresh", "frank.json").read_text(encoding="utf-8"))
    slug = thresh_study(app, "frank")
    import_file(app, slug, shared_file("thresh", "frank.json"))
    out = json.loads(export(app, slug))
    assert len(out) == len(raw)
    for before, after in zip(raw, out, strict=True):
        assert (after["context"], after["source"], after["target"]) == (
            before["context"],
            before["source"],
            before["target"],
        )
        strip = [{k: v for k, v in e.items() if k != "id"} for e in before["edits"]]
        assert [{k: v for k, v in e.items() if k != "id"} for e in after["edits"]] == strip
    assert edit_votes(out) == edit_votes(raw)


def test_thresh_gold_import_stores_exact_offsets_and_votes(app):
    raw = json.loads(shared_file("thresh", "snac.json").read_text(encoding="utf-8"))
    slug = thresh_study(app, "snac")
    import_file(app, slug, shared_file("thresh", "snac.json"), gold=True)
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        assert count_rows(app, Assignment) == 0
        first = session.scalar(select(Document).order_by(Document.position))
        gold = session.scalars(select(GoldError).where(GoldError.document_id == first.id)).all()
        text = first.segments[0].text
        expected = Counter()
        for edit in raw[0]["edits"]:
            ((s, e),) = edit["output_idx"]
            expected[(s, e, edit["category"])] += edit["votes"]
        assert Counter({(g.start, g.end, g.category): g.votes for g in gold}) == expected
        assert all(text[g.start : g.end] == g.text for g in gold)


def test_thresh_composite_edit_becomes_a_paired_span_and_back(app, tmp_path):
    from app.db import session_scope
    from app.documents.studies import create_study

    with app.app_context(), session_scope() as session:
        create_study(session, "pairs", REPO / "taxonomies" / "snac.yaml", suggestions="off")
    target = "Anna is an only child.\n\nLater her brother Tom visits. Anna 🙂 has a brother."
    at = target.index("has a brother")
    later = [at, at + len("has a brother")]
    edit = {"category": "InconE", "output_idx": [later, [0, 22]], "annotators": ["ann"]}
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps([{"id": "d1", "source": "", "target": target, "edits": [edit]}]))
    import_file(app, "pairs", path)
    with app.app_context(), session_scope() as session:
        (mark,) = session.scalars(select(Annotation)).all()
        assert (mark.segment, mark.text, mark.paired_segment, mark.paired_text) == (
            1,
            "has a brother",
            0,
            "Anna is an only child.",
        )
        assert (mark.start, mark.paired_start, mark.paired_end) == (at - 24, 0, 22)
    (entry,) = json.loads(export(app, "pairs"))
    assert entry["target"] == target
    assert entry["edits"][0]["output_idx"] == [[0, 22], later]
    assert entry["edits"][0]["annotators"] == ["ann"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"category": "CharE", "output_idx": [[5, 500]]}, "outside the target"),
        ({"category": "CharE", "output_idx": [[0, 2], [3, 4], [5, 6]]}, "at most two"),
        ({"category": "CharE", "output_idx": [[0, 2]], "votes": 0}, 'bad "votes"'),
        ({"category": "CharE", "output_idx": "0-2"}, r"\[start, end\] pairs"),
        ({"output_idx": [[0, 2]]}, 'no "category"'),
    ],
)
def test_bad_thresh_edits_are_refused_with_a_message(tmp_path, edit, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"target": "Some text here. More text.", "edits": [edit]}]))
    with pytest.raises(InvalidInput, match=message):
        parse_documents(path, "thresh")


def test_an_edit_across_segments_is_refused_not_cut(tmp_path):
    path = tmp_path / "across.json"
    target = "First sentence here. Second one."
    path.write_text(
        json.dumps([{"target": target, "edits": [{"category": "GramE", "output_idx": [[6, 27]]}]}])
    )
    assert parse_documents(path, "thresh")[0].work[0].text == target[6:27]
    with pytest.raises(InvalidInput, match="crosses a segment boundary"):
        parse_documents(path, "thresh", sentences_per_segment=1)


def test_unknown_category_stores_nothing(app, tmp_path):
    from app.db import session_scope
    from app.documents.studies import get_study, import_documents

    slug = thresh_study(app, "frank")
    path = tmp_path / "x.json"
    path.write_text(
        json.dumps([{"target": "A text.", "edits": [{"category": "Nope", "output_idx": [[0, 1]]}]}])
    )
    documents = parse_documents(path, "thresh")
    with app.app_context():
        with pytest.raises(InvalidInput, match="'Nope' is not a category"), session_scope() as s:
            import_documents(s, get_study(s, slug), documents)
        assert count_rows(app, Document) == 0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"annotators": ["a\u0000b"]}, "worker id"),
        ({"annotators": ["x" * 201]}, "worker id"),
        ({"annotators": ["a"], "comment": "bad \u0000 comment"}, "comment"),
        ({"annotators": ["a"], "comment": "y" * 5001}, "comment"),
    ],
)
def test_unstorable_names_and_comments_are_refused_on_both_databases(app, tmp_path, edit, message):
    from app.db import session_scope
    from app.documents.studies import get_study, import_documents

    slug = thresh_study(app, "frank")
    path = tmp_path / "x.json"
    edit = {"category": "EntE", "output_idx": [[0, 1]], **edit}
    path.write_text(json.dumps([{"target": "A text.", "edits": [edit]}]))
    documents = parse_documents(path, "thresh")
    with app.app_context():
        with pytest.raises(InvalidInput, match=message), session_scope() as s:
            import_documents(s, get_study(s, slug), documents)
        assert count_rows(app, Document) == 0


def test_an_annotators_file_names_its_worker(tmp_path):
    path = tmp_path / "one.json"
    entry = {
        "annotator": "anna",
        "target": "A text.",
        "edits": [{"category": "EntE", "output_idx": [[0, 1]]}],
    }
    path.write_text(json.dumps([entry]))
    (document,) = parse_documents(path, "thresh")
    assert [s.worker_id for s in document.work] == ["anna"]
    assert document.meta["thresh"]["extra"] == {"annotator": "anna"}
