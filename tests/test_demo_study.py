"""``make run``'s demo study serves any number of demo workers: it filled
after nine arrivals (three documents, three workers each) and the printed URL then said "No
documents left". Now every arrival gets a document it has not had; one ID that has had them
all is told to use another ID or `marginalia demo --reset`, which makes the demo anew."""

from __future__ import annotations

from sqlalchemy import func, select

from app.db import session_scope
from app.models import Assignment, Study
from tests.test_researcher_cli import cli  # noqa: F401 (fixture)


def arrive(client, worker: str):
    return client.get("/s/demo", query_string={"worker_id": worker})


def finish(client, answer) -> None:
    token = answer.headers["Location"].split("/a/")[1]
    segments = client.get(f"/api/assignments/{token}").get_json()["document"]["segments"]
    for n in range(len(segments)):
        client.post(f"/api/assignments/{token}/position", json={"segment": n})
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_the_demo_never_fills_up_and_resets(app, client, cli):  # noqa: F811
    cli("demo")
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        assert study.settings["demo"] is True and study.annotators_per_doc == 3
    for n in range(12):  # three more than its nine slots, each held by a worker at work
        answer = arrive(client, f"demo-{n}")
        assert answer.status_code == 302 and "/a/" in answer.headers["Location"], n
        token = answer.headers["Location"].split("/a/")[1]
        assert client.post(f"/api/assignments/{token}/heartbeat", json={}).status_code == 204
    # one ID through every document, then a clear word with the command
    for _ in range(3):
        finish(client, arrive(client, "demo-worker"))
    done = arrive(client, "demo-worker")
    page = done.get_data(as_text=True)
    assert done.status_code == 409 and "marginalia demo --reset" in page
    assert "another ID" in page
    result = cli("demo", "--reset")
    assert "demo study 'demo' deleted (15 assignments)" in result.output
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Assignment)) == 0
        assert session.scalar(select(Study)).settings["demo"] is True
    assert arrive(client, "demo-worker").status_code == 302


def test_reset_refuses_a_study_that_is_no_demo(app, cli):  # noqa: F811
    cli("study", "create", "demo", "--taxonomy", "taxonomies/snac.yaml")
    result = cli("demo", "--reset", ok=False)
    assert "is not a demo study" in result.output
