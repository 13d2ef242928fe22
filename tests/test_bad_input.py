"""Every bad-input class of CONTRACT.md: a 4xx, a JSON {"error": ...} saying what is wrong,
and nothing changed (every table row and the assignment's GET payload identical)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from app import create_app
from app.models import Annotation, Assignment
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import (
    DOCUMENTS,
    SEGMENTS,
    annotation_body,
    api_add,
    count_rows,
    db_snapshot,
    open_token,
    span,
)


@pytest.fixture(scope="module", params=BACKENDS)
def world_app(request, tmp_path_factory):
    """One database per backend for the module: every test here proves it changed nothing."""
    url = make_database_url(request.param, request, tmp_path_factory.mktemp("bad-input"))
    application = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    yield application
    application.extensions["db_engine"].dispose()


@dataclass
class World:
    app: Any
    client: Any
    token: str  # active, with one annotation
    existing: dict  # that annotation
    other_token: str  # another worker's active assignment, with one annotation
    other_annotation: dict
    submitted_token: str  # a submitted assignment with one annotation
    submitted_annotation: dict

    def state(self) -> tuple:
        """Every row and the three assignments' payloads. The read of a live assignment stamps
        its worker's activity (the page's load keeps the slot), so the stamp's two columns are
        left out here; tests/test_hot_path.py proves a refusal leaves them alone."""
        payloads = tuple(
            self.client.get(f"/api/assignments/{t}").get_json()
            for t in (self.token, self.other_token, self.submitted_token)
        )
        return without_activity(db_snapshot(self.app)), payloads


ACTIVITY = [
    i
    for i, column in enumerate(Assignment.__table__.columns)
    if column.name in ("last_seen_at", "engaged_at")
]


def without_activity(snapshot: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    assert len(ACTIVITY) == 2
    rows = snapshot[Assignment.__table__.name]
    snapshot[Assignment.__table__.name] = [
        tuple(value for i, value in enumerate(row) if i not in ACTIVITY) for row in rows
    ]
    return snapshot


@pytest.fixture(scope="module")
def world(world_app) -> World:
    app, client = world_app, world_app.test_client()
    make_study(app, documents=DOCUMENTS)
    token, other, done = (open_token(client, w) for w in ("w1", "w2", "w3"))
    existing = api_add(client, token, annotation_body(0, "Zoë", "CharE", client_id="c-1"))
    other_annotation = api_add(client, other, annotation_body(1, "café", "RefE"))
    submitted_annotation = api_add(client, done, annotation_body(0, "Paris", "RefE"))
    assert client.post(f"/api/assignments/{done}/submit").status_code == 200
    return World(
        app,
        client,
        token,
        existing.get_json(),
        other,
        other_annotation.get_json(),
        done,
        submitted_annotation.get_json(),
    )


def assert_refused(world: World, send: Callable[[], Any], status: int, *fragments: str) -> str:
    """Send a request; check its status and message, and that nothing changed."""
    before = world.state()
    response = send()
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"}
    message = body["error"]
    assert isinstance(message, str) and message.strip()
    for fragment in fragments:
        assert fragment.lower() in message.lower(), message
    assert world.state() == before
    return message


def good(**changes: Any) -> dict[str, Any]:
    """A valid annotation body (a CharE on "Pedro" in segment 2), with ``changes``."""
    body = annotation_body(2, "Pedro", "CharE")
    body.update(changes)
    return body


def paired(**changes: Any) -> dict[str, Any]:
    """A valid paired body (InconE in segment 1 against segment 0), with ``changes``."""
    body = annotation_body(1, "Anna's brother", "InconE", paired=span(0, "Anna is an only child"))
    body.update(changes)
    return body


def post_annotation(world: World, body: Any, token: str | None = None):
    return world.client.post(f"/api/assignments/{token or world.token}/annotations", json=body)


# Bodies refused with 400, each with the words the message must contain.
ANNOTATION_CASES = {
    "unknown category": (good(category="Nonsense"), ["unknown category", "Nonsense"]),
    "category missing": (good(category=None), ["unknown category"]),
    "singleton with a paired span": (good(paired=span(0, "Zoë")), ["CharE", "singleton", "paired"]),
    "paired category without a paired span": (paired(paired=None), ["InconE", "paired"]),
    "paired span in a later segment": (
        annotation_body(1, "Anna's brother", "InconE", paired=span(2, "Anna is an only child")),
        ["paired span", "before"],
    ),
    "paired span later in the same segment": (
        annotation_body(2, "At the party", "RepE", paired=span(2, "Anna is an only child")),
        ["paired span", "before"],
    ),
    "paired span not matching its text": (
        paired(paired={**span(0, "Anna is an only child"), "text": "Anna is a child"}),
        ["paired.", "does not match"],
    ),
    "paired span not an object": (paired(paired="Anna"), ["paired", "object"]),
    "negative start": (good(start=-1), ["out of range"]),
    "end beyond the segment": (
        good(
            start=SEGMENTS[2].index("aside."),
            end=len(SEGMENTS[2]) + 1,
            text=SEGMENTS[2][SEGMENTS[2].index("aside.") :],
        ),
        ["out of range"],
    ),
    "start equal to end": (good(end=good()["start"], text=""), ["span is empty"]),
    "start after end": (good(start=good()["end"], end=good()["start"]), ["out of range"]),
    "segment out of range": ({**good(), "segment": len(SEGMENTS)}, ["segment", "out of range"]),
    "negative segment": ({**good(), "segment": -1}, ["segment", "out of range"]),
    "text not matching offsets": (good(text="Hero"), ["does not match", "Pedro"]),
    "text off by one (UTF-16 offsets)": (
        # The browser forgot to convert: in UTF-16 the emoji counts twice.
        {
            **span(1, "and talk"),
            "start": span(1, "and talk")["start"] + 1,
            "end": span(1, "and talk")["end"] + 1,
            "category": "GramE",
            "paired": None,
        },
        ["does not match"],
    ),
    "whitespace-only span": (
        {"segment": 0, "start": 4, "end": 5, "text": " ", "category": "GramE"},
        ["whitespace"],
    ),
    "bool as offset": (good(start=True), ["start", "integer"]),
    "string offsets": (good(start="26", end="31"), ["start", "integer"]),
    "float offsets": (good(end=31.0), ["end", "integer"]),
    "string segment": (good(segment="2"), ["segment", "integer"]),
    "text not a string": (good(text=5), ["text"]),
    "unknown field": (good(colour="red"), ["unknown field", "colour"]),
    "comment too long": (good(comment="x" * 5_001), ["comment", "longer"]),
    "comment not text": (good(comment=["x"]), ["comment", "text"]),
    "client_id not text": (good(client_id=12), ["client_id"]),
    "client_id too long": (good(client_id="c" * 101), ["client_id"]),
}


@pytest.mark.parametrize("case", list(ANNOTATION_CASES))
def test_bad_annotation_is_refused(world, case):
    body, fragments = ANNOTATION_CASES[case]
    assert_refused(world, lambda: post_annotation(world, body), 400, *fragments)


def test_the_valid_bodies_behind_the_cases_are_accepted(world):
    """The cases differ from an accepted body only in what they break."""
    for body in (good(), paired()):
        response = post_annotation(world, body)
        assert response.status_code == 201, response.get_json()


def test_same_client_id_with_different_content_is_409(world):
    body = annotation_body(0, "Zoë", "RefE", client_id="c-1")  # c-1 was a CharE
    assert_refused(world, lambda: post_annotation(world, body), 409, "client_id")
    same = annotation_body(0, "Zoë", "CharE", client_id="c-1")
    assert post_annotation(world, same).get_json() == world.existing


def test_adding_to_a_submitted_assignment_is_409(world):
    assert_refused(
        world, lambda: post_annotation(world, good(), world.submitted_token), 409, "submitted"
    )


def test_removing_from_a_submitted_assignment_is_409(world):
    url = f"/api/assignments/{world.submitted_token}/annotations/{world.submitted_annotation['id']}"
    assert_refused(world, lambda: world.client.delete(url), 409, "submitted")


def test_oversized_body_is_413(world):
    limit = world.app.config["MAX_CONTENT_LENGTH"]
    body = good(comment="x" * (limit + 1))
    assert_refused(world, lambda: post_annotation(world, body), 413, "larger", str(limit))
    assert_refused(
        world,
        lambda: world.client.post(
            "/api/assignments",
            json={"study": "demo", "document": "doc-2", "worker_id": "w" * (limit + 1)},
        ),
        413,
        "larger",
    )


def test_malformed_json_is_400(world):
    assert_refused(
        world,
        lambda: world.client.post(
            f"/api/assignments/{world.token}/annotations",
            data='{"segment": 2, "start": ',
            content_type="application/json",
        ),
        400,
        "JSON",
    )


def test_body_without_json_content_type_is_400(world):
    assert_refused(
        world,
        lambda: world.client.post(
            f"/api/assignments/{world.token}/annotations",
            data="segment=2&start=3",
            content_type="text/plain",
        ),
        400,
        "JSON",
    )


@pytest.mark.parametrize("raw", ["[{}]", '"a string"', "7", "null", "true"])
def test_non_object_body_is_400(world, raw):
    assert_refused(
        world,
        lambda: world.client.post(
            f"/api/assignments/{world.token}/annotations", data=raw, content_type="application/json"
        ),
        400,
    )


def test_unknown_token_is_404(world):
    assert_refused(world, lambda: post_annotation(world, good(), "no-such-token"), 404, "token")
    assert_refused(
        world,
        lambda: world.client.delete(
            f"/api/assignments/no-such-token/annotations/{world.existing['id']}"
        ),
        404,
        "token",
    )
    assert_refused(
        world, lambda: world.client.post("/api/assignments/no-such-token/submit"), 404, "token"
    )
    assert_refused(
        world,
        lambda: world.client.post("/api/assignments/no-such-token/position", json={"segment": 1}),
        404,
        "token",
    )


def test_annotation_of_another_assignment_cannot_be_removed(world):
    """Token A cannot delete B's annotation (nor see it)."""
    url = f"/api/assignments/{world.token}/annotations/{world.other_annotation['id']}"
    assert_refused(world, lambda: world.client.delete(url), 404, "no such annotation")
    others = world.client.get(f"/api/assignments/{world.other_token}").get_json()
    assert [a["id"] for a in others["annotations"]] == [world.other_annotation["id"]]
    mine = world.client.get(f"/api/assignments/{world.token}").get_json()
    assert world.other_annotation["id"] not in [a["id"] for a in mine["annotations"]]


def test_unknown_annotation_id_is_404(world):
    assert_refused(
        world,
        lambda: world.client.delete(f"/api/assignments/{world.token}/annotations/987654"),
        404,
        "no such annotation",
    )


@pytest.mark.parametrize(
    "body, fragments",
    [
        ({"segment": "1"}, ["segment", "integer"]),
        ({"segment": True}, ["segment", "integer"]),
        ({"segment": 99}, ["out of range"]),
        ({"segment": -1}, ["out of range"]),
        ({}, ["segment"]),
        ([1], ["object"]),
    ],
    ids=["string", "bool", "too-big", "negative", "missing", "list"],
)
def test_bad_position_is_400(world, body, fragments):
    assert_refused(
        world,
        lambda: world.client.post(f"/api/assignments/{world.token}/position", json=body),
        400,
        *fragments,
    )


@pytest.mark.parametrize(
    "body, status, fragments",
    [
        ({"study": "demo", "document": "doc-1", "worker_id": ""}, 400, ["worker_id"]),
        ({"study": "demo", "document": "doc-1", "worker_id": 7}, 400, ["worker_id"]),
        ({"study": "demo", "document": "doc-1", "worker_id": "w" * 201}, 400, ["worker_id"]),
        ({"study": "demo", "document": True, "worker_id": "w9"}, 400, ["document"]),
        ({"study": 1, "document": "doc-1", "worker_id": "w9"}, 400, ["study"]),
        ({"study": "nope", "document": "doc-1", "worker_id": "w9"}, 404, ["nope"]),
        ({"study": "demo", "document": "doc-9", "worker_id": "w9"}, 404, ["doc-9"]),
        (["demo"], 400, ["object"]),
    ],
    ids=[
        "empty-worker",
        "int-worker",
        "long-worker",
        "bool-document",
        "int-study",
        "unknown-study",
        "unknown-document",
        "list",
    ],
)
def test_bad_open_assignment_is_refused(world, body, status, fragments):
    assert_refused(
        world, lambda: world.client.post("/api/assignments", json=body), status, *fragments
    )


def test_refusals_leave_no_half_written_rows(world):
    """A burst of bad requests then a good one: exactly one new annotation appears."""
    before = count_rows(world.app, Annotation)
    for body, _ in ANNOTATION_CASES.values():
        assert post_annotation(world, body).status_code == 400
    # (a category no other test of this module adds on "Pedro": an exact repeat is a 409)
    assert post_annotation(world, good(category="CorefE")).status_code == 201
    assert count_rows(world.app, Annotation) == before + 1


# Text no database can store, and numbers beyond an INTEGER: refused, never a 500, and the
# same answer on SQLite and Postgres.
@pytest.mark.parametrize(
    "body",
    [
        good(comment="a\x00b"),
        good(client_id="c\x00"),
        good(comment="a\ud800b"),
        {**good(), "suggestion_id": 10**30},
        {**good(), "suggestion_id": -1},
        {**good(), "nested": {"x\x00": 1}},
    ],
    ids=[
        "nul-comment",
        "nul-client-id",
        "surrogate-comment",
        "huge-suggestion-id",
        "negative-suggestion-id",
        "nul-key",
    ],
)
def test_unstorable_annotation_is_400(world, body):
    assert_refused(world, lambda: post_annotation(world, body), 400)


@pytest.mark.parametrize("worker", ["w\x00", "w\ud800"], ids=["nul", "surrogate"])
def test_unstorable_worker_id_is_400(world, worker):
    assert_refused(
        world,
        lambda: world.client.post(
            "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": worker}
        ),
        400,
    )


@pytest.mark.parametrize(
    "body",
    [
        {"study": "demo\x00", "document": "doc-1", "worker_id": "w9"},
        {"study": "demo", "document": "doc\x00", "worker_id": "w9"},
    ],
    ids=["study", "document"],
)
def test_unstorable_names_are_refused(world, body):
    assert_refused(world, lambda: world.client.post("/api/assignments", json=body), 400)


def test_odd_tokens_and_ids_are_404(world):
    assert_refused(world, lambda: world.client.get("/api/assignments/tok%00en"), 404)
    assert_refused(world, lambda: world.client.get(f"/api/assignments/{world.token}%20"), 404)
    huge = 10**25
    assert_refused(
        world,
        lambda: world.client.delete(f"/api/assignments/{world.token}/annotations/{huge}"),
        404,
        "no such annotation",
    )
    assert_refused(
        world,
        lambda: world.client.post(
            f"/api/assignments/{world.token}/suggestions/{huge}/events", json={"event": "shown"}
        ),
        404,
    )


def test_deeply_nested_json_is_400(world):
    for depth in (50, 20_000):
        assert_refused(
            world,
            lambda depth=depth: world.client.post(
                f"/api/assignments/{world.token}/annotations",
                data="[" * depth + "]" * depth,
                content_type="application/json",
            ),
            400,
        )


def test_wrong_method_and_unknown_route_answer_json(world):
    assert_refused(world, lambda: world.client.put(f"/api/assignments/{world.token}", json={}), 405)
    assert_refused(world, lambda: world.client.delete(f"/api/assignments/{world.token}"), 405)
    assert_refused(world, lambda: world.client.get("/api/no-such-endpoint"), 404)
    assert_refused(
        world, lambda: world.client.delete(f"/api/assignments/{world.token}/annotations/abc"), 404
    )
