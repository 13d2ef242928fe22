"""The language and direction of a study's texts, and the language of its pages.

Three study settings (``studies.settings``): ``lang``, the documents' language as a BCP 47
tag (``ar``, ``zh-Hans``, ``en-GB``); ``dir``, their direction (``ltr``, ``rtl`` or ``auto``:
each paragraph by its first strong character); ``interface_lang``, the language of the
worker pages' own text (one of :data:`INTERFACE_LANGUAGES`; unset: ``lang`` when the
interface has it, else the worker's browser, see ``app/web/i18n.py``). A document's import
metadata may carry its own ``lang`` and ``dir`` (``{"meta": {"lang": "he", "dir": "rtl"}}``
in JSON Lines), which win over the study's. A language whose script is written right to
left gives ``rtl`` when no direction is set.
"""

from __future__ import annotations

import re
from typing import Any

from app.errors import InvalidInput

DIRECTIONS = ("ltr", "rtl", "auto")
INTERFACE_LANGUAGES = ("en", "de")  # English and the complete catalogues in app/translations
# Languages written right to left (their primary subtag).
RTL_LANGUAGES = frozenset(
    {"ar", "arc", "ckb", "dv", "fa", "he", "iw", "ks", "ku", "ps", "sd", "syr", "ug", "ur", "yi"}
)
RTL_SCRIPTS = frozenset({"Arab", "Hebr", "Syrc", "Thaa", "Nkoo", "Adlm", "Rohg"})
_TAG = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}$")
# The documents' language when neither the study nor the document says: English, what the
# pages always declared (a screen reader then reads English texts with an English voice even
# when the interface is German); a study of texts in another language sets ``lang``.
DEFAULT_TEXT_LANG = "en"
UNSET: Any = object()


def N_(text: str) -> str:  # noqa: N802 (gettext's name for "mark for translation only")
    """Mark ``text`` for the interface catalogue (``pybabel extract``); the page that shows
    it translates it (``app/web/i18n.py``)."""
    return text


def valid_tag(value: Any) -> str | None:
    """``value`` as a language tag when it has BCP 47's shape, else None."""
    if isinstance(value, str) and len(value) <= 35 and _TAG.match(value):
        return value
    return None


def direction_of(tag: str | None) -> str | None:
    """``rtl`` for a language tag of a right-to-left language or script, else None."""
    if not tag:
        return None
    parts = tag.split("-")
    if parts[0].lower() in RTL_LANGUAGES:
        return "rtl"
    if any(part.title() in RTL_SCRIPTS for part in parts[1:] if len(part) == 4):
        return "rtl"
    return None


def configure_language(
    study, *, lang: Any = UNSET, dir: Any = UNSET, interface_lang: Any = UNSET
) -> dict[str, str | None]:
    """Validate and store the study's language settings ('' or None removes one); raises
    :class:`InvalidInput` and changes nothing on a bad value. Returns :func:`describe`."""
    settings = dict(study.settings or {})
    changes: dict[str, str | None] = {}
    if lang is not UNSET:
        if lang not in (None, "") and valid_tag(lang) is None:
            raise InvalidInput(f"lang {lang!r} is not a language tag such as en, ar or zh-Hans")
        changes["lang"] = lang or None
    if dir is not UNSET:
        if dir not in (None, "") and dir not in DIRECTIONS:
            raise InvalidInput(f"dir must be one of {', '.join(DIRECTIONS)}")
        changes["dir"] = dir or None
    if interface_lang is not UNSET:
        if interface_lang not in (None, "") and interface_lang not in INTERFACE_LANGUAGES:
            raise InvalidInput(
                f"interface_lang must be one of {', '.join(INTERFACE_LANGUAGES)} "
                "(or empty: the worker's browser decides)"
            )
        changes["interface_lang"] = interface_lang or None
    for key, value in changes.items():
        if value is None:
            settings.pop(key, None)
        else:
            settings[key] = value
    study.settings = settings
    return describe(study)


def describe(study) -> dict[str, str | None]:
    settings = study.settings or {}
    return {key: settings.get(key) for key in ("lang", "dir", "interface_lang")}


def text_language(study, meta: dict[str, Any] | None = None) -> tuple[str | None, str | None]:
    """(dir, lang) of a document's text: its metadata's, else the study's, else no direction
    (the page's) and :data:`DEFAULT_TEXT_LANG`. A document's own language brings its direction
    (``ltr`` unless it is written right to left) before the study's ``dir``; invalid values
    are ignored."""
    settings = study.settings or {}
    meta = meta if isinstance(meta, dict) else {}
    own_lang = valid_tag(meta.get("lang"))
    lang = own_lang or valid_tag(settings.get("lang")) or DEFAULT_TEXT_LANG
    own_dir = meta.get("dir") if meta.get("dir") in DIRECTIONS else None
    study_dir = settings.get("dir") if settings.get("dir") in DIRECTIONS else None
    if own_dir:
        return own_dir, lang
    if own_lang:
        return direction_of(own_lang) or "ltr", lang
    return study_dir or direction_of(lang), lang
