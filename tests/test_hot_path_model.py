"""Where a rule's statements differ by database, the two forms agree. The actions run one
function on either backend of the handle (app/annotation/handle.py), but some statements are
spelt per dialect (app/annotation/hot_sql.py: ``add_statements``, ``remove_statements``,
``submit_statements``): on Postgres an add's and a remove's lock and write go in one round
trip, the write repeating the claim's rule and stamping the activity; on SQLite the claim,
then the write, in one ``BEGIN IMMEDIATE`` transaction. A hypothesis state machine drives
random sequences (add, remove, duplicate, retry, a client_id reused, a refused body, position
with active time and suggestion events after time passed, a practice check, heartbeat,
submit, reject; the taxonomy is made ``multi_label``, so an add may be a mark of two
categories, one row each, whose second may duplicate a live mark and refuse the whole mark,
and a remove may name any row of a mark) through the worker API of two apps, one on SQLite
and one on Postgres, each step on an assignment of one practice document in each, and
asserts identical statuses, bodies (ids as ordinals) and stored rows after every step.
Events name the suggestion the worker is shown, another document's and one that does not
exist: only the first is ever stored. It also checks the time budget's promise after every
step: an assignment's stored active seconds never exceed the clock's time since it opened
plus one slack.

The clock is ``app.annotation.assignments.now``, set by the machine (both assignments see
the same moments, so their timestamps compare equal and the budget is deterministic).
Budget: ``MARGINALIA_MODEL_EXAMPLES`` sequences (default 40) of up to 20 steps.
"""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select

from app.annotation import assignments, timing
from app.annotation.admission import open_for_document
from app.annotation.reviews import act
from app.crowd.platforms import configure_study
from app.db import session_scope
from app.models import (
    Annotation,
    Assignment,
    Document,
    PracticeCheck,
    SegmentTime,
    Study,
    SuggestionEvent,
)
from tests.conftest import make_database_url, make_study
from tests.helpers import DOCUMENTS, SEGMENTS, annotation_body
from tests.test_worker_attacks import add_suggestions

EXAMPLES = int(os.environ.get("MARGINALIA_MODEL_EXAMPLES", "40"))
STEPS = 20
SPANS = [
    (0, "Anna", "CharE"),
    (0, "Zoë", "CharE"),
    (0, "Paris", "RefE"),
    (1, "brother", "RefE"),
    (1, "café", "CharE"),
    (2, "Pedro", "CharE"),
]
CLIENT_IDS = ["a", "b", "c"]
START = datetime(2030, 1, 1, tzinfo=UTC)
_workers = itertools.count()


pytestmark = pytest.mark.postgres
BACKEND_NAMES = ("sqlite", "postgres")


def _ordinal(ids: list[int], value):
    return ("#", ids.index(value)) if value in ids else ("unknown", value)


def _client_id(ids: list[int], client_id: str):
    """A multi-label mark's other rows are ``~<first id>.<n>``: the id as an ordinal."""
    if not client_id.startswith("~"):
        return client_id
    first, n = client_id[1:].split(".")
    return ("~", _ordinal(ids, int(first)), n)


def _utc(moment):
    """A stored time as Postgres gives it (SQLite gives it back without its zone)."""
    if not isinstance(moment, datetime):
        return moment
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Pair:
    """One assignment per database, fed the same requests."""

    def __init__(self, apps: dict) -> None:
        self.apps = apps
        self.clients = {name: app.test_client() for name, app in apps.items()}
        n = next(_workers)
        self.tokens, self.workers = {}, {}
        for name, app in apps.items():
            with app.app_context(), session_scope() as session:
                study = session.scalar(select(Study))
                document = session.scalar(select(Document).where(Document.external_id == "doc-1"))
                worker = f"worker-{n}"
                self.tokens[name] = open_for_document(session, study, document, worker)[0].token
                self.workers[name] = worker

    def rows(self, name: str) -> dict:
        with self.apps[name].app_context(), session_scope() as session:
            a = session.scalar(select(Assignment).where(Assignment.token == self.tokens[name]))
            annotations = session.scalars(
                select(Annotation).where(Annotation.assignment_id == a.id).order_by(Annotation.id)
            ).all()
            times = session.execute(
                select(SegmentTime.segment, SegmentTime.active_seconds, SegmentTime.updated_at)
                .where(SegmentTime.assignment_id == a.id)
                .order_by(SegmentTime.segment)
            ).all()
            checks = session.scalars(
                select(PracticeCheck.segment).where(PracticeCheck.assignment_id == a.id)
            ).all()
            events = session.execute(
                select(SuggestionEvent.suggestion_id, SuggestionEvent.event)
                .where(SuggestionEvent.assignment_id == a.id)
                .order_by(SuggestionEvent.suggestion_id, SuggestionEvent.event)
            ).all()
            ids = [x.id for x in annotations]
            return {
                "assignment": (
                    a.status,
                    a.current_segment,
                    _utc(a.last_seen_at),
                    _utc(a.engaged_at),
                ),
                "opened": _utc(a.created_at),
                "annotations": [
                    (
                        _client_id(ids, x.client_id),
                        _ordinal(ids, x.mark) if x.mark is not None else None,
                        x.segment,
                        x.start,
                        x.end,
                        x.text,
                        x.category,
                        x.comment,
                        _utc(x.created_at),
                        _utc(x.removed_at),
                    )
                    for x in annotations
                ],
                "ids": ids,
                "times": [(segment, seconds, _utc(at)) for segment, seconds, at in times],
                "checks": sorted(checks),
                "events": [tuple(e) for e in events],
            }

    def send(self, method: str, path, body=None) -> tuple:
        """The request on both assignments (``path``: text, or a function of the database's
        name giving it); both answers, with ids as ordinals."""
        answers = []
        for name in BACKEND_NAMES:
            tail = path(name) if callable(path) else path
            answer = self.clients[name].open(
                f"/api/assignments/{self.tokens[name]}{tail}", method=method, json=body
            )
            payload = answer.get_json(silent=True)
            if isinstance(payload, dict):
                ids = self.rows(name)["ids"]
                payload = {
                    key: _ordinal(ids, value) if key in ("id", "existing_id") else value
                    for key, value in payload.items()
                    if key not in ("completion_code", "redirect_url")
                }
            answers.append((answer.status_code, payload))
        return tuple(answers)


def study_app(kind: str, request, tmp_path):
    """An app on a fresh ``kind`` database with the machine's study: a practice document
    (a check freezes its segment), suggestions shown, a multi-label taxonomy."""
    from app import create_app

    folder = tmp_path / kind
    folder.mkdir()
    url = make_database_url(kind, request, folder)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    make_study(app, documents=DOCUMENTS, gold=True, annotators_per_doc=1000, suggestions="shown")
    with app.app_context(), session_scope() as session:
        configure_study(session.scalar(select(Study)), qualification_f1=0.5)
        doc_1 = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        doc_1.is_practice = True
        study = session.scalar(select(Study))
        study.taxonomy = {**study.taxonomy, "multi_label": True}  # before any request
    app.config["PRACTICE_RATE_LIMIT"] = "1000000 per hour"  # every check freezes, none a 429
    return app


def test_sqlite_and_postgres_agree_on_random_sequences(request, tmp_path, monkeypatch):
    apps = {kind: study_app(kind, request, tmp_path) for kind in BACKEND_NAMES}
    request.addfinalizer(lambda: [app.extensions["db_engine"].dispose() for app in apps.values()])
    hints = {kind: add_suggestions(app) for kind, app in apps.items()}
    # shown, another document's, none: by position, the same on both databases
    hint_ids = {
        kind: [found["doc-1"], found["doc-2"], found["doc-2"] + 1000]
        for kind, found in hints.items()
    }
    clock = {"now": START}
    monkeypatch.setattr(assignments, "now", lambda: clock["now"])

    class HotPath(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.pair = Pair(apps)
            self.last: dict | None = None
            self.steps = 0

        def agree(self, answers: tuple) -> None:
            self.steps += 1
            on_sqlite, on_postgres = answers
            assert on_sqlite == on_postgres, f"SQLite {on_sqlite} != Postgres {on_postgres}"
            assert on_sqlite[0] < 500, on_sqlite

        @rule(
            span=st.sampled_from(SPANS),
            client_id=st.sampled_from(CLIENT_IDS),
            comment=st.sampled_from(["", "again"]),
            how=st.sampled_from(["new", "new", "broken", "retry", "duplicate", "two", "two-after"]),
        )
        def add(self, span, client_id, comment, how) -> None:
            """A new mark, a refused body, the outbox's retry of the last body, the last body
            again under another client_id (a duplicate), or a mark of two categories (the
            span's first, or second after GramE)."""
            body = annotation_body(span[0], span[1], span[2], client_id=client_id, comment=comment)
            if how.startswith("two"):
                body.pop("category")
                pair = ["GramE", span[2]] if how == "two-after" else [span[2], "GramE"]
                body["categories"] = pair
            if how == "broken":
                body["text"] = body["text"].upper() + "?"
            elif self.last is not None and how == "retry":
                body = self.last
            elif self.last is not None and how == "duplicate":
                body = {**self.last, "client_id": client_id}
            self.last = body
            self.agree(self.pair.send("POST", "/annotations", body))

        @initialize(
            spans=st.lists(st.sampled_from(SPANS), min_size=1, max_size=2, unique=True),
            checked=st.one_of(st.none(), st.integers(0, 1)),
        )
        def marked(self, spans, checked) -> None:
            """A few marks to start from, and maybe one practice segment checked (frozen)."""
            for n, span in enumerate(spans):
                body = annotation_body(*span, client_id=f"first-{n}")
                self.agree(self.pair.send("POST", "/annotations", body))
            if checked is not None:
                answers = self.pair.send("POST", f"/practice/{checked}", {})
                self.agree(answers)
                assert answers[0][0] == 200  # a practice document: the segment is frozen

        @rule(which=st.integers(0, 3))
        def remove(self, which) -> None:
            """One of the assignment's marks (which: its ordinal), or an id it has none of."""

            def path(name: str) -> str:
                ids = self.pair.rows(name)["ids"]
                return f"/annotations/{ids[which % len(ids)] if which and ids else 99_999}"

            self.agree(self.pair.send("DELETE", path))

        @rule(
            wait=st.sampled_from([0.0, 0.2, 1.0, 3.0, 20.0]),
            segment=st.one_of(st.none(), st.integers(0, len(SEGMENTS))),
            active=st.dictionaries(
                st.sampled_from([str(i) for i in range(len(SEGMENTS))]),
                st.sampled_from([0.0, 0.5, 2.0, 4.0, 30.0]),
                max_size=2,
            ),
            events=st.dictionaries(
                st.sampled_from(["shown", "accepted"]),
                st.lists(st.sampled_from(range(3)), min_size=1, max_size=3),
                max_size=2,
            ),
        )
        def position(self, wait, segment, active, events) -> None:
            """Some time passes (the clock), then the page reports its active time and
            suggestion events (or, with no segment, only says it is there: a heartbeat)."""
            clock["now"] += timedelta(seconds=wait)
            if segment is None:
                self.agree(self.pair.send("POST", "/heartbeat", {}))
            else:
                body = {"segment": segment, "active": active}
                by_name = {}
                for name in BACKEND_NAMES:
                    given = {k: [hint_ids[name][i] for i in v] for k, v in events.items()}
                    by_name[name] = {**body, "events": given} if events else body
                answers = []
                for name in BACKEND_NAMES:  # the same request, each with its own ids
                    sent = self.pair.clients[name].post(
                        f"/api/assignments/{self.pair.tokens[name]}/position", json=by_name[name]
                    )
                    answers.append((sent.status_code, sent.get_json(silent=True)))
                self.agree(tuple(answers))

        @rule(segment=st.integers(0, len(SEGMENTS) - 1))
        def practice_check(self, segment) -> None:
            self.agree(self.pair.send("POST", f"/practice/{segment}", {}))

        @precondition(lambda self: self.steps > 12)
        @rule(how=st.sampled_from(["submit", "reject"]))
        def end(self, how) -> None:
            if how == "submit":
                self.agree(self.pair.send("POST", "/submit"))
                return
            for name, app in apps.items():
                with app.app_context(), session_scope() as session:
                    study = session.scalar(select(Study))
                    act(session, study, self.pair.workers[name], "reject", "ada@example.org")

        @invariant()
        def same_rows_and_time_within_budget(self) -> None:
            rows = {name: self.pair.rows(name) for name in BACKEND_NAMES}
            for name, found in rows.items():
                found.pop("ids")
                assert {s for s, _event in found["events"]} <= {hint_ids[name][0]}, name
                found["events"] = [(hint_ids[name].index(s), e) for s, e in found["events"]]
            assert rows["sqlite"] == rows["postgres"]
            found = rows["postgres"]
            stored = sum(seconds for _segment, seconds, _at in found["times"])
            elapsed = (clock["now"] - found["opened"]).total_seconds()
            assert stored <= elapsed + timing.SLACK_SECONDS + 1e-6

    run_state_machine_as_test(
        HotPath,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            # No shrinking: a failure prints its whole sequence at once (shrinking one took
            # minutes here), and the sequences are short enough to read.
            phases=(Phase.explicit, Phase.reuse, Phase.generate),
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
