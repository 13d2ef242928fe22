"""One assignment policy for every way in, as a property: whatever mix of study-link
arrivals, keyless API opens (with and without a named document), heartbeats and submits
hypothesis plays, no answer ever hands out a token that existed before, no document has more
than N taken slots, no worker ID gets a document twice or holds two active assignments."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Assignment, Study
from tests.conftest import make_study

DOCS = [(f"doc-{i}", [f"Document {i}.", "Its second segment."]) for i in range(3)]
N = 2
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["link", "api", "api-document", "heartbeat", "submit"]),
        st.integers(0, 4),  # which worker
        st.integers(0, 2),  # which document, for api-document
    ),
    max_size=30,
)
studies = itertools.count()


def check_invariants(app, slug: str) -> None:
    with app.app_context(), session_scope() as session:
        study_id = session.scalar(select(Study.id).where(Study.slug == slug))
        taken = session.execute(
            select(Assignment.document_id, func.count())
            .where(Assignment.study_id == study_id, Assignment.status.in_(("active", "submitted")))
            .group_by(Assignment.document_id)
        ).all()
        assert all(count <= N for _, count in taken), taken
        active = session.execute(
            select(Assignment.worker_id, func.count())
            .where(Assignment.study_id == study_id, Assignment.status == "active")
            .group_by(Assignment.worker_id)
        ).all()
        assert all(count == 1 for _, count in active), active


def play(client, slug: str, action: str, worker: int, document: int, latest: dict[int, str]):
    """One step of the policy's property through ``client``; the token it handed out."""
    worker_id = f"w{worker}"
    if action == "link":
        answer = client.get(f"/s/{slug}", query_string={"worker_id": worker_id})
        assert answer.status_code in (302, 409), answer.status_code
        location = answer.headers.get("Location", "")
        return location.split("/a/")[1].split("/")[0] if "/a/" in location else None
    if action in ("api", "api-document"):
        body = {"study": slug, "worker_id": worker_id}
        if action == "api-document":
            body["document"] = f"doc-{document}"
        answer = client.post("/api/assignments", json=body)
        assert answer.status_code in (201, 409), answer.get_json()
        return (answer.get_json() or {}).get("token")
    if worker in latest:
        path = f"/api/assignments/{latest[worker]}/{action}"
        answer = client.post(path, json={}) if action == "heartbeat" else client.post(path)
        assert answer.status_code in (200, 204, 409), answer.status_code
    return None


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_every_way_in_keeps_the_policy_and_never_returns_an_existing_token(app, steps):
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    slug = f"policy-{next(studies)}"
    make_study(app, slug=slug, documents=DOCS, annotators_per_doc=N)
    client = app.test_client()
    seen: set[str] = set()
    latest: dict[int, str] = {}
    for action, worker, document in steps:
        token = play(client, slug, action, worker, document, latest)
        if token is not None:
            assert token not in seen, "an existing token was handed out again"
            seen.add(token)
            latest[worker] = token
        check_invariants(app, slug)
