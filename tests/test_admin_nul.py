"""A NUL character in any researcher form field or path value was a 500 on Postgres
(``/admin/account/keys/%00/revoke``, ``workers/action worker=a\\x00b``, ``documents/remove
document_id=a\\x00``); now the 404 or 400 SQLite gave, on both. Every admin rule is walked
with every form field the admin pages have, each set to a NUL, with a NUL in its path values
that take text (tests/routes.py builds the others of their type), and in its query."""

from __future__ import annotations

import re

import pytest

from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.routes import TEXT_CONVERTERS, converters, methods, url_for_rule, values_for
from tests.test_researcher_isolation import ADA, create_researcher, csrf, logged_in

SAMPLES = {"slug": "demo", "fmt": "csv"}  # the other arguments: a value of their type

FIELDS = sorted(
    set(
        re.findall(
            r'name="([a-z_]+)"',
            "".join(p.read_text() for p in (REPO / "templates").rglob("*.html")),
        )
    )
    - {"csrf_token", "viewport", "file", "taxonomy_file"}
)


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


@pytest.fixture
def admin(app):
    make_study(app)
    create_researcher(app, ADA, admin=True)
    return logged_in(app, ADA)


def test_the_probes_nul_values_are_a_404_or_400(app, admin):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # a 500 as a browser would see it
    token = csrf(admin)
    assert (
        admin.post("/admin/account/keys/%00/revoke", data={"csrf_token": token}).status_code == 404
    )
    answer = admin.post(  # as for any worker ID the study does not have
        "/admin/studies/demo/workers/action",
        data={"csrf_token": token, "worker": "a\x00b", "action": "block"},
    )
    assert answer.status_code == 404
    answer = admin.post(  # as for any document id the study does not have
        "/admin/studies/demo/documents/remove", data={"csrf_token": token, "document_id": "a\x00"}
    )
    unknown = admin.post(
        "/admin/studies/demo/documents/remove", data={"csrf_token": token, "document_id": "zz"}
    )
    assert answer.status_code == unknown.status_code < 500


def test_every_admin_form_field_and_path_value_with_a_nul_is_never_a_500(app, admin):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # a 500 as a browser would see it
    token = csrf(admin)
    checked = 0
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/admin") or rule.endpoint == "admin.logout":
            continue
        # a NUL goes in the path values that take text (an <int:> one cannot hold it)
        texts = [
            name for name, kind in converters(rule).items() if isinstance(kind, TEXT_CONVERTERS)
        ]
        for where in ("path", "form", "query"):
            if where == "path" and not texts:
                continue
            samples = dict.fromkeys(texts, "a\x00") if where == "path" else SAMPLES
            url = url_for_rule(app, rule, values_for(rule, samples))
            for method in methods(rule):
                if where == "form" and method != "POST":
                    continue
                data = {"csrf_token": token}
                if where == "form":
                    data.update({field: "x\x00y" for field in FIELDS})
                query = {"id": "a\x00", "worker": "a\x00"} if where == "query" else {}
                answer = admin.open(url, method=method, data=data, query_string=query)
                assert answer.status_code < 500, (where, method, url, answer.status_code)
                checked += 1
    assert checked > 40
