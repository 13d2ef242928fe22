"""What each node keeps to itself stays correct when another node changes the database: a
worker rejected on node A is refused on node B, whose token cache knows them; a document
replaced or a study deleted on A is never served from B's cache (the actions' token,
document and taxonomy entries, app/annotation/cache.py); the arrival limit and the login
throttle count every node's requests; a session and its CSRF token work on any node."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from tests.multinode.conftest import PASSWORD, new_study

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

OLD = ["Anna lives in Paris.", "She has a brother."]
NEW = ["Ben lives in Rome.", "He has a sister.", "They write letters."]


def arrive(http, base: str, slug: str, worker: str):
    return http.post(f"{base}/api/assignments", json={"study": slug, "worker_id": worker})


def add(http, base: str, token: str, client_id: str, text: str = "Anna"):
    """Mark ``text`` at the start of segment 0 (refused with 400 where it is not there)."""
    body = {"segment": 0, "start": 0, "end": len(text), "text": text, "category": "CharE"}
    return http.post(
        f"{base}/api/assignments/{token}/annotations", json={**body, "client_id": client_id}
    )


def segments_served(http, base: str, token: str) -> list[str] | int:
    answer = http.get(f"{base}/api/assignments/{token}")
    if answer.status_code != 200:
        return answer.status_code
    return [segment["text"] for segment in answer.json()["document"]["segments"]]


def admin_post(http, base: str, path: str, page: str, **form: str):
    """A researcher's form: its CSRF token read from ``page`` on the same node."""
    token = http.csrf(f"{base}{page}")
    return http.post(f"{base}{path}", data={**form, "csrf_token": token})


def logged_in(http_factory, rig, address: str):
    http = http_factory(address)
    answer = http.login(rig.node("a").url, rig.node("a").url)
    assert answer.status_code == 302, answer.text[:300]
    return http


def test_a_worker_rejected_on_a_is_refused_on_b(rig, direct_app, http_factory):
    from app.models import Annotation, Assignment

    new_study(direct_app, "reject", [("doc-1", OLD)])
    a, b = rig.node("a").url, rig.node("b").url
    worker = http_factory("127.0.0.21")
    token = arrive(worker, b, "reject", "worker-r").json()["token"]
    assert add(worker, b, token, "r-1").status_code == 201  # B's caches know the token now
    assert segments_served(worker, b, token) == OLD

    researcher = logged_in(http_factory, rig, "127.0.0.22")
    page = "/admin/studies/reject/worker?id=worker-r"
    done = admin_post(
        researcher,
        a,
        "/admin/studies/reject/workers/action",
        page,
        worker="worker-r",
        action="reject",
    )
    assert done.status_code == 303, done.text[:300]

    refused = add(worker, b, token, "r-2", text="Anna lives")
    assert refused.status_code == 409, refused.text
    assert worker.request("DELETE", f"{b}/api/assignments/{token}/annotations/1").status_code in (
        404,
        409,
    )
    assert worker.post(f"{b}/api/assignments/{token}/submit").status_code == 409
    with direct_app.app_context(), session_scope() as session:
        status = session.scalar(select(Assignment.status).where(Assignment.token == token))
        stored = session.scalar(
            select(func.count())
            .select_from(Annotation)
            .join(Assignment)
            .where(Assignment.token == token)
        )
    assert (status, stored) == ("rejected", 1)
    # Arriving again on B is refused too (the block is read from the database).
    assert arrive(worker, b, "reject", "worker-r").status_code in (403, 409)


def test_replaced_documents_and_a_deleted_study_are_never_served_from_another_node(
    rig, direct_app, http_factory
):
    from app.db import session_scope as scope
    from app.documents.studies import get_study, import_documents
    from app.formats import DocumentInput

    new_study(direct_app, "cache", [("doc-1", OLD)])
    a, b = rig.node("a").url, rig.node("b").url
    worker = http_factory("127.0.0.23")
    old = arrive(worker, a, "cache", "worker-old").json()["token"]
    for base in (a, b):  # both nodes' page caches hold the document
        assert segments_served(worker, base, old) == OLD
    beat = worker.post(f"{b}/api/assignments/{old}/heartbeat", json={})
    assert beat.status_code == 204  # B's token cache holds the token

    # On A, the researcher removes the document; it comes back with other text (an import,
    # as `marginalia documents replace` would make it, from any machine).
    researcher = logged_in(http_factory, rig, "127.0.0.24")
    removed = admin_post(
        researcher,
        a,
        "/admin/studies/cache/documents/remove",
        "/admin/studies/cache",
        document_id="doc-1",
    )
    assert removed.status_code in (302, 303), removed.text[:300]
    with direct_app.app_context(), scope() as session:
        import_documents(session, get_study(session, "cache"), [DocumentInput("doc-1", NEW)])
    direct_app.extensions["db_engine"].dispose()

    assert segments_served(worker, b, old) == 404
    assert worker.post(f"{b}/api/assignments/{old}/heartbeat", json={}).status_code == 404
    assert add(worker, b, old, "old-1").status_code == 404
    new = arrive(worker, b, "cache", "worker-new").json()["token"]
    for base in (b, a):
        assert segments_served(worker, base, new) == NEW
    assert add(worker, b, new, "new-1", text="Ben").status_code == 201
    assert add(worker, b, new, "new-2", text="Anna").status_code == 400  # not in the text

    # On A, the study is deleted; B serves nothing of it, and a new study of the same slug
    # is served with its own documents.
    deleted = admin_post(
        researcher, a, "/admin/studies/cache/delete", "/admin/studies/cache/manage", confirm="cache"
    )
    assert deleted.status_code in (302, 303), deleted.text[:300]
    assert segments_served(worker, b, new) == 404
    assert add(worker, b, new, "new-3", text="Ben lives").status_code == 404
    assert arrive(worker, b, "cache", "worker-late").status_code == 404
    new_study(direct_app, "cache", [("doc-1", OLD[:1])])
    again = arrive(worker, b, "cache", "worker-again").json()["token"]
    assert segments_served(worker, b, again) == OLD[:1]


def test_the_arrival_limit_counts_every_node(rig, direct_app, http_factory):
    """The documented figure (ARRIVAL_RATE_LIMIT's default, 30 a minute per client address)
    holds for the whole site: with a per-process store, two nodes allowed 60."""
    rig.flush_limits()
    new_study(direct_app, "limits", [("doc-1", OLD)], annotators_per_doc=50)
    client = http_factory("127.0.0.25")

    def entry_or_arrival(n: int):
        """The entry page (Flask) or, every other time, an arrival naming its document (the
        worker API's entry, app/web/worker_api.py): both count in the one shared limit."""
        if n % 2:
            body = {"study": "limits", "worker_id": f"lim-{n}", "document": "doc-1"}
            return client.post(f"{rig.router}/api/assignments", json=body)
        return client.get(f"{rig.router}/s/limits", params={"worker_id": f"lim-{n}"})

    answers = [entry_or_arrival(n) for n in range(40)]
    served = [answer for answer in answers if answer.status_code != 429]
    assert len(served) == 30, [answer.status_code for answer in answers]
    assert {answer.status_code for answer in served} == {201, 302}
    assert {answer.headers["X-Node"] for answer in answers} == {"a", "b"}
    assert {answer.headers["X-Node"] for answer in answers if answer.status_code == 429} == {
        "a",
        "b",
    }
    # Another client address has its own count.
    other = http_factory("127.0.0.26")
    assert other.get(f"{rig.router}/s/limits", params={"worker_id": "lim-x"}).status_code != 429


def test_arrivals_are_served_while_the_limits_store_is_down(rig, direct_app, http_factory):
    """Redis lost: each node counts in its own memory meanwhile (never a 500)."""
    from tests.multinode.rig import start_redis

    new_study(direct_app, "no-redis", [("doc-1", OLD)], annotators_per_doc=50)
    client = http_factory("127.0.0.29")
    rig.stop_redis()
    try:
        answers = [  # arrivals naming their document first (the common arrival), then entries
            client.post(
                f"{rig.router}/api/assignments",
                json={"study": "no-redis", "worker_id": f"nr-{n}", "document": "doc-1"},
            )
            if n in (0, 1, 4, 5)
            else client.get(f"{rig.router}/s/no-redis", params={"worker_id": f"nr-{n}"})
            for n in range(6)
        ]
    finally:
        start_redis(rig)
    assert [answer.status_code for answer in answers] == [201, 201, 302, 302, 201, 201]
    assert {answer.headers["X-Node"] for answer in answers} == {"a", "b"}


def test_the_login_throttle_counts_every_node(rig, direct_app, http_factory):
    """The 11th failed login in a minute is refused (app/researchers/throttle.py), whichever
    nodes the ten failures went to; then even the right password is refused."""
    from app.researchers.accounts import create_researcher

    email = "throttled@example.org"  # its own account: the throttle counts per account too
    with direct_app.app_context(), session_scope() as session:
        create_researcher(session, email, PASSWORD)
    direct_app.extensions["db_engine"].dispose()
    nodes = [rig.node("a").url, rig.node("b").url]
    client = http_factory("127.0.0.27")
    for n in range(10):
        base = nodes[n % 2]
        answer = client.login(base, base, password=f"wrong {n}", email=email)
        assert answer.status_code == 401, answer.text[:300]
    for base in nodes:
        assert client.login(base, base, password=PASSWORD, email=email).status_code == 429


def test_parallel_wrong_passwords_on_both_nodes_check_at_most_ten(rig, direct_app, http_factory):
    """Forty wrong passwords for one account sent at once, half to each node (each its own
    process and connection pool, through PgBouncer): ten are checked, the rest refused
    unchecked, because the attempt is counted under a database lock before the check."""
    import threading
    import time

    from app.researchers.accounts import create_researcher

    email = "parallel@example.org"
    with direct_app.app_context(), session_scope() as session:
        create_researcher(session, email, PASSWORD)
    direct_app.extensions["db_engine"].dispose()
    bases = [rig.node(name).url for name in ("a", "b")] * 20
    clients = [http_factory("127.0.0.29") for _ in bases]
    tokens = [c.csrf(f"{base}/admin/login") for c, base in zip(clients, bases, strict=True)]
    start = threading.Barrier(len(bases))
    statuses = [0] * len(bases)

    def post(n: int) -> None:
        form = {"email": email, "password": f"wrong {n}", "csrf_token": tokens[n]}
        start.wait()
        statuses[n] = clients[n].post(f"{bases[n]}/admin/login", data=form).status_code

    threads = [threading.Thread(target=post, args=(n,)) for n in range(len(bases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(statuses)) == [401, 429], statuses
    assert statuses.count(401) == 10, statuses
    # A node busy with the burst may have missed the router's health check (one miss takes
    # it out): the next tests expect the router to send to both again.
    deadline = time.monotonic() + 30
    seen: set[str] = set()
    while seen != {"a", "b"}:
        assert time.monotonic() < deadline, seen
        seen.add(clients[0].get(f"{rig.router}/healthz").headers["X-Node"])


def test_a_session_and_its_csrf_token_work_on_any_node(rig, direct_app, http_factory):
    a, b = rig.node("a").url, rig.node("b").url
    client = http_factory("127.0.0.28")
    logged = client.login(a, b)  # the form from A, sent to B
    assert logged.status_code == 302, logged.text[:300]
    for base in (a, b):
        assert client.get(f"{base}/admin/").status_code == 200
    through = [client.get(f"{rig.router}/admin/") for _ in range(4)]
    assert [answer.status_code for answer in through] == [200] * 4
    assert {answer.headers["X-Node"] for answer in through} == {"a", "b"}
    # A form read on B is accepted by A; a forged token by neither.
    token = client.csrf(f"{b}/admin/")
    forged = client.post(f"{a}/admin/logout", data={"csrf_token": token[:-4] + "AAAA"})
    assert forged.status_code == 400
    assert client.get(f"{b}/admin/").status_code == 200
    out = client.post(f"{a}/admin/logout", data={"csrf_token": token})
    assert out.status_code == 302
    for base in (a, b):  # logged out everywhere
        assert client.get(f"{base}/admin/").status_code in (302, 401)
