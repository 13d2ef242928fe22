"""The multi-node rig (:mod:`tests.multinode.rig`), started once per session when the tests
of this folder run, and what its tests share: an app on the same database for set-up (as a
researcher's CLI on another machine would be), a researcher account, HTTP clients.

Without HAProxy, PgBouncer or Redis the tests skip, saying which is missing; with
``MARGINALIA_REQUIRE_NODES`` set (``make test``, which installs them) they fail instead.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import pytest

from tests import pg_cluster
from tests.conftest import TEST_PASSWORD_HASH, make_study
from tests.multinode import rig as rig_module

EMAIL, PASSWORD = "nodes@example.org", "a long enough password"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
RETRY_SECONDS = 30.0


@pytest.fixture(scope="session")
def rig(request):
    missing = rig_module.missing_binaries()
    if missing:
        if os.environ.get("MARGINALIA_REQUIRE_NODES"):
            pytest.fail(f"{', '.join(missing)} missing (make test installs them)")
        pytest.skip(f"the multi-node rig needs {', '.join(missing)} (Debian packages)")
    cluster = request.getfixturevalue("postgres_cluster")
    template = request.getfixturevalue("postgres_template")
    started = rig_module.start(cluster, template)
    yield started
    started.stop()
    pg_cluster.drop_database(cluster, started.database_url.rsplit("/", 1)[1])


@pytest.fixture(scope="session")
def direct_app(rig):
    """An app on the rig's database, straight to Postgres: the tests' set-up and reads."""
    from app import create_app
    from app.db import session_scope
    from app.researchers.accounts import create_researcher

    app = create_app(
        {
            "DATABASE_URL": rig.database_url,
            "SECRET_KEY": rig_module.SECRET_KEY,
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH,
        }
    )
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
    yield app
    app.extensions["db_engine"].dispose()


def new_study(app, slug: str, documents, annotators_per_doc: int = 3) -> int:
    study_id = make_study(app, slug, documents=documents, annotators_per_doc=annotators_per_doc)
    app.extensions["db_engine"].dispose()  # no idle connection left to the study's database
    return study_id


class Http:
    """An HTTP client from its own loopback address (``127.0.0.N``: a client of its own for
    the per-address limits), to the router or straight to one node; cookies are kept per
    host, so a login made on one node is sent to the other too, as a browser would."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        import httpx

        transport = httpx.HTTPTransport(local_address=address)
        self.client = httpx.Client(transport=transport, timeout=10.0, follow_redirects=False)
        self.retried = 0

    def request(self, method: str, url: str, **kwargs: Any):
        return self.client.request(method, url, **kwargs)

    def get(self, url: str, **kwargs: Any):
        return self.client.get(url, **kwargs)

    def post(self, url: str, **kwargs: Any):
        return self.client.post(url, **kwargs)

    def send(self, method: str, url: str, **kwargs: Any):
        """As the annotate page's outbox does: the same request again after a network error
        or a 5xx, until an answer below 500."""
        import httpx

        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            try:
                answer = self.client.request(method, url, **kwargs)
                if answer.status_code < 500:
                    return answer
            except httpx.TransportError:
                pass
            self.retried += 1
            assert time.monotonic() < deadline, f"{method} {url} kept failing"
            time.sleep(0.1)

    def csrf(self, url: str) -> str:
        page = self.client.get(url)
        assert page.status_code == 200, page.text[:300]
        return CSRF.search(page.text).group(1)

    def login(self, page_base: str, post_base: str, password: str = PASSWORD, email: str = EMAIL):
        """The login form read from ``page_base`` and sent to ``post_base``."""
        token = self.csrf(f"{page_base}/admin/login")
        return self.client.post(
            f"{post_base}/admin/login",
            data={"email": email, "password": password, "csrf_token": token},
        )

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def http_factory():
    made: list[Http] = []

    def make(address: str = "127.0.0.1") -> Http:
        made.append(Http(address))
        return made[-1]

    yield make
    for client in made:
        client.close()
