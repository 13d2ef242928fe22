"""What an import did with every part of its file, in words: documents and segments stored,
annotations kept as imported work, gold errors or attention checks planted (and where the
import could not place them), annotations left out with the option that keeps them, entity
cues, detection jobs. One sentence for ``marginalia import`` and the dashboard's import list,
from the same counts (:class:`app.documents.storing.ImportResult`, or a job's stored counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.documents.storing import SKIPPED_PAIRS
from app.documents.text import counted

# How each place names the options (the command's flags, the upload form's tick boxes).
KEEP_HINTS = {
    "cli": "--gold keeps them as gold, --checks as attention checks, --as-work as imported work",
    "web": 'tick "Gold documents", "Attention checks" or "Keep the annotations as imported '
    'work" to keep them',
}


def import_summary(counts: Mapping[str, Any], where: str = "cli") -> list[str]:
    """The parts of the sentence, in order (``where``: ``cli`` or ``web``, which names the
    options). ``counts`` has ``documents``, ``segments``, ``gold`` (the file's errors were
    stored as gold), ``checks`` and the counters of ``ImportResult``; a missing one is 0."""

    def n(key: str) -> int:
        return int(counts.get(key) or 0)

    parts = [f"{counted(n('documents'), 'document')} ({counted(n('segments'), 'segment')})"]
    if n("imported_annotations"):
        assignments = n("imported_assignments")
        parts.append(
            f"{counted(n('imported_annotations'), 'annotation')} kept as {assignments} "
            + (
                "imported worker's assignment"
                if assignments == 1
                else "imported workers' assignments"
            )
        )
    if n("unplaced_annotations"):
        parts.append(
            f"{counted(n('unplaced_annotations'), 'annotation')} not found in their segment "
            "(not stored)"
        )
    if n("imported_suggestions"):
        parts.append(counted(n("imported_suggestions"), "imported suggestion"))
    if n("skipped_pairs"):
        parts.append(f"{counted(n('skipped_pairs'), 'edit')} {SKIPPED_PAIRS}")
    if counts.get("checks"):
        parts.append(
            f"{counted(n('gold_errors'), 'attention check')} planted in "
            f"{counted(n('check_documents'), 'document')}"
        )
    elif counts.get("gold"):
        parts.append(counted(n("gold_errors"), "gold error"))
    if counts.get("gold") or counts.get("checks"):
        for key, what in (
            ("unlocated_gold", "not found verbatim in their segment"),
            ("ambiguous_gold", "at one of several word-boundary occurrences"),
            ("mid_word_gold", "found only inside a word"),
        ):
            if n(key):
                parts.append(f"{counted(n(key), 'gold span')} {what}")
    if n("dropped_annotations"):
        parts.append(
            f"{counted(n('dropped_annotations'), 'annotation')} in the file not imported "
            f"({KEEP_HINTS[where]})"
        )
    if n("entities"):
        parts.append(counted(n("entities"), "entity", "entities"))
    elif where == "cli" and "ner_available" in counts and not counts["ner_available"]:
        parts.append("no entity cues")
    if n("detection_jobs") and where == "cli":
        parts.append(f"{counted(n('detection_jobs'), 'detection job')} queued")
    return parts
