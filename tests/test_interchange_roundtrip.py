"""Acceptance: SNaC dev (imported through the snac reader, every vote replayed as a worker
through the HTTP API, paired errors with their antecedent, some with comments) exported as
Label Studio and as brat, imported into fresh studies: identical annotations, worker by
worker (segment, start, end, category, paired span, comment)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from app.formats import iter_export_files, parse_documents
from app.formats.bundles import write_folder
from app.models import Annotation, Assignment, Document
from tests.conftest import BACKENDS, REPO, make_database_url, shared_file
from tests.test_snac_roundtrip import plan_marks

COMMENT = "see 'the letter' | ü <b>not html</b>"


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def annotations(app, slug: str) -> Counter:
    """Every live annotation of the study's submitted work, as comparable tuples."""
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        rows = session.execute(
            select(
                Document.external_id,
                Assignment.worker_id,
                Annotation.segment,
                Annotation.start,
                Annotation.end,
                Annotation.text,
                Annotation.category,
                Annotation.paired_segment,
                Annotation.paired_start,
                Annotation.paired_end,
                Annotation.paired_text,
                Annotation.comment,
                Annotation.paired_end_segment,
            )
            .join(Assignment, Assignment.id == Annotation.assignment_id)
            .join(Document, Document.id == Assignment.document_id)
            .where(
                Document.study.has(slug=slug),
                Assignment.status == "submitted",
                Annotation.removed_at.is_(None),
            )
        ).all()
    return Counter(tuple(row) for row in rows)


def segments(app, slug: str) -> dict[str, list[str]]:
    from app.db import session_scope

    with app.app_context(), session_scope() as session:
        documents = session.scalars(select(Document).where(Document.study.has(slug=slug)))
        return {d.external_id: [s.text for s in d.segments] for d in documents}


def new_study(app, slug: str, path: Path | None = None, fmt: str = "snac") -> None:
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents

    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session,
            slug,
            REPO / "taxonomies" / "snac.yaml",
            annotators_per_doc=20,
            suggestions="off",
        )
        if path is not None:
            import_documents(session, study, parse_documents(path, fmt))


def export_to(app, slug: str, fmt: str, out: Path) -> Path:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        write_folder(out, iter_export_files(session, get_study(session, slug), fmt))
    return out


@pytest.mark.slow
def test_snac_dev_through_label_studio_and_brat_comes_back_identical(app, client, tmp_path):
    path = shared_file("snac", "dev.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    new_study(app, "snac-dev", path)
    marks, expected, _, _, _ = plan_marks(raw)
    # one client replaying hundreds of workers: not the arrivals the per-client limit is for
    app.config["ARRIVAL_RATE_LIMIT"] = "100000 per minute"
    posted = 0
    for doc, workers in marks.items():
        for worker, bodies in sorted(workers.items()):
            opened = client.post(
                "/api/assignments",
                json={"study": "snac-dev", "document": doc, "worker_id": f"worker-{worker}"},
            )
            token = opened.get_json()["token"]
            for body in bodies:
                posted += 1
                if posted % 7 == 0:
                    body = {**body, "comment": COMMENT}
                response = client.post(f"/api/assignments/{token}/annotations", json=body)
                assert response.status_code == 201, response.get_json()
            assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    source = annotations(app, "snac-dev")
    assert sum(source.values()) == sum(k[-1] * n for k, n in expected.items()) == posted
    assert any(row[7] is not None for row in source)  # paired spans are in the set
    assert any(row[11] == COMMENT for row in source)

    folder = export_to(app, "snac-dev", "labelstudio", tmp_path / "ls")
    tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    assert {r["type"] for t in tasks for a in t["annotations"] for r in a["result"]} == {
        "labels",
        "relation",
        "textarea",
    }
    new_study(app, "from-ls", folder / "tasks.json", "labelstudio")
    assert annotations(app, "from-ls") == source
    assert segments(app, "from-ls") == segments(app, "snac-dev")

    folder = export_to(app, "snac-dev", "brat", tmp_path / "brat")
    assert (folder / "annotation.conf").is_file()
    new_study(app, "from-brat", folder, "brat")
    assert annotations(app, "from-brat") == source
    assert segments(app, "from-brat") == segments(app, "snac-dev")
