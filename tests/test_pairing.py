"""Paired spans whose earlier span straddles a segment break (SNaC's release has such
antecedents), where the taxonomy allows it (``pair_across_segments``)."""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml

from app.documents.locating import crossing_text
from app.documents.taxonomy import load_taxonomy
from app.errors import InvalidInput
from app.models import Annotation
from tests.conftest import BACKENDS, REPO, make_database_url, make_study
from tests.helpers import api_add, count_rows, export_text, open_token

#          0         1         2
#          012345678901234567890
TEXTS = [
    "A cat sat. She grows",
    "taller and shorter. Then it ends.",
    "She grows taller and shorter again.",
]
EARLIER = {
    "segment": 0,
    "start": 11,
    "end_segment": 1,
    "end": 19,
    "text": "She grows taller and shorter.",  # "She grows" + " " + "taller and shorter."
}
REPEAT = {"segment": 2, "start": 0, "end": 28, "text": "She grows taller and shorter"}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def test_earlier_span_across_a_segment_break_is_stored_shown_and_exported(app, client):
    make_study(app, documents=[("doc-1", TEXTS)])
    token = open_token(client)
    body = {**REPEAT, "category": "RepE", "paired": EARLIER, "client_id": "r1"}
    answer = api_add(client, token, body)
    assert answer.status_code == 201, answer.get_json()
    (stored,) = client.get(f"/api/assignments/{token}").get_json()["annotations"]
    assert stored["paired"] == EARLIER
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    snac = json.loads(export_text(app, fmt="snac"))
    (error,) = snac["doc-1"]["2"]["errors"]
    assert error["antecedants"] == [EARLIER["text"]]
    assert error["antecedant_offsets"] == [{"segment": 0, "start": 11, "end": 19, "end_segment": 1}]
    # the default CSV and JSONL columns describe the span: it starts in segment 0 at 11 and
    # ends in segment 1 at 19 (paired_end alone, an offset of segment 1, read against
    # segment 0 would be an empty slice)
    with app.app_context():
        from app.db import session_scope
        from app.documents.studies import get_study
        from app.formats import iter_export

        with session_scope() as session:
            study = get_study(session, "demo")
            lines = "".join(iter_export(session, study, "jsonl"))
            again = "".join(  # the column once optional: accepted, not repeated
                iter_export(session, study, "jsonl", extra_columns=("paired_end_segment",))
            )
    (row,) = [json.loads(line) for line in lines.splitlines()]
    assert lines == again
    where = (row["paired_segment"], row["paired_start"], row["paired_end_segment"])
    assert (*where, row["paired_end"]) == (0, 11, 1, 19)
    assert crossing_text(TEXTS, 0, 11, 1, 19) == row["paired_text"] == EARLIER["text"]
    (line,) = csv.DictReader(io.StringIO(export_text(app, fmt="csv")))
    assert {k: line[k] for k in ("paired_segment", "paired_start", "paired_end")} == {
        "paired_segment": "0",
        "paired_start": "11",
        "paired_end": "19",
    }
    assert line["paired_end_segment"] == "1" and line["paired_text"] == EARLIER["text"]


@pytest.mark.parametrize(
    ("paired", "words"),
    [
        ({**EARLIER, "text": "She grows taller and shorter"}, "does not match"),
        ({**EARLIER, "text": "She growstaller and shorter."}, "does not match"),
        ({**EARLIER, "end_segment": 3}, "increasing segments"),
        ({**EARLIER, "segment": 1, "end_segment": 0}, "increasing segments"),
        ({**EARLIER, "end": 99}, "out of range"),
        ({**EARLIER, "end_segment": True}, "must be an integer"),
        ({**EARLIER, "end_segment": 2, "end": 3, "text": None}, "text"),
    ],
)
def test_bad_crossing_spans_are_refused_and_change_nothing(app, client, paired, words):
    make_study(app, documents=[("doc-1", TEXTS)])
    token = open_token(client)
    answer = api_add(client, token, {**REPEAT, "category": "RepE", "paired": paired})
    assert answer.status_code == 400 and words in answer.get_json()["error"]
    assert count_rows(app, Annotation) == 0


def test_earlier_span_may_not_end_after_the_marked_segment(app, client):
    make_study(app, documents=[("doc-1", TEXTS)])
    token = open_token(client)
    marked = {"segment": 1, "start": 0, "end": 6, "text": "taller"}
    across = {"segment": 0, "start": 0, "end_segment": 2, "end": 3}
    across["text"] = " ".join([TEXTS[0], TEXTS[1], TEXTS[2][:3]])
    answer = api_add(client, token, {**marked, "category": "RepE", "paired": across})
    assert answer.status_code == 400 and "before the annotated span" in answer.get_json()["error"]
    assert count_rows(app, Annotation) == 0


def test_taxonomy_without_the_flag_keeps_pairs_within_one_segment(app, client, tmp_path):
    raw = yaml.safe_load((REPO / "taxonomies" / "snac.yaml").read_text(encoding="utf-8"))
    for category in raw["categories"]:
        category.pop("pair_across_segments", None)
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    make_study(app, "strict", str(path), documents=[("doc-1", TEXTS)])
    token = open_token(client, study="strict")
    answer = api_add(client, token, {**REPEAT, "category": "RepE", "paired": EARLIER})
    assert answer.status_code == 400
    assert "pair_across_segments" in answer.get_json()["error"]
    within = {"segment": 1, "start": 0, "end": 18, "text": "taller and shorter"}
    answer = api_add(client, token, {**REPEAT, "category": "RepE", "paired": within})
    assert answer.status_code == 201  # an earlier segment is fine; crossing one is not


def test_taxonomy_flag_is_checked(tmp_path):
    categories = load_taxonomy(REPO / "taxonomies" / "snac.yaml")["categories"]
    flagged = [c["id"] for c in categories if c.get("pair_across_segments")]
    assert flagged == ["InconE", "RepE"]
    raw = yaml.safe_load((REPO / "taxonomies" / "snac.yaml").read_text(encoding="utf-8"))
    raw["categories"][3]["pair_across_segments"] = "yes"
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(InvalidInput, match="true or false"):
        load_taxonomy(path)
    raw["categories"][3]["pair_across_segments"] = True
    raw["categories"][0]["pair_across_segments"] = True  # a singleton has no earlier span
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert "pair_across_segments" not in load_taxonomy(path)["categories"][0]


@pytest.mark.slow
def test_snac_train_antecedents_across_segment_breaks_round_trip(app, client):
    """The release's antecedent votes that straddle a segment break (4 in SNaC train) can
    now be marked through the API and come back in the snac export with their place."""
    from app.documents.locating import locate
    from app.formats import DocumentInput
    from tests.antecedents import locate_across, locate_antecedent
    from tests.conftest import shared_file

    raw = json.loads(shared_file("snac", "train.json").read_text(encoding="utf-8"))
    crossing = []  # (document, segment, span placement, category, antecedent place, text)
    for doc, body in raw.items():
        texts = [body[str(i)]["text"] for i in range(len(body))]
        for index, text in enumerate(texts):
            for error in body[str(index)]["errors"]:
                placed = locate(text, error["span"])
                for antecedent in error.get("antecedants") or []:
                    if locate_antecedent(texts, index, placed.start, antecedent) is None:
                        where = locate_across(texts, index, placed.start, antecedent)
                        if where is not None:
                            crossing.append((doc, index, placed, error["error_type"], where))
    assert len(crossing) == 4
    documents = sorted({c[0] for c in crossing})
    inputs = [
        DocumentInput(d, [raw[d][str(i)]["text"] for i in range(len(raw[d]))]) for d in documents
    ]
    make_study(app, documents=inputs, annotators_per_doc=4)
    for n, (doc, index, placed, category, (seg, start, end_seg, end)) in enumerate(crossing):
        texts = [raw[doc][str(i)]["text"] for i in range(len(raw[doc]))]
        token = open_token(client, worker=f"w{n}", document=doc)
        paired = {"segment": seg, "start": start, "end_segment": end_seg, "end": end}
        paired["text"] = " ".join(
            [texts[seg][start:], *texts[seg + 1 : end_seg], texts[end_seg][:end]]
        )
        body = {
            "segment": index,
            "start": placed.start,
            "end": placed.end,
            "text": texts[index][placed.start : placed.end],
            "category": category,
            "paired": paired,
        }
        answer = api_add(client, token, body)
        assert answer.status_code == 201, answer.get_json()
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    snac = json.loads(export_text(app, fmt="snac"))
    offsets = [
        where
        for body in snac.values()
        for segment in body.values()
        for error in segment["errors"]
        for where in error.get("antecedant_offsets", [])
    ]
    assert sorted((o["segment"], o["end_segment"]) for o in offsets) == sorted(
        (c[4][0], c[4][2]) for c in crossing
    )
