"""The Settings page's suggestion model: choosing a study's stored learned model
or the shipped detector queues the study's documents again; bad or foreign choices change
nothing; the model card is shown as text."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import DetectionJob, Document, Study
from tests.conftest import make_study
from tests.test_admin import TOKEN_PATTERN, admin, researcher  # noqa: F401 - fixtures

HOSTILE = '<script>alert("card")</script>'


def store(app, slug: str, tmp_path, name: str) -> int:
    from app.detection.learned_models import store_model
    from app.documents.studies import get_study

    folder = tmp_path / name
    folder.mkdir()
    head = {"format": "marginalia-learned-detector/1", "model": name, "heads": {}}
    head["heads"]["CharE"] = {"w": [1.0], "b": 0.0, "mean": [0.0], "std": [1.0], "threshold": 0.5}
    (folder / "head.json").write_text(json.dumps(head))
    (folder / "MODEL_CARD.md").write_text(f"# Learned detector {name}\n\n{HOSTILE}\n")
    with app.app_context(), session_scope() as session:
        return store_model(session, get_study(session, slug), folder).id


def setting(app, slug: str = "demo"):
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        return (study.settings or {}).get("detector_model")


def choose(client, value: str, slug: str = "demo"):
    page = client.get(f"/admin/studies/{slug}/settings").get_data(as_text=True)
    token = TOKEN_PATTERN.search(page).group(1)
    return client.post(
        f"/admin/studies/{slug}/settings/detector", data={"model": value, "csrf_token": token}
    )


@pytest.fixture
def studies(app, tmp_path):
    make_study(app, suggestions="shown")
    make_study(app, slug="other", documents=[("o-1", ["Elsewhere."])], suggestions="shown")
    return store(app, "demo", tmp_path, "demo.3d"), store(app, "other", tmp_path, "other.1d")


def test_choosing_a_learned_model_on_settings_queues_the_study_again(app, admin, studies):  # noqa: F811
    mine, _ = studies
    page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
    assert 'id="detector"' in page and "demo.3d" in page and "other.1d" not in page
    assert '<option value="" selected>shipped detector</option>' in page
    with app.app_context(), session_scope() as session:
        for job in session.scalars(select(DetectionJob)):
            job.status = "done"

    answer = choose(admin, str(mine))
    assert answer.status_code == 302 and answer.location.endswith("#detector")
    assert setting(app) == mine
    with app.app_context(), session_scope() as session:
        names = dict(session.execute(select(Document.id, Document.external_id)).all())
        statuses = {names[j.document_id]: j.status for j in session.scalars(select(DetectionJob))}
    assert statuses == {"doc-1": "queued", "o-1": "done"}  # the other study is left alone
    page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
    assert "Suggestions come from model demo.3d" in page and "1 documents queued" in page
    assert f'<option value="{mine}" selected>' in page
    assert HOSTILE not in page and "&lt;script&gt;alert(" in page  # the card is text

    assert choose(admin, "").status_code == 302
    assert setting(app) is None


@pytest.mark.parametrize("value", ["abc", "99999", "other"])
def test_a_bad_or_foreign_model_is_refused_and_changes_nothing(app, admin, studies, value):  # noqa: F811
    mine, theirs = studies
    assert choose(admin, str(mine)).status_code == 302
    answer = choose(admin, str(theirs) if value == "other" else value)
    assert answer.status_code in (400, 404)
    text = answer.get_data(as_text=True)
    assert 'id="detector-error"' in text
    assert setting(app) == mine
    assert setting(app, "other") is None
