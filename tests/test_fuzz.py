"""Fuzzing the JSON API from its OpenAPI description (docs/openapi.yaml) with schemathesis,
against the Flask app over WSGI (no network): no 5xx, answers match the description, and a
refused (4xx) request changes nothing in the database.

Runs on SQLite and on the suite's Postgres. Bounded for CI: MARGINALIA_FUZZ_EXAMPLES
(default 30) examples per operation and generation mode, derandomized.
Half of the generated tokens and ids are swapped for real ones, so the fuzzer gets past the
404 of an unknown token into the validation of bodies for live and submitted assignments.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import select

from app import create_app
from app.migrate import upgrade
from app.models import Base
from tests import pg_cluster
from tests.conftest import make_study

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("MARGINALIA_FUZZ_EXAMPLES", "30"))
SEGMENTS = [
    "Anna is an only child. She lives in Zoë's old flat.",
    "Anna's brother visits her. They walk to the café 🙂 and talk.",
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

SCHEMA = schemathesis.openapi.from_path(REPO / "docs" / "openapi.yaml")
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]


class World:
    """The app under fuzzing plus real tokens and ids to aim at."""

    def __init__(self, app, tokens: list[str], annotation_ids: list[int]):
        self.app = app
        self.tokens = tokens
        self.annotation_ids = annotation_ids

    def digest(self) -> str:
        """A hash of every row of every table."""
        hasher = hashlib.sha256()
        with self.app.extensions["db_engine"].connect() as connection:
            for table in Base.metadata.sorted_tables:
                for row in connection.execute(select(table).order_by(*table.primary_key.columns)):
                    hasher.update(repr(tuple(row)).encode())
        return hasher.hexdigest()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def world(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}"
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        url = pg_cluster.create_database(cluster, f"fuzz_{os.getpid()}")
    upgrade(url)
    app = create_app(
        {
            "DATABASE_URL": url,
            "TESTING": True,
            "SECRET_KEY": "fuzz",
            "ARRIVAL_RATE_LIMIT": "100000 per minute",  # fuzz the rules, not the limiter
        }
    )
    make_study(app, documents=[("doc-1", SEGMENTS), ("doc-2", ["One.", "Two."])])
    client = app.test_client()
    tokens, ids = [], []
    for worker in ("w-active", "w-submitted"):
        answer = client.post(
            "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": worker}
        )
        token = answer.get_json()["token"]
        added = client.post(
            f"/api/assignments/{token}/annotations",
            json={
                "segment": 0,
                "start": 0,
                "end": 4,
                "text": "Anna",
                "category": "CharE",
                "client_id": f"seed-{worker}",
            },
        )
        assert added.status_code == 201, added.get_json()
        tokens.append(token)
        ids.append(added.get_json()["id"])
    assert client.post(f"/api/assignments/{tokens[1]}/submit").status_code == 200
    yield World(app, tokens, ids)
    app.extensions["db_engine"].dispose()


def _pick(value: object, choices: list) -> object:
    """Deterministically replace about half of the generated values by a real one."""
    key = zlib.crc32(repr(value).encode())
    return choices[key % len(choices)] if key % 2 == 0 else value


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_api_fuzz(operation, mode, world):
    if mode == GenerationMode.NEGATIVE and not operation.path_parameters and not operation.body:
        pytest.skip("nothing to make invalid")
    statuses: list[int] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case):
        params = case.path_parameters or {}
        if "token" in params:
            params["token"] = _pick(params["token"], world.tokens)
        if "annotation_id" in params:
            params["annotation_id"] = _pick(params["annotation_id"], world.annotation_ids)
        before = world.digest()
        # The WSGI transport asks for gzip but does not decode it (an HTTP client would):
        # ask for the plain body, which tests/test_assets.py checks against the gzipped one.
        response = case.call(app=world.app, headers={"Accept-Encoding": "identity"})
        statuses.append(response.status_code)
        assert response.status_code < 500, response.text
        if 400 <= response.status_code < 500:
            assert world.digest() == before, f"a refused request changed the database: {case.body}"
            assert response.json()["error"]
        case.validate_response(response, checks=CHECKS)

    check()
    if "token" in {p.name for p in operation.path_parameters}:
        # the fuzzer got past the token check, into the operation's own validation
        assert any(status != 404 for status in statuses), statuses
