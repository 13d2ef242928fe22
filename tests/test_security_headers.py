"""Response headers and request limits: CSP, nosniff, HSTS only over HTTPS, ProxyFix only when
configured, oversized bodies refused with a JSON 413 and nothing stored."""

from __future__ import annotations

import pytest

from app import create_app
from tests.conftest import make_study


@pytest.fixture
def study(app):
    make_study(app, documents=[("doc-1", ["Anna is an only child.", "Her brother visits."])])
    return "demo"


def _token(client) -> str:
    answer = client.post(
        "/api/assignments", json={"study": "demo", "document": "doc-1", "worker_id": "w1"}
    )
    assert answer.status_code in (200, 201)
    return answer.get_json()["token"]


def _directives(csp: str) -> dict[str, str]:
    return {
        part.strip().split(" ", 1)[0]: part.strip().partition(" ")[2]
        for part in csp.split(";")
        if part.strip()
    }


@pytest.mark.parametrize("path", ["/", "/healthz", "/api/assignments/nope", "/s/demo"])
def test_every_response_has_csp_and_nosniff(client, study, path):
    response = client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    csp = _directives(response.headers["Content-Security-Policy"])
    assert csp["default-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'"
    assert csp["object-src"] == "'none'"
    assert "unsafe-inline" not in response.headers["Content-Security-Policy"]


def test_annotate_page_is_not_frameable_by_default(client, study):
    token = _token(client)
    response = client.get(f"/a/{token}")
    assert response.status_code == 200
    assert _directives(response.headers["Content-Security-Policy"])["frame-ancestors"] == "'none'"


def test_no_hsts_over_plain_http(client, study):
    response = client.get("/healthz")
    assert "Strict-Transport-Security" not in response.headers


def test_hsts_over_https(client, study):
    response = client.get("/healthz", base_url="https://marginalia.example")
    hsts = response.headers["Strict-Transport-Security"]
    assert "max-age=31536000" in hsts


def test_forwarded_proto_ignored_without_behind_proxy(client, study):
    response = client.get("/healthz", headers={"X-Forwarded-Proto": "https"})
    assert "Strict-Transport-Security" not in response.headers


def test_forwarded_headers_trusted_behind_proxy(database_url, study):
    proxied = create_app(
        {"DATABASE_URL": database_url, "TESTING": True, "SECRET_KEY": "t", "BEHIND_PROXY": 1}
    )
    seen = {}

    @proxied.get("/_probe")
    def _probe():
        from flask import request

        seen["remote"] = request.remote_addr
        seen["scheme"] = request.scheme
        return "ok"

    try:
        response = proxied.test_client().get(
            "/_probe", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
        )
    finally:
        proxied.extensions["db_engine"].dispose()
    assert response.status_code == 200
    assert seen == {"remote": "203.0.113.7", "scheme": "https"}
    assert "Strict-Transport-Security" in response.headers


def test_oversized_body_is_a_json_413_and_stores_nothing(app, client, study):
    from sqlalchemy import func, select

    from app.models import Annotation

    token = _token(client)
    limit = app.config["MAX_CONTENT_LENGTH"]
    body = {
        "segment": 0,
        "start": 0,
        "end": 4,
        "text": "Anna",
        "category": "x",
        "comment": "a" * (limit + 10),
        "client_id": "big",
    }
    response = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert response.status_code == 413
    assert "larger than the limit" in response.get_json()["error"]
    with app.extensions["db_engine"].connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Annotation)) == 0


def test_max_content_length_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MAX_CONTENT_LENGTH", "1234")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'x.db'}")
    configured = create_app({"SECRET_KEY": "t"})
    try:
        assert configured.config["MAX_CONTENT_LENGTH"] == 1234
    finally:
        configured.extensions["db_engine"].dispose()
