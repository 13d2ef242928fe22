"""Thresh's MQM data (one entry per rater, each edit's ``annotation`` holding the
subtype and its severity, as Thresh's own converter writes it) keeps its raters as workers
(one document per item, so agreement is computed) and its answers as attributes, and comes
back with them. The template and entries below follow Thresh's ``mqm.yml`` and
``mqm.json`` in shape; the text is ours."""

from __future__ import annotations

import json

import pytest

from app.documents.taxonomy import parse_taxonomy
from app.formats import iter_export, parse_documents
from app.formats.thresh_typology import template_to_yaml
from tests.conftest import BACKENDS, make_database_url

TEMPLATE = """template_name: mqm
template_label: MQM
edits:
  - name: accuracy
    label: "Accuracy"
    color: red
    enable_output: true
    annotation:
      - name: accuracy_type
        question: "Select the accuracy problem."
        options:
          - name: mistranslation
            label: "Mistranslation"
            question: "Rate the severity"
            options: likert-3
          - name: omission
            label: "Omission"
            questions: "Rate the severity"
            options: likert-3
  - name: akward
    label: "Style/Awkward"
    color: teal
    enable_output: true
    annotation:
      - name: akward_type
        question: "Rate the severity"
        options: likert-3
"""
SOURCE = "The patient had gone through therapy."
TARGET = "Der Patient hatte eine Therapie gemacht."
MISTRANSLATION = {"accuracy_type": {"val": "mistranslation", "mistranslation": "a lot"}}


def entry(n: int, rater: str, edits: list, target: str = TARGET) -> dict:
    meta = {"system": "sys-A", "doc": "news.1", "seg_id": "7", "rater": rater}
    return {"metadata": meta, "source": SOURCE, "target": target, "edits": edits, "id": n}


ENTRIES = [
    entry(
        1,
        "rater1",
        [
            {
                "id": 0,
                "category": "accuracy",
                "output_idx": [[23, 31]],
                "annotation": MISTRANSLATION,
            },
            {
                "id": 1,
                "category": "akward",
                "output_idx": [[32, 39]],
                "annotation": {"akward_type": "somewhat"},
            },
        ],
    ),
    entry(
        2,
        "rater2",
        [
            {
                "id": 0,
                "category": "accuracy",
                "output_idx": [[23, 31]],
                "annotation": {"accuracy_type": {"val": "omission", "omission": "minor"}},
            },
        ],
    ),
    entry(3, "rater3", []),  # read it, found nothing
    entry(4, "rater1", [], target="Ein anderer Satz."),
]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def study_with(app, slug: str, path) -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    taxonomy = parse_taxonomy(template_to_yaml(path.parent / "mqm.yml"))
    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, slug, taxonomy=taxonomy, suggestions="off")
        import_documents(session, study, parse_documents(path, "thresh"))


def answers(entries: list) -> set:
    """(target, rater, category, ranges, annotation) of every edit, and each (target, rater)."""
    edits, seen = set(), set()
    for item in entries:
        raters = item.get("annotators") or [item["metadata"]["rater"]]
        seen |= {(item["target"], r) for r in raters}
        for edit in item["edits"]:
            for rater in edit.get("annotators") or raters:
                key = json.dumps(edit.get("annotation"), sort_keys=True)
                edits.add((item["target"], rater, edit["category"], str(edit["output_idx"]), key))
    return edits | seen


def test_mqm_raters_and_severities_survive_import_and_export(app, tmp_path):
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality.reporting import study_report

    (tmp_path / "mqm.yml").write_text(TEMPLATE, encoding="utf-8")
    taxonomy = parse_taxonomy(template_to_yaml(tmp_path / "mqm.yml"))
    accuracy = taxonomy["categories"][0]["attributes"]
    assert [a["id"] for a in accuracy] == ["accuracy_type", "mistranslation", "omission"]
    assert accuracy[1]["values"] == ["minor", "somewhat", "a lot"]
    path = tmp_path / "mqm.json"
    path.write_text(json.dumps(ENTRIES), encoding="utf-8")
    study_with(app, "mqm", path)
    with app.app_context(), session_scope() as session:
        study = get_study(session, "mqm")
        exported = json.loads("".join(iter_export(session, study, "thresh")))
        report = study_report(session, study)
    assert len(exported) == 2  # the three raters' entries of one item are one document
    assert exported[0]["annotators"] == ["rater1", "rater2", "rater3"]
    assert "rater" not in exported[0]["metadata"]
    assert answers(exported) == answers(ENTRIES)
    assert report["attributes"]["mistranslation"] == {"a lot": 1}
    assert report["attributes"]["accuracy_type"] == {"mistranslation": 1, "omission": 1}
    assert report["agreement"]["workers"] == 3
    again = tmp_path / "again.json"
    again.write_text(json.dumps(exported), encoding="utf-8")
    study_with(app, "mqm-again", again)
    with app.app_context(), session_scope() as session:
        assert (
            json.loads("".join(iter_export(session, get_study(session, "mqm-again"), "thresh")))
            == exported
        )
