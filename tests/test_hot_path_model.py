"""Issue 25 item 2: where the hot path's rule has two forms, they agree. On Postgres the fast
lane runs an add's and a remove's lock and write in one round trip through the driver, the
write repeating the claim's rule and stamping the activity (``insert_stamped``,
``REMOVE_STAMPED``; a multi-label mark: ``insert_annotation(checked=True)``);
the API route runs the claim, reads its row count, then the write, on the request's ORM
session; on SQLite the lane runs them on a bare connection. A hypothesis state machine
drives random sequences (add, remove, duplicate, retry, a client_id reused, a refused body,
position with active time and suggestion events after time passed, a practice check,
heartbeat, submit, reject; the taxonomy is made ``multi_label``, so an add may be a mark of
two categories, one row each, whose second may duplicate a live mark and refuse the whole
mark, and a remove may name any row of a mark)
through both, each step on two assignments of one practice document (one through the lane,
one through the route), and asserts identical statuses, bodies (ids as ordinals) and stored
rows after every step, on SQLite and Postgres. Events name the suggestion the worker is shown,
another document's and one that does not exist: only the first is ever stored. It also checks the time budget's promise
after every step: an assignment's stored active seconds never exceed the clock's time since
it opened plus one slack.

The clock is ``app.annotation.assignments.now``, set by the machine (both assignments see
the same moments, so their timestamps compare equal and the budget is deterministic).
Budget: ``MARGINALIA_MODEL_EXAMPLES`` sequences (default 20) of up to 12 steps per backend,
about 10 s each on the 2-core machine.
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
from tests.conftest import BACKENDS, make_database_url, make_study
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


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def _ordinal(ids: list[int], value):
    return ("#", ids.index(value)) if value in ids else ("unknown", value)


def _client_id(ids: list[int], client_id: str):
    """A multi-label mark's other rows are ``~<first id>.<n>``: the id as an ordinal."""
    if not client_id.startswith("~"):
        return client_id
    first, n = client_id[1:].split(".")
    return ("~", _ordinal(ids, int(first)), n)


class Pair:
    """One assignment per path, fed the same requests."""

    def __init__(self, app, client) -> None:
        self.app, self.client = app, client
        n = next(_workers)
        with app.app_context(), session_scope() as session:
            study = session.scalar(select(Study))
            document = session.scalar(select(Document).where(Document.external_id == "doc-1"))
            self.tokens = {
                lane: open_for_document(session, study, document, f"{name}-{n}")[0].token
                for lane, name in ((True, "lane"), (False, "route"))
            }
            self.workers = {True: f"lane-{n}", False: f"route-{n}"}

    def rows(self, lane: bool) -> dict:
        with self.app.app_context(), session_scope() as session:
            a = session.scalar(select(Assignment).where(Assignment.token == self.tokens[lane]))
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
                "assignment": (a.status, a.current_segment, a.last_seen_at, a.engaged_at),
                "opened": a.created_at,
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
                        x.created_at,
                        x.removed_at,
                    )
                    for x in annotations
                ],
                "ids": ids,
                "times": [tuple(t) for t in times],
                "checks": sorted(checks),
                "events": [tuple(e) for e in events],
            }

    def send(self, method: str, path, body=None) -> tuple:
        """The request on both assignments (``path``: text, or a function of the lane giving
        it); both answers, with ids as ordinals."""
        answers = []
        for lane in (True, False):
            self.app.config["FAST_LANE"] = lane
            tail = path(lane) if callable(path) else path
            answer = self.client.open(
                f"/api/assignments/{self.tokens[lane]}{tail}", method=method, json=body
            )
            payload = answer.get_json(silent=True)
            if isinstance(payload, dict):
                ids = self.rows(lane)["ids"]
                payload = {
                    key: _ordinal(ids, value) if key in ("id", "existing_id") else value
                    for key, value in payload.items()
                    if key not in ("completion_code", "redirect_url")
                }
            answers.append((answer.status_code, payload))
        return tuple(answers)


def test_the_lane_and_the_route_agree_on_random_sequences(app, client, monkeypatch):
    make_study(app, documents=DOCUMENTS, gold=True, annotators_per_doc=1000, suggestions="shown")
    with app.app_context(), session_scope() as session:
        configure_study(session.scalar(select(Study)), qualification_f1=0.5)
        doc_1 = session.scalar(select(Document).where(Document.external_id == "doc-1"))
        doc_1.is_practice = True  # it teaches: a check freezes its segment
        study = session.scalar(select(Study))
        study.taxonomy = {**study.taxonomy, "multi_label": True}  # before any request
    hints = add_suggestions(app)
    hint_ids = [hints["doc-1"], hints["doc-2"], hints["doc-2"] + 1000]  # shown, another's, none
    app.config["PRACTICE_RATE_LIMIT"] = "1000000 per hour"  # every check freezes, none is a 429
    clock = {"now": START}
    monkeypatch.setattr(assignments, "now", lambda: clock["now"])

    class HotPath(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.pair = Pair(app, client)
            self.last: dict | None = None
            self.steps = 0

        def agree(self, answers: tuple) -> None:
            self.steps += 1
            lane, route = answers
            assert lane == route, f"lane {lane} != route {route}"
            assert lane[0] < 500, lane

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

            def path(lane: bool) -> str:
                ids = self.pair.rows(lane)["ids"]
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
                if events:
                    body["events"] = {k: [hint_ids[i] for i in v] for k, v in events.items()}
                self.agree(self.pair.send("POST", "/position", body))

        @rule(segment=st.integers(0, len(SEGMENTS) - 1))
        def practice_check(self, segment) -> None:
            self.agree(self.pair.send("POST", f"/practice/{segment}", {}))

        @precondition(lambda self: self.steps > 12)
        @rule(how=st.sampled_from(["submit", "reject"]))
        def end(self, how) -> None:
            if how == "submit":
                self.agree(self.pair.send("POST", "/submit"))
                return
            with app.app_context(), session_scope() as session:
                study = session.scalar(select(Study))
                for worker in self.pair.workers.values():
                    act(session, study, worker, "reject", "ada@example.org")

        @invariant()
        def same_rows_and_time_within_budget(self) -> None:
            lane, route = self.pair.rows(True), self.pair.rows(False)
            lane.pop("ids"), route.pop("ids")
            assert lane == route
            opened = lane["opened"].replace(tzinfo=UTC)
            stored = sum(seconds for _segment, seconds, _at in lane["times"])
            elapsed = (clock["now"] - opened).total_seconds()
            assert stored <= elapsed + timing.SLACK_SECONDS + 1e-6
            assert {suggestion for suggestion, _event in lane["events"]} <= {hint_ids[0]}

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
