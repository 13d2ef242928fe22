"""Annotation attributes and multi-label marks through the taxonomy checks and the worker
API (the one add, remove and edit: app/annotation/add.py, remove.py, edit.py): stored,
validated with a clear 400, one mark as one row per category, each under the add's guards,
removed together, folded in the page's payload."""

from __future__ import annotations

import pytest

from app.documents.taxonomy import TaxonomyError, parse_taxonomy
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import api_add, db_snapshot, open_token

BASE = """name: T
multi_label: true
categories:
  - id: omit
    label: Omission
    definition: d
    attributes:
      - id: severity
        kind: choice
        values: [minor, major, critical]
        required: true
      - {id: confidence, kind: scale, min: 1, max: 5}
  - id: lang
    label: Language
    definition: d
  - id: link
    label: Linked
    kind: relation
    definition: d
"""
TEXTS = ["Ann met Bo. Bo left.", "Cy won. The end."]


@pytest.mark.parametrize(
    "change, where",
    [
        (
            "values: [minor, major, critical]",
            "values: []",
        ),
        ("kind: choice", "kind: colour"),
        (
            "{id: confidence, kind: scale, min: 1, max: 5}",
            "{id: confidence, kind: scale, min: 5, max: 1}",
        ),
        (
            "{id: confidence, kind: scale, min: 1, max: 5}",
            "{id: severity, kind: scale, min: 1, max: 5}",
        ),
        ("required: true", "required: yes please"),
        ("multi_label: true", "multi_label: 1"),
        (
            "{id: confidence, kind: scale, min: 1, max: 5}",
            "{id: confidence, kind: scale, min: 1, max: 5, colour: red}",
        ),
    ],
)
def test_bad_attribute_declarations_name_file_line_and_field(change, where):
    text = BASE.replace(change, where)
    assert text != BASE
    with pytest.raises(TaxonomyError) as caught:
        parse_taxonomy(text, "t.yaml")
    assert str(caught.value).startswith("t.yaml:")
    assert caught.value.line > 1 and caught.value.field != "(file)"


def test_declarations_are_kept_only_where_given():
    snapshot = parse_taxonomy(BASE, "t.yaml")
    omit, lang, link = snapshot["categories"]
    assert snapshot["multi_label"] is True
    assert omit["attributes"][0] == {
        "id": "severity",
        "label": "severity",
        "kind": "choice",
        "required": True,
        "values": ["minor", "major", "critical"],
    }
    assert "attributes" not in lang and link["kind"] == "relation"
    plain = parse_taxonomy(BASE.replace("multi_label: true\n", ""), "t.yaml")
    assert "multi_label" not in plain


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def token(app, client, tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(BASE, encoding="utf-8")
    make_study(app, taxonomy=str(path), documents=[("doc-1", TEXTS)], suggestions="off")
    return open_token(client, "w1")


def body(**more):
    return {"segment": 0, "start": 12, "end": 20, "text": "Bo left.", **more}


@pytest.mark.parametrize(
    "given, message",
    [
        ({"category": "omit"}, "attribute 'severity' is required for 'omit'"),
        ({"category": "omit", "attributes": {"severity": "huge"}}, "'huge' is not one of"),
        (
            {"category": "omit", "attributes": {"severity": "minor", "confidence": 9}},
            "outside 1..5",
        ),
        (
            {"category": "omit", "attributes": {"severity": "minor", "confidence": "4"}},
            "whole number",
        ),
        ({"category": "lang", "attributes": {"severity": "minor"}}, "not declared by lang"),
        ({"category": "omit", "attributes": ["minor"]}, "attributes must be an object"),
        ({"categories": ["lang", "lang"]}, "names a category twice"),
        ({"categories": []}, "categories must be a list"),
        ({"categories": ["lang", "nope"]}, "unknown category 'nope'"),
        ({"category": "omit", "categories": ["lang"]}, "category must be the first"),
    ],
)
def test_bad_marks_get_a_clear_400_and_change_nothing(app, client, token, given, message):
    before = db_snapshot(app)
    answer = api_add(client, token, body(**given))
    assert answer.status_code == 400, answer.get_json()
    assert message in answer.get_json()["error"]
    assert db_snapshot(app) == before


def test_a_multi_label_mark_with_attributes_is_stored_read_and_removed_as_one(app, client, token):
    mark = body(categories=["omit", "lang"], attributes={"severity": "major", "confidence": 2})
    answer = api_add(client, token, {**mark, "client_id": "m1"})
    assert answer.status_code == 201, answer.get_json()
    stored = answer.get_json()
    assert stored["categories"] == ["omit", "lang"] and stored["category"] == "omit"
    assert stored["attributes"] == {"severity": "major", "confidence": 2}
    again = api_add(client, token, {**mark, "client_id": "m1"})  # a retry: the same mark
    assert again.status_code == 200 and again.get_json() == stored
    # the duplicate guard covers each category of the mark
    duplicate = api_add(client, token, body(category="lang", client_id="m2"))
    assert duplicate.status_code == 409
    single = api_add(client, token, {**body(category="lang"), "start": 0, "end": 3, "text": "Ann"})
    assert single.status_code == 201 and "categories" not in single.get_json()
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert [a.get("categories", [a["category"]]) for a in payload["annotations"]] == [
        ["omit", "lang"],
        ["lang"],
    ]
    assert client.delete(f"/api/assignments/{token}/annotations/{stored['id']}").status_code == 204
    payload = client.get(f"/api/assignments/{token}").get_json()
    assert [a["text"] for a in payload["annotations"]] == ["Ann"]  # both rows went


def test_a_multi_label_mark_takes_the_one_path_and_its_guards(app, client, flask_saw, token):
    """The worker API stores a mark of two categories before Flask; a duplicate of either
    category refuses the whole mark (409 naming the live mark, nothing stored); a retry must
    repeat the categories; ``~`` ids are the mark's own; a remove naming any row takes the
    mark; an assignment no longer active takes nothing."""
    values = {"severity": "minor"}
    flask_saw.clear()
    mark = api_add(
        client, token, body(categories=["omit", "lang"], attributes=values, client_id="m")
    )
    assert mark.status_code == 201 and flask_saw == []
    first = mark.get_json()
    later = row_id(app, f"~{first['id']}.1")
    before = db_snapshot(app)
    for labels in (["link", "lang"], ["lang"], ["omit"]):  # the second, the only, the first
        given = {"attributes": values} if "omit" in labels else {}
        again = api_add(client, token, body(categories=labels, client_id="n", **given))
        assert again.status_code == 409, labels
        assert again.get_json()["existing_id"] == first["id"]  # the mark, not its later row
    changed = api_add(client, token, body(categories=["omit"], attributes=values, client_id="m"))
    assert changed.status_code == 409 and "different annotation" in changed.get_json()["error"]
    taken = api_add(client, token, body(category="lang", client_id=f"~{first['id'] + 9}.1"))
    assert taken.status_code == 400 and "must not start with ~" in taken.get_json()["error"]
    assert db_snapshot(app) == before
    assert client.delete(f"/api/assignments/{token}/annotations/{later}").status_code == 204
    assert live_rows(app) == []  # both rows went, by the later row's id
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    before = db_snapshot(app)
    late = api_add(client, token, body(categories=["omit", "lang"], attributes=values))
    assert late.status_code == 409 and "submitted" in late.get_json()["error"]
    assert db_snapshot(app) == before


def test_one_category_per_mark_unless_the_taxonomy_says_so(app, client, tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(BASE.replace("multi_label: true\n", ""), encoding="utf-8")
    make_study(app, taxonomy=str(path), documents=[("doc-1", TEXTS)], suggestions="off")
    token = open_token(client, "w1")
    answer = api_add(client, token, body(categories=["lang", "link"]))
    assert answer.status_code == 400 and "not multi_label" in answer.get_json()["error"]
    assert api_add(client, token, body(categories=["lang"])).status_code == 201


def test_a_relation_may_point_anywhere_and_may_be_left_out(app, client, token):
    after = {"segment": 1, "start": 0, "end": 7, "text": "Cy won."}
    same = {"segment": 0, "start": 12, "end": 20, "text": "Bo left."}
    overlapping = {"segment": 0, "start": 15, "end": 20, "text": "left."}
    for n, paired in enumerate((after, same, overlapping, None)):
        answer = api_add(client, token, body(category="link", paired=paired, client_id=f"r{n}"))
        assert answer.status_code == 201, answer.get_json()
    marks = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    shown = [m["paired"] and m["paired"]["text"] for m in marks]
    assert shown == ["Cy won.", "Bo left.", "left.", None]


def test_attributes_are_stored_as_values_and_answered_as_sent(app, client, flask_saw, token):
    from sqlalchemy import select

    from app.db import session_scope
    from app.models import Annotation

    mark = body(category="omit", attributes={"severity": "minor", "confidence": 3})
    flask_saw.clear()
    stored = api_add(client, token, {**mark, "client_id": "a1"})
    assert stored.status_code == 201 and flask_saw == []  # answered before Flask
    assert stored.get_json()["attributes"] == {"severity": "minor", "confidence": 3}
    again = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert again == [stored.get_json()]
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(Annotation.attributes)).all() == [
            {"severity": "minor", "confidence": 3}
        ]


def live_rows(app) -> list[tuple]:
    """(client_id, category, mark is the first row's id, attributes, comment) of live rows."""
    from sqlalchemy import select

    from app.db import session_scope
    from app.models import Annotation

    with app.app_context(), session_scope() as session:
        rows = session.scalars(
            select(Annotation).where(Annotation.removed_at.is_(None)).order_by(Annotation.id)
        ).all()
        first = rows[0].id if rows else None
        return [(r.client_id, r.category, r.mark == first, r.attributes, r.comment) for r in rows]


def row_id(app, client_id: str) -> int:
    from sqlalchemy import select

    from app.db import session_scope
    from app.models import Annotation

    with app.app_context(), session_scope() as session:
        return session.scalar(select(Annotation.id).where(Annotation.client_id == client_id))


def edit(client, token: str, annotation_id: int, given: dict):
    return client.post(f"/api/assignments/{token}/annotations/{annotation_id}/edit", json=given)


def test_an_edit_takes_a_multi_label_mark_as_one(app, client, token):
    values = {"severity": "major", "confidence": 2}
    mark = body(categories=["omit", "lang"], attributes=values, comment="c", client_id="m1")
    first = api_add(client, token, mark).get_json()
    # the comment alone: the whole mark comes back, both categories, its attributes
    answer = edit(client, token, first["id"], {"comment": "why?", "client_id": "e1"})
    assert answer.status_code == 201, answer.get_json()
    new = answer.get_json()
    assert (new["categories"], new["attributes"], new["comment"]) == (
        ["omit", "lang"],
        values,
        "why?",
    )
    assert live_rows(app) == [
        ("e1", "omit", False, values, "why?"),
        (f"~{new['id']}.1", "lang", True, values, "why?"),
    ]
    again = edit(client, token, first["id"], {"comment": "why?", "client_id": "e1"})
    assert again.status_code == 200 and again.get_json() == new  # a retry
    # categories whose declarations leave the mark's values undeclared: a 400, nothing changes
    before = db_snapshot(app)
    refused = edit(client, token, new["id"], {"categories": ["lang", "link"], "client_id": "e2"})
    assert refused.status_code == 400 and "not declared by" in refused.get_json()["error"]
    bad = edit(client, token, new["id"], {"attributes": {"severity": "huge"}, "client_id": "e2"})
    assert bad.status_code == 400 and "'huge' is not one of" in bad.get_json()["error"]
    same = edit(
        client, token, new["id"], {"categories": ["lang", "omit"], "client_id": "e2"}
    )  # the same categories in another order, the same values
    assert same.status_code == 400 and "changes nothing" in same.get_json()["error"]
    assert db_snapshot(app) == before
    # new categories and their values, as an add takes them
    given = {"categories": ["lang", "link"], "attributes": {}, "client_id": "e3"}
    moved = edit(client, token, new["id"], given).get_json()
    assert moved["categories"] == ["lang", "link"] and "attributes" not in moved
    assert [row[:3] for row in live_rows(app)] == [
        ("e3", "lang", False),
        (f"~{moved['id']}.1", "link", True),
    ]
    # an edit named by the mark's later row edits the mark: one category now
    later = row_id(app, f"~{moved['id']}.1")
    given = {"category": "omit", "attributes": {"severity": "critical"}, "client_id": "e4"}
    one = edit(client, token, later, given).get_json()
    assert one["category"] == "omit" and "categories" not in one
    assert live_rows(app) == [("e4", "omit", False, {"severity": "critical"}, "why?")]
    payload = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert [(a["id"], a.get("categories")) for a in payload] == [(one["id"], None)]
