"""Workers' whole sessions through the router while a node is killed and started again
(no acknowledged write lost): arrive, read the page, add, remove, report positions, submit, each request
landing on either node. The clients retry as the annotate page's outbox does (the same
request after a network error or a 5xx). Afterwards every acknowledged annotation is stored
exactly once under the id its client was given, every acknowledged removal holds, and every
worker's submission stands with one completion code."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import pytest
from sqlalchemy import create_engine, select

from app.models import Annotation, Assignment
from tests.helpers import annotation_body
from tests.multinode.conftest import new_study

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SEGMENTS = [
    "Anna is an only child. She lives in Zoë's old flat in Paris.",
    "Anna's brother visits her. They walk to the café 🙂 and talk.",
    "At the party, Pedro takes Hero aside. Anna is an only child.",
]
SPANS = [(0, "Anna"), (0, "only child"), (1, "brother"), (1, "café 🙂"), (2, "Pedro")]
WORKERS = 6


class Ledger:
    """What the workers were told (shared by their threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.added: dict[str, list[int]] = defaultdict(list)  # client_id -> ids answered
        self.owner: dict[str, str] = {}  # client_id -> token
        self.removed: set[int] = set()
        self.codes: dict[str, list[str]] = defaultdict(list)
        self.nodes: list[tuple[float, str]] = []  # (when, the node that answered)
        self.refused: list[str] = []


class Worker:
    def __init__(self, http, router: str, ledger: Ledger, number: int) -> None:
        self.http, self.router, self.ledger = http, router, ledger
        self.number = number
        self.rng = random.Random(number)
        self.token = ""

    def send(self, method: str, path: str, body: dict | None = None):
        answer = self.http.send(method, f"{self.router}{path}", json=body)
        with self.ledger.lock:
            self.ledger.nodes.append((time.monotonic(), answer.headers.get("X-Node", "?")))
            duplicate = answer.status_code == 409 and "existing_id" in answer.text
            if answer.status_code >= 400 and not duplicate:
                self.ledger.refused.append(f"{method} {path}: {answer.text[:200]}")
        return answer

    def arrive(self) -> None:
        body = {"study": "failover", "worker_id": f"failover-{self.number}"}
        self.token = self.send("POST", "/api/assignments", body).json()["token"]
        page = self.send("GET", f"/api/assignments/{self.token}").json()
        assert [s["text"] for s in page["document"]["segments"]] == SEGMENTS

    def work(self, until: threading.Event) -> None:
        live: list[int] = []
        n = 0
        while not until.is_set():
            segment, text = self.rng.choice(SPANS)
            client_id = f"{self.number}-{n}"
            body = annotation_body(segment, text, "CharE", client_id=client_id, texts=SEGMENTS)
            answer = self.send("POST", f"/api/assignments/{self.token}/annotations", body)
            if answer.status_code in (200, 201):
                with self.ledger.lock:
                    self.ledger.added[client_id].append(answer.json()["id"])
                    self.ledger.owner[client_id] = self.token
                live.append(answer.json()["id"])
            if n % 4 == 3 and live:
                victim = live.pop(0)
                path = f"/api/assignments/{self.token}/annotations/{victim}"
                if self.send("DELETE", path).status_code == 204:
                    with self.ledger.lock:
                        self.ledger.removed.add(victim)
            if n % 3 == 2:
                position = {"segment": segment, "active": {str(segment): 1.0}}
                self.send("POST", f"/api/assignments/{self.token}/position", position)
            n += 1
            time.sleep(self.rng.uniform(0.0, 0.02))

    def submit(self) -> None:
        for _ in range(2):  # a retried submit gets the same code, on either node
            answer = self.send("POST", f"/api/assignments/{self.token}/submit")
            if answer.status_code == 200:
                with self.ledger.lock:
                    self.ledger.codes[self.token].append(answer.json()["completion_code"])


def test_whole_sessions_through_the_router_survive_a_node_killed_and_restarted(
    rig, direct_app, http_factory
):
    new_study(direct_app, "failover", [("doc-1", SEGMENTS)], annotators_per_doc=WORKERS)
    ledger = Ledger()
    workers = [
        Worker(http_factory(f"127.0.1.{n + 1}"), rig.router, ledger, n) for n in range(WORKERS)
    ]
    passed_on = rig.bouncer_transactions()
    for worker in workers:
        worker.arrive()
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(worker: Worker) -> None:
        try:
            worker.work(stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    node = rig.node("a")
    try:
        time.sleep(1.5)
        killed_at = time.monotonic()
        node.kill()
        time.sleep(1.5)
        restarting_at = time.monotonic()  # A is dead until now: B answers everything
        node.start()  # A may answer before start() has seen it healthy and returned
        back_at = time.monotonic()
        time.sleep(1.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        if node.process is None or node.process.poll() is not None:
            node.start()  # the session's other tests need both nodes
    assert not errors, errors
    for worker in workers:
        worker.submit()

    answered_by = {
        phase: {name for when, name in ledger.nodes if low <= when < high}
        for phase, (low, high) in {
            "before": (0, killed_at),
            "down": (killed_at + 0.5, restarting_at),
            "after": (back_at + 0.5, float("inf")),
        }.items()
    }
    retried = sum(worker.http.retried for worker in workers)
    print(
        f"{len(ledger.added)} adds acknowledged, {len(ledger.removed)} removals, "
        f"{retried} requests retried by the clients; nodes: {answered_by}"
    )
    assert answered_by["before"] == {"a", "b"}
    assert answered_by["down"] == {"b"}
    assert answered_by["after"] == {"a", "b"}
    assert ledger.refused == []
    assert len(ledger.added) > WORKERS * 10
    # Every request went through PgBouncer (in transaction mode, prepared statements off).
    assert rig.bouncer_transactions() - passed_on > len(ledger.added) + len(ledger.removed)

    # Every acknowledged add stored once, under the id its client was given (every time).
    for client_id, ids in ledger.added.items():
        assert len(set(ids)) == 1, (client_id, ids)
    engine = create_engine(rig.database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(Annotation.id, Annotation.client_id, Annotation.removed_at, Assignment.token)
                .join(Assignment, Assignment.id == Annotation.assignment_id)
                .where(Assignment.worker_id.like("failover-%"))
            ).all()
            statuses = connection.execute(
                select(Assignment.token, Assignment.status, Assignment.completion_code).where(
                    Assignment.worker_id.like("failover-%")
                )
            ).all()
    finally:
        engine.dispose()
    stored = {row.client_id: row for row in rows}
    assert len(stored) == len(rows), "a client_id was stored twice"
    assert set(stored) == set(ledger.added)  # nothing lost, nothing extra
    for client_id, ids in ledger.added.items():
        assert stored[client_id].id == ids[0]
        assert stored[client_id].token == ledger.owner[client_id]
    for row in rows:
        assert (row.removed_at is not None) == (row.id in ledger.removed), row
    assert len(statuses) == WORKERS
    for token, status, code in statuses:
        assert status == "submitted"
        assert ledger.codes[token] == [code, code]
