"""What a document is for in its study, as the pages show it: ``practice`` (a gold document
of a study with a pass mark: the training phase), ``gold`` (scored against its reference
errors, handed out as real work), ``checks`` (real work carrying planted attention checks) or
``real``. One place, so that a stored role can replace the flags it is read from."""

from __future__ import annotations

from app.models import Document, Study

ROLES = ("practice", "gold", "checks", "real")
LABELS = {
    "practice": "practice",
    "gold": "gold",
    "checks": "real work with attention checks",
    "real": "real work",
}


def has_pass_mark(study: Study) -> bool:
    return bool((study.settings or {}).get("qualification"))


def document_role(study: Study, is_gold: bool, checks: int = 0) -> str:
    """The role of a document of ``study`` from its gold flag and its planted checks."""
    if is_gold:
        return "practice" if has_pass_mark(study) else "gold"
    return "checks" if checks else "real"


def is_practice(study: Study, document: Document) -> bool:
    return document_role(study, bool(document.is_gold)) == "practice"
