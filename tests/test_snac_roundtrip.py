"""Acceptance: the SNaC dev set round-trips through the HTTP API and the snac export.

Import ``../shared/data/snac/dev.json`` as snac, replay every error with ``votes`` distinct
workers (entries that repeat a span text in one segment at successive occurrences, paired
ones with their antecedent span, in an earlier segment where that is where it is), submit
all, export snac: the multiset of (document, segment, span, error type, votes) equals the
input's, and each error's antecedents are the input's.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from app.documents.locating import locate
from tests.antecedents import locate_antecedent
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file

# The one error of SNaC dev that cannot be replayed: its span is empty, so there is nothing
# to select (the importer keeps it as an unlocated gold span).
UNREPLAYABLE = [("book_175b36", "27", "", "SceneE")]
# Votes of the data set whose antecedent is the marked span itself (no earlier occurrence
# of the antecedent's text exists): the API refuses a paired span that does not end before
# the annotated span starts (the API's order rule), so these votes cannot be replayed.
SELF_PAIRED = [
    (
        "book_175b13",
        "13",
        "Pedro and John say they saw her talking to a man at her chamber window last night.",
        "InconE",
    ),
    ("book_6b91", "3", "an honorable gentleman", "RepE"),
    ("tripod20", "0", "nervous", "RepE"),
    ("tripod20", "0", "nervous", "RepE"),
]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def plan_marks(raw: dict) -> tuple[dict, Counter, dict, list, list]:
    """Which worker marks what: per document, worker number -> annotation bodies.

    An error with ``votes`` v is marked by workers 0..v-1, at the place the shared locate
    rule gives (entries repeating a span text and type in a segment at successive
    occurrences); paired ones with their antecedent at the nearest earlier occurrence, in
    this segment or an earlier one. ``expected`` is the multiset of (document, segment,
    span, type, votes replayed); ``antecedents`` per occurrence the antecedent texts; the
    fifth value lists the votes whose antecedent is not earlier than the span (not replayed).
    """
    marks: dict[str, dict[int, list[dict]]] = {}
    expected: Counter = Counter()
    antecedents: dict[tuple, list[str]] = defaultdict(list)
    skipped, self_paired = [], []
    for doc, body in raw.items():
        texts = [body[str(i)]["text"] for i in range(len(body))]
        workers: dict[int, list[dict]] = defaultdict(list)
        workers[0]  # every document gets at least one (possibly empty) submission
        for index in range(len(texts)):
            taken: dict[tuple, set] = defaultdict(set)
            for error in body[str(index)]["errors"]:
                key = (doc, str(index), error["span"], error["error_type"])
                if not error["span"].strip():
                    skipped.append(key)
                    continue
                used = taken[(error["span"], error["error_type"])]
                placed = locate(texts[index], error["span"], taken=used)
                assert placed.found, key
                used.add((placed.start, placed.end))
                where = {"segment": index, "start": placed.start, "end": placed.end}
                where["text"] = texts[index][placed.start : placed.end]
                listed = error.get("antecedants")
                pairs = None
                if listed is not None:
                    # A list shorter than votes reuses its last entry.
                    pairs = [listed[min(k, len(listed) - 1)] for k in range(error["votes"])]
                replayed = 0
                for k in range(error["votes"]):
                    paired = None
                    if pairs is not None:
                        found = locate_antecedent(texts, index, placed.start, pairs[k])
                        if found is None:  # no earlier occurrence: the span paired with itself
                            assert pairs[k].strip() in texts[index], (key, pairs[k])
                            self_paired.append(key)
                            continue
                        seg, at = found
                        paired = {"segment": seg, "start": at.start, "end": at.end}
                        paired["text"] = texts[seg][at.start : at.end]
                        antecedents[(doc, str(index), placed.start, error["error_type"])].append(
                            paired["text"]
                        )
                    workers[k].append(
                        {
                            **where,
                            "category": error["error_type"],
                            "paired": paired,
                            "comment": "",
                            "client_id": f"{index}-{len(workers[k])}",
                        }
                    )
                    replayed += 1
                if replayed:
                    expected[(*key, replayed)] += 1
        marks[doc] = dict(workers)
    return marks, expected, antecedents, skipped, self_paired


@pytest.mark.slow
def test_snac_dev_round_trip(app, client):
    from app.db import session_scope
    from app.documents.studies import create_study, get_study, import_documents
    from app.formats import iter_export, parse_documents

    path = shared_file("snac", "dev.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session,
            "snac-dev",
            REPO / "taxonomies" / "snac.yaml",
            annotators_per_doc=20,
            suggestions="off",
        )
        result = import_documents(session, study, parse_documents(path, "snac"))
    assert result.documents == len(raw)

    marks, expected, antecedents, skipped, self_paired = plan_marks(raw)
    assert skipped == UNREPLAYABLE
    assert self_paired == SELF_PAIRED
    total_input = sum(e["votes"] for d in raw.values() for s in d.values() for e in s["errors"])
    # the empty SceneE had 2 votes; each self-paired entry is one vote
    assert sum(k[-1] * n for k, n in expected.items()) == total_input - 2 - len(SELF_PAIRED)
    # one client replaying hundreds of workers: not the arrivals the per-client limit is for
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"

    posted = 0
    for doc, workers in marks.items():
        for worker, bodies in sorted(workers.items()):
            opened = client.post(
                "/api/assignments",
                json={"study": "snac-dev", "document": doc, "worker_id": f"worker-{worker}"},
            )
            assert opened.status_code == 201, opened.get_json()
            token = opened.get_json()["token"]
            for body in bodies:
                response = client.post(f"/api/assignments/{token}/annotations", json=body)
                assert response.status_code == 201, (doc, body, response.get_json())
                posted += 1
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    assert posted == sum(k[-1] * n for k, n in expected.items())

    with app.app_context():
        session = app.extensions["db_sessionmaker"]()
        try:
            exported = json.loads(
                "".join(iter_export(session, get_study(session, "snac-dev"), "snac"))
            )
        finally:
            session.close()

    assert list(exported) == list(raw)
    got: Counter = Counter()
    got_antecedents: dict[tuple, list[str]] = {}
    cross_segment = 0
    for doc, body in exported.items():
        assert list(body) == [str(i) for i in range(len(raw[doc]))]
        for index, segment in body.items():
            assert segment["text"] == raw[doc][index]["text"]
            for error in segment["errors"]:
                assert segment["text"][error["start"] : error["end"]] == error["span"]
                got[(doc, index, error["span"], error["error_type"], error["votes"])] += 1
                if "antecedants" in error:
                    offsets = error["antecedant_offsets"]
                    assert len(offsets) == len(error["antecedants"])
                    for text, where in zip(error["antecedants"], offsets, strict=True):
                        earlier = raw[doc][str(where["segment"])]["text"]
                        assert earlier[where["start"] : where["end"]] == text
                        cross_segment += where["segment"] < int(index)
                    place = (doc, index, error["start"], error["error_type"])
                    got_antecedents[place] = error["antecedants"]
    # repeated spans of a segment stay apart: the multiset of (segment, span, type, votes)
    assert got == expected
    assert {k: sorted(v) for k, v in got_antecedents.items()} == {
        k: sorted(v) for k, v in antecedents.items()
    }
    # antecedent votes of dev that point to an earlier segment (31 where an antecedent could
    # overlap its span; 7 more once it must end before the span starts)
    assert cross_segment == 38
