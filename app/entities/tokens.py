"""The token view the rules read: a spaCy Doc's tokens and entities as plain objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.entities.names import NAME_TAGS, NOT_NAMES, WORD_PATTERN, bare, is_capitalised


@dataclass(slots=True)
class _Tok:
    """What the rules read of a spaCy token, copied once (spaCy builds a Token per access)."""

    i: int
    text: str
    lower: str
    bare: str
    tag: str
    ent: str  # the NER label of the entity the token is in, or ""
    idx: int
    end: int
    punct: bool


class _View:
    """A segment's tokens and entities as plain Python objects."""

    def __init__(self, doc: Any) -> None:
        self.text: str = doc.text
        from spacy.attrs import ENT_TYPE, IDX, IS_PUNCT, LOWER, ORTH, TAG

        strings = doc.vocab.strings
        rows = (
            doc.to_array([ORTH, LOWER, TAG, ENT_TYPE, IDX, IS_PUNCT]).tolist() if len(doc) else []
        )
        self.toks = []
        for i, (orth, lower, tag, ent, idx, punct) in enumerate(rows):
            text = strings[orth]
            self.toks.append(
                _Tok(
                    i,
                    text,
                    strings[lower],
                    bare(text),
                    strings[tag] if tag else "",
                    strings[ent] if ent else "",
                    idx,
                    idx + len(text),
                    bool(punct),
                )
            )
        self.ents = [(e.start, e.end, e.label_) for e in doc.ents]
        self.by_start = {t.idx: t.i for t in self.toks}
        self.by_end = {t.end: t.i for t in self.toks}

    def __len__(self) -> int:
        return len(self.toks)

    def chars(self, start: int, end: int) -> tuple[int, int]:
        return self.toks[start].idx, self.toks[end - 1].end

    def token_range(self, start_char: int, end_char: int) -> tuple[int, int] | None:
        """Tokens exactly covering ``text[start_char:end_char]``, or None."""
        first, last = self.by_start.get(start_char), self.by_end.get(end_char)
        return None if first is None or last is None else (first, last + 1)


def _is_name_token(tok: _Tok) -> bool:
    return (
        tok.tag in NAME_TAGS
        and is_capitalised(tok.text)
        and tok.bare not in NOT_NAMES
        and WORD_PATTERN.fullmatch(tok.text) is not None
    )


def _is_sentence_start(v: _View, i: int) -> bool:
    return i == 0 or v.toks[i - 1].text in (".", "!", "?", '"', "“", ":", ";")
