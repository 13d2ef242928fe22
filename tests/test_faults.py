"""Faults under load: web server workers SIGKILLed and Postgres restarted while simulated
workers add and remove annotations and submit. Clients retry like the page's outbox (same
client_id, on network errors and 5xx). Afterwards every acknowledged annotation is stored
exactly once, under the id its client was given; retries got consistent answers; removals
and completion codes held.

Run against the deployed web process (marginalia web: granian, which respawns a killed worker)
and against gunicorn (gunicorn.conf.py, still supported).

Bounded: about 12 s of load plus start-up (~30 s in all, per server).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from app.models import Annotation, Assignment
from tests import pg_cluster
from tests.conftest import make_study

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SEGMENTS = [
    "Anna is an only child. She lives in Zoë's old flat in Paris.",
    "Anna's brother visits her. They walk to the café 🙂 and talk.",
    "At the party, Pedro takes Hero aside. Anna is an only child.",
]
SPANS = [
    (0, "Anna"),
    (0, "only child"),
    (1, "brother"),
    (1, "café 🙂"),
    (2, "Pedro"),
    (2, "Hero aside"),
]
CLIENTS = 12
LOAD_SECONDS = 12.0
RETRY_SECONDS = 30.0


def restart_postgres(cluster) -> None:
    if cluster.data_dir is None:
        pytest.skip("an external Postgres (MARGINALIA_TEST_POSTGRES_URL) cannot be restarted")
    cluster.restart()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """The web server, 2 processes x 4 threads, in its own process group: ``granian``
    (marginalia web, as the Procfile runs it) or ``gunicorn`` (gunicorn.conf.py)."""

    def __init__(self, database_url: str, log: Path, kind: str = "granian"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "PORT": str(self.port),
            "WEB_CONCURRENCY": "2",
            "GUNICORN_THREADS": "4",
            "WEB_THREADS": "4",
            "WEB_HOST": "127.0.0.1",
            "SECRET_KEY": "faults",
            "GUNICORN_LOG_LEVEL": "warning",
            "WEB_LOG_LEVEL": "warning",
        }
        if kind == "granian":
            command = [sys.executable, "-m", "app.cli", "web"]
        else:
            command = [
                str(BIN / "gunicorn"),
                "--config",
                "gunicorn.conf.py",
                "--bind",
                f"127.0.0.1:{self.port}",
                "app:create_app()",
            ]
        with log.open("w") as handle:
            self.process = subprocess.Popen(
                command,
                cwd=REPO,
                env=env,
                start_new_session=True,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        self.log = log
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=5):
                    break
            except OSError:
                assert self.process.poll() is None, log.read_text()
                assert time.time() < deadline, log.read_text()
                time.sleep(0.2)

    def workers(self) -> list[int]:
        import psutil

        return [child.pid for child in psutil.Process(self.process.pid).children()]

    def kill_workers(self, count: int | None = None) -> list[int]:
        victims = self.workers()[:count]
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        return victims

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass
class Ledger:
    """What the clients were told, shared by all client threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    bodies: dict[str, tuple[str, dict]] = field(default_factory=dict)
    removed: set[int] = field(default_factory=set)
    codes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    retries: int = 0
    refused: list[str] = field(default_factory=list)


class Client:
    """One simulated worker with an outbox-like retry loop."""

    def __init__(self, base_url: str, ledger: Ledger, number: int):
        import httpx

        self.http = httpx.Client(base_url=base_url, timeout=5.0)
        self.ledger = ledger
        self.number = number
        self.rng = random.Random(number)

    def send(self, method: str, path: str, body: dict | None = None):
        """Retry network errors and 5xx with the same request until a 2xx/4xx answer."""
        import httpx

        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            try:
                response = self.http.request(method, path, json=body)
                if response.status_code < 500:
                    duplicate = response.status_code == 409 and "existing_id" in response.text
                    if response.status_code >= 400 and not duplicate:
                        self.ledger.refused.append(f"{method} {path}: {response.text}")
                    return response
            except httpx.TransportError:
                pass
            with self.ledger.lock:
                self.ledger.retries += 1
            assert time.monotonic() < deadline, f"{method} {path} kept failing"
            time.sleep(self.rng.uniform(0.05, 0.3))

    def run(self, stop_at: float) -> None:
        opened = self.send(
            "POST",
            "/api/assignments",
            {"study": "demo", "document": "doc-1", "worker_id": f"fault-worker-{self.number}"},
        )
        token = opened.json()["token"]
        mine: list[int] = []
        live: dict[int, tuple[int, str]] = {}  # id -> span of this worker's live annotations
        n = 0
        while time.monotonic() < stop_at:
            segment, text = self.rng.choice(SPANS)
            start = SEGMENTS[segment].index(text)
            client_id = f"{self.number}-{n}"
            body = {
                "segment": segment,
                "start": start,
                "end": start + len(text),
                "text": text,
                "category": "CharE",
                "comment": f"note {n}",
                "client_id": client_id,
            }
            answer = self.send("POST", f"/api/assignments/{token}/annotations", body)
            if answer.status_code in (200, 201):
                annotation_id = answer.json()["id"]
                with self.ledger.lock:
                    self.ledger.answers[client_id].append(annotation_id)
                    self.ledger.bodies[client_id] = (token, body)
                mine.append(annotation_id)
                live[annotation_id] = (segment, text)
            elif answer.status_code == 409:
                # An exact duplicate of one of this worker's live annotations, refused with
                # the id of the one it repeats (and nothing stored).
                assert live.get(answer.json()["existing_id"]) == (segment, text), answer.text
            if n % 5 == 4 and mine:
                victim = mine.pop(0)
                gone = self.send("DELETE", f"/api/assignments/{token}/annotations/{victim}")
                if gone.status_code == 204:
                    live.pop(victim, None)
                    with self.ledger.lock:
                        self.ledger.removed.add(victim)
            n += 1
            time.sleep(self.rng.uniform(0.0, 0.03))
        self.token = token

    def submit(self) -> None:
        for _ in range(2):  # a retried submit gets the same code
            submitted = self.send("POST", f"/api/assignments/{self.token}/submit")
            if submitted.status_code == 200:
                with self.ledger.lock:
                    self.ledger.codes[self.token].append(submitted.json()["completion_code"])

    def close(self) -> None:
        self.http.close()


@pytest.fixture(params=["granian", "gunicorn"])
def served(request, postgres_cluster, postgres_template, tmp_path):
    name = f"faults_{os.getpid()}_{request.param}"
    url = pg_cluster.create_database(postgres_cluster, name, postgres_template)
    from app import create_app

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "faults"})
    make_study(app, documents=[("doc-1", SEGMENTS)], annotators_per_doc=CLIENTS)
    app.extensions["db_engine"].dispose()
    # Heroku's form of the URL, as the Procfile's web process would get it.
    heroku_url = url.replace("postgresql+psycopg2://", "postgres://", 1)
    server = Server(heroku_url, tmp_path / "web.log", request.param)
    yield server, url
    server.stop()


def test_acknowledged_annotations_survive_killed_workers_and_a_database_restart(
    served, postgres_cluster
):
    server, url = served
    ledger = Ledger()
    clients = [Client(server.url, ledger, n) for n in range(CLIENTS)]
    stop_at = time.monotonic() + LOAD_SECONDS
    errors: list[BaseException] = []

    def guarded(thread_target):
        def run(*args):
            try:
                thread_target(*args)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(c.run), args=(stop_at,)) for c in clients]
    for thread in threads:
        thread.start()
    faults = []
    time.sleep(2)
    faults.append(("SIGKILL one web worker", server.kill_workers(1)))
    time.sleep(2)
    restart_postgres(postgres_cluster)
    faults.append(("Postgres restarted", []))
    time.sleep(2)
    faults.append(("SIGKILL every web worker", server.kill_workers()))
    time.sleep(1.5)
    restart_postgres(postgres_cluster)
    faults.append(("Postgres restarted again", []))
    for thread in threads:
        thread.join(timeout=LOAD_SECONDS + RETRY_SECONDS * 3)
    assert not errors, errors

    # The faults hit requests in flight (otherwise this test proves nothing).
    print(
        f"faults: {[f[0] for f in faults]}; {len(ledger.answers)} adds acknowledged, "
        f"{len(ledger.removed)} removals, {ledger.retries} retried requests"
    )
    assert ledger.retries > 0, faults
    assert ledger.refused == []
    acknowledged = {cid: ids for cid, ids in ledger.answers.items()}
    assert len(acknowledged) > CLIENTS * 10

    # Every acknowledged add is stored once, under the id its client was given (every time).
    for client_id, ids in acknowledged.items():
        assert len(set(ids)) == 1, (client_id, ids)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(
                    Annotation.id, Annotation.client_id, Annotation.removed_at, Assignment.token
                ).join(Assignment, Assignment.id == Annotation.assignment_id)
            ).all()
    finally:
        engine.dispose()
    stored = {row.client_id: row for row in rows}
    assert len(stored) == len(rows), "a client_id was stored twice"
    assert set(stored) == set(acknowledged)  # nothing lost, nothing extra
    for client_id, ids in acknowledged.items():
        assert stored[client_id].id == ids[0]
        assert stored[client_id].token == ledger.bodies[client_id][0]
    for row in rows:
        assert (row.removed_at is not None) == (row.id in ledger.removed), row

    # Late duplicates (an outbox replaying after the faults) get the first answer back.
    check = Client(server.url, ledger, 999)
    try:
        for client_id in list(acknowledged)[:: max(1, len(acknowledged) // 40)]:
            token, body = ledger.bodies[client_id]
            again = check.send("POST", f"/api/assignments/{token}/annotations", body)
            assert again.status_code == 200, again.text
            assert again.json()["id"] == acknowledged[client_id][0]
        for client in clients:
            client.submit()
    finally:
        check.close()
        for client in clients:
            client.close()
    assert ledger.refused == []
    with engine.connect() as connection:
        assignments = connection.execute(
            select(Assignment.token, Assignment.status, Assignment.completion_code)
        ).all()
    engine.dispose()

    # Submits: one code per assignment, the same on every retry, and the one stored.
    assert len(ledger.codes) == CLIENTS
    stored_codes = {a.token: a for a in assignments}
    for token, codes in ledger.codes.items():
        assert len(set(codes)) == 1, codes
        assert stored_codes[token].status == "submitted"
        assert stored_codes[token].completion_code == codes[0]
