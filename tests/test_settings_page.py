"""One Settings page per study: every setting of a study on one page, each
section's form coming back to it (or showing it again with the error above that section); the
New study form takes the common ones. On SQLite."""

from __future__ import annotations

from sqlalchemy import select

from app.db import session_scope
from app.models import Study
from tests.conftest import make_study
from tests.test_admin import admin, csrf, researcher  # noqa: F401 (fixtures)

SECTIONS = (
    "platform",
    "practice",
    "checks",
    "hints",
    "time",
    "instructions",
    "questionnaire",
    "returns",
)


def test_the_new_study_form_takes_the_common_settings(app, admin):  # noqa: F811
    answer = admin.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(admin),
            "slug": "paid-1",
            "taxonomy": "snac.yaml",
            "platform": "prolific",
            "completion_url": "https://app.prolific.com/submissions/complete?cc=DONE",
            "qualification_f1": "0.6",
            "qualification_attempts": "3",
            "screen_out_url": "https://app.prolific.com/submissions/complete?cc=OUT",
            "min_catch_rate": "0.5",
            "min_seconds_per_segment": "4",
        },
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)[:500]
    with app.app_context(), session_scope() as session:
        settings = session.scalar(select(Study)).settings
    assert settings["qualification"] == {"min_f1": 0.6, "attempts": 3}
    assert settings["screen_out_url"].endswith("cc=OUT")
    assert settings["attention"] == {"min_catch_rate": 0.5}
    assert settings["min_seconds_per_segment"] == 4
    assert settings["require_all_segments_seen"] is True
    bad = admin.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(admin),
            "slug": "paid-2",
            "taxonomy": "snac.yaml",
            "qualification_f1": "1.5",
        },
    )
    assert bad.status_code == 400 and "at most 1" in bad.get_data(as_text=True)
    with app.app_context(), session_scope() as session:
        assert session.scalar(select(Study.slug).where(Study.slug == "paid-2")) is None


def test_every_setting_is_on_the_settings_page(app, admin):  # noqa: F811
    make_study(app)
    admin.post(
        "/admin/studies/demo/settings",
        data={
            "csrf_token": csrf(admin),
            "platform": "prolific",
            "qualification_f1": "0.7",
            "qualification_attempts": "2",
            "screen_out_url": "https://example.org/out",
            "min_catch_rate": "0.4",
            "hints": "thorough",
            "max_hints_per_segment": "5",
        },
    )
    page = admin.get("/admin/studies/demo/settings").get_data(as_text=True)
    for section in SECTIONS:
        assert f'id="{section}"' in page, section
    assert 'value="0.7"' in page and 'value="https://example.org/out"' in page
    assert 'value="0.4"' in page and '<option value="thorough" selected>' in page
    # the dashboard, Manage and Workers pages point here instead of holding forms
    for url in ("/admin/studies/demo", "/admin/studies/demo/manage", "/admin/studies/demo/workers"):
        other = admin.get(url).get_data(as_text=True)
        assert "/admin/studies/demo/settings" in other, url
        assert 'name="min_catch_rate"' not in other and 'name="instructions"' not in other, url


def test_each_section_comes_back_to_the_page_or_shows_its_error(app, admin):  # noqa: F811
    make_study(app)
    saved = admin.post(
        "/admin/studies/demo/instructions",
        data={"csrf_token": csrf(admin), "instructions": "Mark what you see."},
    )
    assert saved.status_code == 302
    assert saved.headers["Location"].endswith("/admin/studies/demo/settings#instructions")
    refused = admin.post(
        "/admin/studies/demo/return-codes",
        data={"csrf_token": csrf(admin), "no_places": "not a code!"},
    )
    assert refused.status_code == 400 and 'id="returns-error"' in refused.get_data(as_text=True)
    bad = admin.post(
        "/admin/studies/demo/settings", data={"csrf_token": csrf(admin), "qualification_f1": "2"}
    )
    assert bad.status_code == 400 and 'id="platform-error"' in bad.get_data(as_text=True)


def test_the_preview_follows_the_workers_path(app, admin):  # noqa: F811
    """The "Preview as a worker" page showed a real document, not the practice
    document workers meet first."""
    from app.documents.studies import import_documents
    from app.formats import DocumentInput, GoldSpan

    make_study(app, documents=[("story-1", ["A real story."])])
    gold = [GoldSpan(segment=0, text="Anna", category="CharE", votes=1)]
    with app.app_context(), session_scope() as session:
        import_documents(
            session,
            session.scalar(select(Study)),
            [DocumentInput("practice-1", ["Anna walks."], gold=gold)],
            gold=True,
            practice=True,
        )
        import_documents(
            session,
            session.scalar(select(Study)),
            [DocumentInput("test-1", ["Bob runs."], gold=gold)],
            gold=True,
        )
    plain = admin.get("/admin/studies/demo/preview").get_data(as_text=True)
    assert 'id="preview-practice"' not in plain  # no pass mark: gold is real work
    admin.post(
        "/admin/studies/demo/settings",
        data={"csrf_token": csrf(admin), "qualification_f1": "0.5", "qualification_attempts": "2"},
    )
    page = admin.get("/admin/studies/demo/preview").get_data(as_text=True)
    practice, real = page.index('id="preview-practice"'), page.index('id="preview-document"')
    assert practice < real
    assert "3. Practice first (practice-1)" in page and "Anna walks." in page
    assert "4. Then the first real document (story-1)" in page
    assert "5. Questions after each document" in page and "F1 0.50, within 2 attempts" in page
    assert "a qualification document such as test-1" in page
