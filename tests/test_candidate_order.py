"""Candidate building does not depend on the order the marks arrive in (docs/METRICS.md,
"Review and adjudication": workers in assignment order, each worker's marks by start, end,
id; the list sorted by segment, proposal start and end, category, smallest mark id).

On SNaC dev as workers (every vote a worker: tests/test_snac_roundtrip.plan_marks) with each
worker's marks also given a second, shifted copy (so that ties between overlapping marks of
one worker exist), twenty shuffles of the marks give the same candidates, mark for mark, and
the same proposals."""

from __future__ import annotations

import json
import random

from app.documents.taxonomy import load_taxonomy
from app.quality.candidates import Mark, group_candidates
from app.quality.scoring import scopes_from_taxonomy
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
                    marks.append(
                        Mark(
                            next(next_id),
                            f"w{worker}",
                            b["segment"],
                            start,
                            end,
                            text[start:end],
                            b["category"],
                            (None,) * 5,
                            "",
                        )
                    )
        documents.append((doc, [f"w{k}" for k in sorted(workers)], marks, texts))
    return documents


def shape(candidates):
    return [([m.id for m in c.marks], c.proposal.id) for c in candidates]


def test_shuffling_the_marks_changes_no_candidate():
    scopes = scopes_from_taxonomy(load_taxonomy(REPO / "taxonomies" / "snac.yaml"))
    rng = random.Random(29)
    total = 0
    for doc, workers, marks, texts in snac_marks():
        expected = shape(group_candidates(doc, workers, marks, texts, scopes))
        total += len(expected)
        for _ in range(20):
            shuffled = marks[:]
            rng.shuffle(shuffled)
            assert shape(group_candidates(doc, workers, shuffled, texts, scopes)) == expected, doc
    assert total > 600
