"""The worker pages' own text in the worker's language (Flask-Babel, gettext catalogues).

The catalogues are ``app/translations/<lang>/LC_MESSAGES/messages.po``, committed; they are
compiled in memory when the app starts (a few milliseconds, no ``.mo`` file on disk, nothing
to run at install time). English is the source language; :data:`LANGUAGES` lists the
complete ones. The language of a page is the study's ``interface_lang`` setting, else its
``lang`` (the documents' language) when a catalogue has it, else the best match of the
browser's Accept-Language, else English (:func:`select_language`). A worker page calls
:func:`use_study` before it renders (or translates) anything. The researchers' pages are
English.

The annotate page's scripts take their text from :func:`script_messages`, rendered into the
page as a JSON data block (``<script type="application/json">``: data, not code, so the CSP
is untouched) and read by ``static/js/i18n.js``.
"""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import NullTranslations, Translations
from flask import Flask, g, request
from flask_babel import Babel, Domain, get_locale, get_translations, refresh

from app.documents.language import INTERFACE_LANGUAGES, RTL_LANGUAGES
from app.web.messages import SCRIPT_MESSAGES

CATALOGUES = Path(__file__).resolve().parent.parent / "translations"
SOURCE_LANGUAGE = "en"
LANGUAGES = INTERFACE_LANGUAGES  # English and the complete catalogues under CATALOGUES


def compile_catalogues(folder: Path = CATALOGUES) -> dict[str, Translations]:
    """Every ``<lang>/LC_MESSAGES/messages.po`` under ``folder``, compiled in memory."""
    compiled: dict[str, Translations] = {}
    for po in sorted(folder.glob("*/LC_MESSAGES/messages.po")):
        with po.open("rb") as source:
            catalog = read_po(source, locale=po.parts[-3])
        buffer = io.BytesIO()
        write_mo(buffer, catalog)
        buffer.seek(0)
        compiled[po.parts[-3]] = Translations(fp=buffer)
    return compiled


class CompiledCatalogues(Domain):
    """Flask-Babel's domain, answered from the catalogues compiled at start."""

    def __init__(self, catalogues: dict[str, Translations]) -> None:
        super().__init__()
        self.catalogues = catalogues

    def get_translations(self):  # type: ignore[override]
        locale = get_locale()
        if locale is None:
            return NullTranslations()
        return self.catalogues.get(locale.language) or NullTranslations()


def study_language(settings: dict | None) -> str | None:
    """The interface language a study asks for, if a catalogue has it."""
    settings = settings or {}
    for key in ("interface_lang", "lang"):
        tag = settings.get(key)
        if isinstance(tag, str) and tag.split("-")[0].lower() in LANGUAGES:
            return tag.split("-")[0].lower()
    return None


def select_language() -> str:
    """The page's language: the study's (set by :func:`use_study`), else the browser's."""
    chosen = g.get("interface_language")
    if chosen:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or SOURCE_LANGUAGE


def use_study(study) -> None:
    """Pages of this study from now on in the study's language (if it sets one)."""
    language = study_language(getattr(study, "settings", None))
    if language and g.get("interface_language") != language:
        g.interface_language = language
        refresh()


def error_text(error: Exception) -> str:
    """An error's message in the page's language when it was made translatable
    (:func:`app.errors.translatable`), else as it is."""
    template = getattr(error, "template", None)
    if template:
        return get_translations().ugettext(template) % (getattr(error, "params", None) or {})
    return str(error)


def page_language() -> dict[str, str]:
    """``ui_lang`` and ``ui_dir`` for the <html> element of a worker page."""
    locale = get_locale()
    language = locale.language if locale is not None else SOURCE_LANGUAGE
    return {"ui_lang": language, "ui_dir": "rtl" if language in RTL_LANGUAGES else "ltr"}


def script_messages() -> dict[str, str]:
    """The annotate page scripts' text, in the page's language."""
    translations = get_translations()
    return {key: translations.ugettext(text) for key, text in SCRIPT_MESSAGES.items()}


def init_app(app: Flask) -> None:
    babel = Babel(app, locale_selector=select_language)
    babel.domain_instance = CompiledCatalogues(compile_catalogues())  # type: ignore[misc]
    app.context_processor(page_language)
