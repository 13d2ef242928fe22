"""How a named character is introduced: the evidence CharE ("a person appears with no
introduction") turns on, as numeric features of a name candidate.

The same evidence the import's entity clusters record (first mention, how it was
introduced, whether a descriptor or role goes with it), computed here from the sentence and
its context strings because ``model_server`` never imports the web app. Pure string work: no
parse beyond the candidate's offsets, so it is cheap over a long context.
"""

from __future__ import annotations

import math
import re

_DETERMINER = r"(?:a|an|the|his|her|their|its|my|our|your|one|two|three|[A-Z][\w'-]*'s)"
# "X, Leonato's daughter", "X, a shepherd", "X, who ...", "X, the Duke"
_DESCRIPTOR_AFTER = re.compile(rf"^\s*(?:,|\(|-+|—)\s*(?:{_DETERMINER}|who|whom|whose)\b")
# "his wife, X", "two women, X and Y", "a shepherd named X", "the Duke's daughter X"
_DESCRIPTOR_BEFORE = re.compile(
    rf"(?:\b{_DETERMINER}\s+(?:[a-z][\w'-]*\s+){{0,3}}[a-z][\w'-]*,?\s*"
    r"|\b(?:named|called|known as|by the name of)\s+)$"
)
_ROLE_BEFORE = re.compile(r"\b(?:the|a|an|his|her|their)\s+(?:[a-z][\w'-]*\s+){0,2}$")
_PLACE_BEFORE = re.compile(
    r"\b(?:in|to|from|at|into|near|toward|towards|through|across|of|for|leaves|reach|reaches)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_DET_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
_LIST_BEFORE = re.compile(r"(?:,|\band)\s+$")


def _name_words(text: str) -> list[str]:
    return [w.removesuffix("'s") for w in re.findall(r"[A-Z][\w'-]*", text)]


def introduced_at(text: str, start: int, end: int) -> bool:
    """A descriptor or role right before or after ``text[start:end]``."""
    before, after = text[max(0, start - 80) : start], text[end : end + 40]
    return bool(_DESCRIPTOR_AFTER.match(after) or _DESCRIPTOR_BEFORE.search(before))


def introduction_features(sentence: str, start: int, end: int, context: str) -> dict[str, float]:
    """Features of the name at ``sentence[start:end]`` given the earlier ``context``."""
    before = sentence[max(0, start - 80) : start]
    words = _name_words(sentence[start:end]) or [sentence[start:end].strip()]
    key = max(words, key=len)
    pattern = re.compile(rf"(?<![\w]){re.escape(key)}(?![\w])")
    earlier = [m.span() for m in pattern.finditer(context)] if key else []
    first_introduced = bool(earlier) and introduced_at(context, *earlier[0])
    return {
        "intro_here": float(introduced_at(sentence, start, end)),
        "intro_role_before": float(bool(_ROLE_BEFORE.search(before))),
        "intro_det_before": float(bool(_DET_BEFORE.search(before))),
        "intro_place_before": float(bool(_PLACE_BEFORE.search(before))),
        "intro_in_list": float(bool(_LIST_BEFORE.search(before))),
        "intro_ctx_mentions": min(1.0, math.log1p(len(earlier)) / math.log(20)),
        "intro_first_introduced": float(first_introduced),
        "intro_ctx_chars_since": (
            min(1.0, (len(context) - earlier[-1][1]) / 4000) if earlier else 1.0
        ),
    }
