"""Checks and normalisation of untrusted text before it reaches the database."""

from __future__ import annotations


def storable(value: str) -> bool:
    """Whether both backends can store ``value`` (no NUL, no unpaired surrogate)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalise_newlines(text: str) -> str:
    """CR LF and lone CR become LF (a lone CR breaks CSV readers of the export)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
