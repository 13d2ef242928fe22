"""The worker pages in the worker's language: the German catalogue is complete and
current, placeholders survive translation, every key the scripts ask for exists, and the
pages pick the study's language, else the browser's; the documents' own ``lang`` and ``dir``
(study settings, document metadata) are validated and reach the annotate page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from sqlalchemy import select

from app.db import session_scope
from app.documents import journey
from app.documents.language import (
    INTERFACE_LANGUAGES,
    configure_language,
    direction_of,
    text_language,
)
from app.errors import InvalidInput
from app.formats import DocumentInput
from app.models import Study
from app.web.i18n import CATALOGUES
from app.web.messages import SCRIPT_MESSAGES
from tests.conftest import REPO, make_study

PLACEHOLDER = re.compile(r"%\([a-z_]+\)s|\{[a-z_]+\}")


def catalogue(language: str):
    with (CATALOGUES / language / "LC_MESSAGES" / "messages.po").open("rb") as source:
        return read_po(source)


def extracted() -> set[str]:
    """Every message the code and the templates mark, as ``pybabel extract`` finds them."""
    method_map = [("app/**.py", "python"), ("templates/**.html", "jinja2")]
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        str(REPO), method_map, keywords={"_": None, "gettext": None, "N_": None}
    ):
        found.add(message if isinstance(message, str) else message[0])
    return found


def test_the_interface_languages_are_english_and_the_catalogues():
    assert set(INTERFACE_LANGUAGES) == {"en"} | {p.name for p in CATALOGUES.iterdir() if p.is_dir()}


def test_the_german_catalogue_is_complete_current_and_keeps_its_placeholders():
    german = {m.id: m.string for m in catalogue("de") if m.id}
    marked = extracted()
    assert marked - set(german) == set(), "messages without a German text"
    assert set(german) - marked == set(), "German texts of messages no longer in the code"
    for source, text in german.items():
        assert text and text.strip(), source
        assert sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(source)), source
        assert text.count("<") == source.count("<"), source  # the markup kept
    assert not any(m.fuzzy for m in catalogue("de") if m.id)


def test_every_message_the_scripts_ask_for_exists_and_every_one_is_used():
    code = "\n".join(p.read_text("utf-8") for p in (REPO / "static" / "js").rglob("*.js"))
    source = re.sub(r"^\s*(//|/?\*).*$", "", code, flags=re.M)  # comments out
    asked = set(re.findall(r'\bt\(\s*"([a-z0-9_]+)"', source))
    for pair in re.findall(r'\bt\(\s*[^()"]*\?\s*"([a-z0-9_]+)"\s*:\s*"([a-z0-9_]+)"', source):
        asked |= set(pair)
    assert {"kb_end", "kb_start", "practice_found_one"} <= asked
    assert asked - set(SCRIPT_MESSAGES) == set()
    for key in SCRIPT_MESSAGES:
        assert f'"{key}"' in source or key.startswith("status_"), f"{key} is not used"


def study_row(app, slug: str = "demo") -> Study:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        session.expunge(study)
        return study


def set_study(app, slug: str = "demo", **settings) -> None:
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        study.settings = {**(study.settings or {}), **settings}


def token_of(client, slug: str, worker: str, **headers) -> str:
    answer = client.get(f"/s/{slug}?worker_id={worker}", headers=headers)
    assert answer.status_code == 302
    return answer.headers["Location"].split("/a/")[1]


def test_the_browser_language_picks_the_pages_language(app, client):
    make_study(app)
    english = client.get("/s/demo").get_data(as_text=True)
    assert '<html lang="en" dir="ltr">' in english and "Worker ID" in english
    german = client.get("/s/demo", headers={"Accept-Language": "de-CH,de;q=0.9,en;q=0.5"})
    page = german.get_data(as_text=True)
    assert '<html lang="de" dir="ltr">' in page
    assert "Teilnehmer-ID" in page and "Worker ID" not in page
    french = client.get("/s/demo", headers={"Accept-Language": "fr"}).get_data(as_text=True)
    assert "Worker ID" in french  # no French catalogue: English

    token = token_of(client, "demo", "w1", **{"Accept-Language": "de"})
    again = client.get("/s/demo?worker_id=w1", headers={"Accept-Language": "de"})
    assert again.status_code == 409
    assert "diese Teilnehmer-ID hat schon Arbeit in einem anderen Browser" in again.get_data(
        as_text=True
    )
    annotate = client.get(f"/a/{token}", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert "Anleitung und Fehlerkategorien" in annotate
    table = json.loads(
        re.search(
            r'<script type="application/json" id="ui-messages">(.*?)</script>', annotate, re.S
        )[1]
    )
    assert set(table) == set(SCRIPT_MESSAGES)
    assert table["status_saved"] == "Gespeichert"
    assert table["progress"] == "Abschnitt {n} von {total}"


def test_the_study_language_wins_over_the_browser(app, client):
    make_study(app)
    set_study(app, interface_lang="de")
    page = client.get("/s/demo", headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert "Teilnehmer-ID" in page
    # the documents' language gives the pages' language when there is a catalogue for it
    set_study(app, interface_lang=None, lang="de-AT")
    assert "Teilnehmer-ID" in client.get("/s/demo").get_data(as_text=True)
    # ... and not when there is none: the browser decides
    set_study(app, lang="ar")
    assert "Worker ID" in client.get("/s/demo").get_data(as_text=True)
    german = client.get("/s/demo", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert "Teilnehmer-ID" in german


def test_the_journey_pages_are_translated(app, client):
    from tests.test_journey import consent as consent_form  # the form's signed token

    make_study(app, documents=[("d1", ["Eins.", "Zwei."])])
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study))
        study.platform = "prolific"
        study.settings = {"interface_lang": "de"}
        journey.set_definition(
            study,
            "consent: Hello\nafter_document:\n  - id: easy\n    type: likert\n"
            "    prompt: Easy?\n    scale: 5\n",
            "q.yaml",
        )
    arrival = "/s/demo?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x"
    consent = client.get(arrival).get_data(as_text=True)
    assert "Bevor Sie beginnen" in consent and "Ich stimme nicht zu" in consent
    refused = client.post(
        "/s/demo/consent", data={"PROLIFIC_PID": "p1", "STUDY_ID": "s", "SESSION_ID": "x"}
    )
    assert "wählen Sie, ob Sie der Teilnahme zustimmen" in refused.get_data(as_text=True)
    p2 = {"PROLIFIC_PID": "p2", "STUDY_ID": "s", "SESSION_ID": "x"}
    declined = consent_form(client, p2, "decline").get_data(as_text=True)
    assert "Sie haben sich gegen die Teilnahme entschieden" in declined
    assert "Bitte geben Sie diese Studie auf Prolific zurück" in declined

    agreed = consent_form(
        client, {"PROLIFIC_PID": "p1", "STUDY_ID": "s", "SESSION_ID": "x"}, "agree"
    )
    token = client.get(agreed.headers["Location"]).headers["Location"].split("/a/")[1]
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    questions = client.get(f"/a/{token}/done").get_data(as_text=True)
    assert "Ein paar Fragen zu diesem Text" in questions and "Antworten senden" in questions
    wrong = client.post(f"/a/{token}/questionnaire", data={"stage": "document"})
    assert wrong.status_code == 400
    assert "bitte beantworten Sie “Easy?”" in wrong.get_data(as_text=True)
    wrong = client.post(f"/a/{token}/questionnaire", data={"stage": "document", "easy": "9"})
    assert "“Easy?”: wählen Sie einen Punkt von 1 bis 5" in wrong.get_data(as_text=True)


def test_text_language_settings_are_checked_and_documents_override_them(app):
    make_study(app, documents=[DocumentInput("d1", ["Text."], {"lang": "he"}), ("d2", ["Text."])])
    study = study_row(app)
    assert configure_language(study, lang="zh-Hans", dir="ltr") == {
        "lang": "zh-Hans",
        "dir": "ltr",
        "interface_lang": None,
    }
    for bad in (
        {"lang": "not a tag"},
        {"lang": "x" * 40},
        {"dir": "sideways"},
        {"interface_lang": "fr"},
    ):
        with pytest.raises(InvalidInput):
            configure_language(study, **bad)
    assert study.settings["lang"] == "zh-Hans"  # nothing changed by a refusal
    assert text_language(study_row(app)) == (None, "en")  # nothing set: English, as always
    configure_language(study, lang="ar", dir="")
    assert text_language(study) == ("rtl", "ar")
    assert text_language(study, {"lang": "en"}) == ("ltr", "en")  # the document's own wins
    assert text_language(study, {"dir": "auto", "lang": 5}) == ("auto", "ar")  # invalid: ignored
    assert direction_of("sr-Arab") == "rtl" and direction_of("sr-Latn") is None

    set_study(app, lang="en-GB")
    client = app.test_client()
    pages = [
        client.get(f"/a/{token_of(client, 'demo', f'w{n}')}").get_data(as_text=True) for n in (1, 2)
    ]
    hebrew = next(p for p in pages if 'data-text-lang="he"' in p)
    english = next(p for p in pages if 'data-text-lang="en-GB"' in p)
    assert 'id="current" class="current-box" dir="rtl" lang="he"' in hebrew
    assert 'id="current" class="current-box" lang="en-GB"' in english
    assert '<html lang="en"' in english  # the chrome follows the interface language


def test_study_settings_cli_sets_the_languages(app, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from app.cli import main

    make_study(app)
    monkeypatch.setenv("DATABASE_URL", app.config["DATABASE_URL"])
    runner = CliRunner()
    done = runner.invoke(
        main, ["study", "settings", "demo", "--lang", "ar", "--interface-lang", "de", "--json"]
    )
    assert done.exit_code == 0, done.output
    shown = json.loads(done.output)
    assert (shown["lang"], shown["dir"], shown["interface_lang"]) == ("ar", None, "de")
    refused = runner.invoke(main, ["study", "settings", "demo", "--interface-lang", "fr"])
    assert refused.exit_code != 0 and "interface_lang must be one of en, de" in refused.output
    assert study_row(app).settings["interface_lang"] == "de"


def test_catalogues_compile_in_memory(tmp_path):
    from app.web.i18n import compile_catalogues

    folder = tmp_path / "xx" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "messages.po").write_text('msgid "Saved"\nmsgstr "Sparat"\n', "utf-8")
    compiled = compile_catalogues(tmp_path)
    assert compiled["xx"].ugettext("Saved") == "Sparat"
    assert not list(Path(tmp_path).rglob("*.mo"))
