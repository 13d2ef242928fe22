"""One small site with every page a worker or researcher sees, in the states worth checking:
a study with hints, paired spans, entity cues, consent and questionnaires on Prolific; a
practice study; an MTurk study; submitted and reviewed work. Built once per module through
the real services and HTTP API (the Flask test client); :data:`Site` holds the tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from app.annotation.consent import required_hash, sign
from app.annotation.session_settings import configure_sessions
from app.crowd import platforms
from app.db import session_scope
from app.documents import journey
from app.formats import DocumentInput
from app.models import Document, Study, Suggestion
from tests.browser.test_journey_flow import QUESTIONNAIRE
from tests.browser.test_practice_flow import training_study
from tests.conftest import make_study

EMAIL, PASSWORD = "a11y@example.org", "accessible pages 33"
STORY = [
    "Wren Callister keeps the lighthouse on Skarra with her son Pim.",
    "A storm wrecks a schooner and Wren rescues Captain Haldane at night.",
    "Haldane hides a brass tube while Pim watches; Wren grows suspicious of him.",
]
MENTIONS = [
    [("Wren Callister", "1"), ("Pim", "2")],
    [("Wren", "1"), ("Captain Haldane", "3")],
    [("Haldane", "3"), ("Pim", "2"), ("Wren", "1")],
]
ARABIC = [
    "كانت سلمى تحرس المنارة على الجرف. يزورها أخوها طارق في الربيع.",
    "في الشتاء انطفأ المصباح مرتين. صعدت سلمى الدرج وأصلحته وحدها.",
]


@dataclass
class Site:
    tokens: dict[str, str] = field(default_factory=dict)


def _clusters(story, marks):
    return [
        [(text.index(name), text.index(name) + len(name), c) for name, c in seg]
        for text, seg in zip(story, marks, strict=True)
    ]


def _arrive(client, url: str) -> str:
    answer = client.get(url)
    assert answer.status_code == 302, answer.data[:300]
    return answer.headers["Location"].split("/a/")[1].split("/")[0]


def _prolific_params(pid: str) -> dict[str, str]:
    return {"PROLIFIC_PID": pid, "STUDY_ID": "st1", "SESSION_ID": f"se-{pid}"}


def _mark(client, token: str, segment: int, text: str, category: str, paired=None) -> None:
    start = STORY[segment].index(text)
    body = {"segment": segment, "start": start, "end": start + len(text), "text": text}
    body["category"] = category
    if paired:
        seg, ptext = paired
        pstart = STORY[seg].index(ptext)
        body["paired"] = {"segment": seg, "start": pstart, "end": pstart + len(ptext)}
        body["paired"]["text"] = ptext
    answer = client.post(f"/api/assignments/{token}/annotations", json=body)
    assert answer.status_code == 201, answer.get_json()


def _suggestions(session, study_id: int) -> None:
    for doc in session.scalars(select(Document).where(Document.study_id == study_id)):
        for segment, text, category in ((0, "the lighthouse", "RefE"), (1, "at night", "GramE")):
            start = STORY[segment].index(text)
            session.add(
                Suggestion(
                    document_id=doc.id,
                    segment=segment,
                    start=start,
                    end=start + len(text),
                    text=text,
                    category=category,
                    score=0.8,
                    detector="rules",
                    detector_version="1",
                    reason="A rule matched this phrase." if segment == 1 else None,
                )
            )


def build(app) -> Site:
    """Seed the studies and work; return the tokens the page list opens."""
    from app.researchers.accounts import create_researcher

    site = Site()
    training_study(app, attempts=2)  # first: it looks for the only study there is
    docs = [
        DocumentInput(f"story-{n}", STORY, entity_clusters=_clusters(STORY, MENTIONS))
        for n in (1, 2, 3, 4)
    ]
    make_study(app, slug="lights", documents=docs, suggestions="shown", annotators_per_doc=4)
    make_study(app, slug="plain", documents=[("p-1", STORY), ("p-2", STORY)])
    make_study(app, slug="hits", documents=[("h-1", STORY)])
    make_study(app, slug="arabic", documents=[("ar-1", ARABIC)])
    make_study(app, slug="paused", documents=[("x-1", STORY)])
    make_study(app, slug="many", documents=[("m-1", STORY), ("m-2", STORY)])
    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD, role="admin")
        studies = {s.slug: s for s in session.scalars(select(Study))}
        lights = studies["lights"]
        lights.title = "Lighthouse stories"
        platforms.configure_study(
            lights,
            platform="prolific",
            completion_url="https://app.prolific.com/submissions/complete?cc=DONE1",
        )
        journey.set_definition(lights, QUESTIONNAIRE, "q.yaml")
        journey.set_instructions(lights, "Read **each** segment before you mark it.")
        _suggestions(session, lights.id)
        # these participants agreed: their links carry the proof the consent form gives
        digest = required_hash(lights)
        proofs = {
            pid: sign(app.secret_key, lights.id, digest, _prolific_params(pid))
            for pid in ("P-hints", "P-narrow", "P-done", "P-read", "P-two")
        }
        studies["plain"].title = "Plain stories"
        studies["arabic"].title = "قصص المنارة"
        studies["arabic"].settings = {**(studies["arabic"].settings or {}), "lang": "ar"}
        studies["paused"].status = "paused"
        configure_sessions(studies["many"], documents=2)
        platforms.configure_study(studies["hits"], platform="mturk")

    client = app.test_client()
    prolific = "/s/lights?STUDY_ID=st1&SESSION_ID=se-{pid}&PROLIFIC_PID={pid}&consent={proof}"
    hints = _arrive(client, prolific.format(pid="P-hints", proof=proofs["P-hints"]))
    _mark(client, hints, 1, "rescues", "InconE", paired=(0, "keeps the lighthouse"))
    _mark(client, hints, 0, "Pim", "CharE")
    site.tokens["hints"] = hints
    site.tokens["narrow"] = _arrive(
        client, prolific.format(pid="P-narrow", proof=proofs["P-narrow"])
    )
    site.tokens["arabic"] = _arrive(client, "/s/arabic?worker_id=w-ar")
    for pid in ("P-done", "P-read", "P-two"):
        token = _arrive(client, prolific.format(pid=pid, proof=proofs[pid]))
        _mark(client, token, 0, "lighthouse", "RefE")
        _mark(client, token, 1, "Wren rescues", "CharE")
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
        site.tokens[pid] = token
    plain = _arrive(client, "/s/plain?worker_id=w-plain")
    assert client.post(f"/api/assignments/{plain}/submit").status_code == 200
    site.tokens["plain-done"] = plain
    site.tokens["plain-open"] = _arrive(client, "/s/plain?worker_id=w-open")
    # a session of two documents, the first submitted: the page offering the next
    many = _arrive(client, "/s/many?worker_id=w-many")
    assert client.post(f"/api/assignments/{many}/submit").status_code == 200
    site.tokens["session-next"] = many
    site.tokens["practice"] = _arrive(client, "/s/train?worker_id=w-practice")
    # one failed practice attempt: the qualification page says "try again"
    failed = _arrive(client, "/s/train?worker_id=w-fail")
    assert client.post(f"/api/assignments/{failed}/submit").status_code == 200
    site.tokens["failed"] = failed
    for _ in range(2):  # out of practice attempts: the screen-out page
        out = _arrive(client, "/s/train?worker_id=w-out")
        assert client.post(f"/api/assignments/{out}/submit").status_code == 200
    site.tokens["screened-out"] = out
    return site
