"""Candidate building does not depend on the order the marks arrive in (docs/METRICS.md,
"Review and adjudication": workers in assignment order, each worker's marks by start, end,
id; the list sorted by segment, proposal start and end, category, smallest mark id).

On SNaC dev as workers (every vote a worker: tests/test_snac_roundtrip.plan_marks) with each
worker's marks also given a second, shifted copy (so that ties between overlapping marks of
one worker exist), twenty shuffles of the marks give the same candidates, mark for mark, and
the same proposals, with the same comments carried (h27) and the same attribute values and
disagreements (h28): each mark has a comment and a severity of its own."""

from __future__ import annotations

import json
import random

from app.documents.taxonomy import load_taxonomy
from app.quality.candidates import Mark, group_candidates
from app.rules.scoring import scopes_from_taxonomy
from tests.conftest import REPO, shared_file
from tests.test_snac_roundtrip import plan_marks


def snac_marks():
    raw = json.loads(shared_file("snac", "dev.json").read_text(encoding="utf-8"))
    planned, *_ = plan_marks(raw)
    documents = []
    next_id = iter(range(1, 10**6))
    for doc, workers in planned.items():
        texts = {(doc, int(i)): body["text"] for i, body in raw[doc].items()}
        marks = []
        for worker, bodies in workers.items():
            for b in bodies:
                shapes = [(b["start"], b["end"])]
                text = texts[(doc, b["segment"])]
                if b["end"] + 4 <= len(text):  # a second, overlapping mark of the same worker
                    shapes.append((b["start"], b["end"] + 4))
                for start, end in shapes:
                    number = next(next_id)
                    marks.append(
                        Mark(
                            number,
                            f"w{worker}",
                            b["segment"],
                            start,
                            end,
                            text[start:end],
                            b["category"],
                            (None,) * 5,
                            f"note {worker}" if number % 3 else "",
                            {"severity": ("minor", "major")[number % 2]},
                        )
                    )
        documents.append((doc, [f"w{k}" for k in sorted(workers)], marks, texts))
    return documents


def shape(candidates):
    return [
        ([m.id for m in c.marks], c.proposal.id, c.proposal.attributes, c.comment, c.unanimous)
        for c in candidates
    ]


def test_shuffling_the_marks_changes_no_candidate():
    scopes = scopes_from_taxonomy(load_taxonomy(REPO / "taxonomies" / "snac.yaml"))
    rng = random.Random(29)
    total = comments = attribute_disagreements = 0
    for doc, workers, marks, texts in snac_marks():
        candidates = group_candidates(doc, workers, marks, texts, scopes)
        expected = shape(candidates)
        total += len(expected)
        comments += sum("\n" in c.comment for c in candidates)
        attribute_disagreements += sum(
            len({m.attributes["severity"] for m in c.marks}) > 1 for c in candidates
        )
        for _ in range(20):
            shuffled = marks[:]
            rng.shuffle(shuffled)
            assert shape(group_candidates(doc, workers, shuffled, texts, scopes)) == expected, doc
    assert total > 600
    assert comments > 0 and attribute_disagreements > 0  # both rules were exercised
