"""Label Studio in and out: tasks with annotations (workers, or gold with --gold),
predictions as detector suggestions, relations as paired spans, textareas as comments, the
labeling config from the taxonomy, and bad tasks refused with a message."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sqlalchemy import select

from app.documents.taxonomy import parse_taxonomy
from app.errors import InvalidInput
from app.formats import iter_export_files, parse_documents
from app.formats.labelstudio_config import labeling_config
from app.models import Annotation, Assignment, GoldError, Suggestion
from tests.conftest import REPO, make_database_url
from tests.helpers import count_rows

TEXT = "Anna is an only child.\n\nHer brother Tom visits. She 🙂 smiles."
BROTHER = TEXT.index("Her brother")


def region(rid: str, start: int, end: int, label: str, **extra) -> dict:
    value = {"start": start, "end": end, "text": TEXT[start:end], "labels": [label]}
    return {
        "id": rid,
        "from_name": "label",
        "to_name": "text",
        "type": "labels",
        "value": value,
        **extra,
    }


def task(**overrides) -> dict:
    body = {
        "id": 7,
        "data": {"text": TEXT},
        "annotations": [
            {
                "completed_by": {"id": 3, "email": "ann@example.org"},
                "result": [
                    region("a", 0, 22, "InconE"),
                    region("b", BROTHER, BROTHER + 11, "InconE"),
                    {"type": "relation", "from_id": "a", "to_id": "b", "direction": "right"},
                    {
                        "id": "b",
                        "from_name": "comment",
                        "to_name": "text",
                        "type": "textarea",
                        "value": {"text": ["contradicts segment 0"]},
                    },
                    region("c", TEXT.index("Tom"), TEXT.index("Tom") + 3, "CharE"),
                ],
            },
            {"completed_by": 9, "result": [region("x", 0, 4, "CharE")]},
            {"was_cancelled": True, "result": [region("y", 0, 4, "GramE")]},
        ],
        "predictions": [
            {
                "model_version": "ner-v2",
                "score": 0.4,
                "result": [region("p", TEXT.index("Tom"), TEXT.index("Tom") + 3, "CharE")],
            }
        ],
    }
    body.update(overrides)
    return body


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def load(app, path: Path, gold: bool = False) -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(session, "ls", REPO / "taxonomies" / "snac.yaml")
        import_documents(session, study, parse_documents(path, "labelstudio", gold=gold), gold=gold)


def test_annotations_become_workers_and_predictions_suggestions(app, tmp_path):
    load(app, write(tmp_path, [task()]))
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        workers = {a.worker_id: a for a in session.scalars(select(Assignment))}
        assert set(workers) == {"ann@example.org", "labelstudio-9"}
        assert {a.status for a in workers.values()} == {"submitted"}
        marks = session.scalars(
            select(Annotation).where(Annotation.assignment_id == workers["ann@example.org"].id)
        ).all()
        paired = next(m for m in marks if m.category == "InconE")
        assert (paired.segment, paired.start, paired.text) == (1, 0, "Her brother")
        assert (paired.paired_segment, paired.paired_text) == (0, "Anna is an only child.")
        assert paired.comment == "contradicts segment 0"
        assert sorted(m.category for m in marks) == ["CharE", "InconE"]
        (hint,) = session.scalars(select(Suggestion)).all()
        assert (hint.segment, hint.text, hint.score, hint.detector) == (
            1,
            "Tom",
            0.4,
            "import:ner-v2",
        )


def test_gold_import_keeps_offsets_and_counts_annotators(app, tmp_path):
    load(app, write(tmp_path, [task()]), gold=True)
    from app.db import session_scope

    assert count_rows(app, Assignment) == 0
    with app.app_context(), session_scope() as session:
        gold = {
            (g.segment, g.start, g.end, g.category): g for g in session.scalars(select(GoldError))
        }
        assert gold[(0, 0, 4, "CharE")].votes == 1
        assert gold[(1, 0, 11, "InconE")].antecedents == ["Anna is an only child."]


def test_export_loads_back_and_carries_a_matching_config(app, client, tmp_path):
    load(app, write(tmp_path, [task()]))
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        files = dict(iter_export_files(session, get_study(session, "ls"), "labelstudio"))
    (exported,) = json.loads(files["tasks.json"])
    assert exported["data"]["text"] == TEXT
    config = ET.fromstring(files["labeling_config.xml"])
    values = [label.get("value") for label in config.iter("Label")]
    assert values == [
        c["id"]
        for c in parse_taxonomy((REPO / "taxonomies" / "snac.yaml").read_text())["categories"]
    ]
    used = {
        lab
        for a in exported["annotations"]
        for r in a["result"]
        for lab in r.get("value", {}).get("labels", [])
    }
    assert used <= set(values)
    names = {r.get("from_name") for a in exported["annotations"] for r in a["result"]} - {None}
    assert names == {"label", "comment"}
    for annotation in exported["annotations"]:
        for result in annotation["result"]:
            if result["type"] == "labels":
                value = result["value"]
                assert TEXT[value["start"] : value["end"]] == value["text"]


def test_labeling_config_escapes_taxonomy_text():
    taxonomy = parse_taxonomy(
        "name: x\ncategories:\n  - id: Bad\n    label: '\"/><script>alert(1)</script>'\n"
        "    definition: d\n"
    )
    config = labeling_config(taxonomy)
    assert "<script>" not in config
    (label,) = ET.fromstring(config).iter("Label")
    assert label.get("hint") == '"/><script>alert(1)</script>'


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": 1, "data": {"txt": "x"}}, "data.text"),
        (
            task(annotations=[{"result": [region("a", 0, 30, "CharE")]}]),
            "crosses a segment boundary",
        ),
        (
            task(
                annotations=[
                    {
                        "result": [
                            {
                                **region("a", 0, 4, "CharE"),
                                "value": {"start": 0, "end": 4, "text": "Bob", "labels": ["CharE"]},
                            }
                        ]
                    }
                ]
            ),
            "is not 'Bob'",
        ),
        (
            task(annotations=[{"result": [{"type": "relation", "from_id": "a", "to_id": "z"}]}]),
            "relation names a region",
        ),
        (
            task(annotations=[{"result": [{"type": "labels", "value": {"start": "0"}}]}]),
            "integer start",
        ),
        ("not a list", "must be a list of tasks"),
        (
            task(
                annotations=[{"result": [region("a", 0, 4, "CharE"), region("a", 5, 7, "GramE")]}]
            ),
            "region id 'a' is used twice",
        ),
    ],
)
def test_bad_tasks_are_refused_with_a_message(tmp_path, data, message):
    with pytest.raises(InvalidInput, match=message):
        parse_documents(write(tmp_path, [data] if isinstance(data, dict) else data), "labelstudio")


@pytest.mark.postgres
def test_a_nul_in_a_model_version_is_refused_not_a_database_error(request, tmp_path):
    from app import create_app

    url = make_database_url("postgres", request, tmp_path)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "SECRET_KEY": "test"})
    data = task()
    data["predictions"][0]["model_version"] = "v\u00001"
    try:
        with pytest.raises(InvalidInput, match="model version"):
            load(app, write(tmp_path, [data]))
        assert count_rows(app, Suggestion) == 0
    finally:
        app.extensions["db_engine"].dispose()
