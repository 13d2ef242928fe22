"""The Hugging Face export: Parquet tables (annotations, documents) and a dataset card with
the taxonomy, counts, agreement and licence; read back with pyarrow (``datasets`` is not a
dependency: its ``load_dataset("parquet", ...)`` reads these same files)."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from app.formats import iter_export_files
from app.formats.bundles import write_folder
from tests.conftest import make_study
from tests.helpers import DOCUMENTS, SEGMENTS, annotation_body, open_token, span

pq = pytest.importorskip("pyarrow.parquet")


def export(app) -> dict[str, bytes]:
    from app.db import session_scope
    from app.documents.studies import get_study

    with app.app_context(), session_scope() as session:
        return dict(iter_export_files(session, get_study(session, "demo"), "parquet"))


def test_parquet_dataset_has_one_row_per_annotation_and_a_card(app, client):
    make_study(app, documents=DOCUMENTS, suggestions="off")
    for worker in ("w1", "w2"):
        token = open_token(client, worker)
        body = annotation_body(0, "Anna", "CharE", client_id=f"{worker}-1")
        assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
        paired = annotation_body(
            2,
            "Anna is an only child.",
            "RepE",
            paired=span(0, "Anna is an only child."),
            comment="said twice | <b>",
            client_id=f"{worker}-2",
        )
        assert client.post(f"/api/assignments/{token}/annotations", json=paired).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    active = open_token(client, "w3")  # not submitted: not in the dataset
    body = annotation_body(0, "Anna", "CharE", client_id="w3-1")
    assert client.post(f"/api/assignments/{active}/annotations", json=body).status_code == 201

    files = export(app)
    assert set(files) == {"data/annotations.parquet", "data/documents.parquet", "README.md"}
    rows = pq.read_table(io.BytesIO(files["data/annotations.parquet"])).to_pylist()
    assert len(rows) == 4
    assert {r["worker_id"] for r in rows} == {"w1", "w2"}
    repeat = next(r for r in rows if r["category"] == "RepE")
    assert (repeat["segment"], repeat["paired_segment"], repeat["paired_text"]) == (
        2,
        0,
        "Anna is an only child.",
    )
    assert repeat["comment"] == "said twice | <b>"
    documents = pq.read_table(io.BytesIO(files["data/documents.parquet"])).to_pylist()
    assert [d["document"] for d in documents] == ["doc-1", "doc-2"]
    assert documents[0]["segments"] == SEGMENTS
    text = documents[0]["text"]
    for row in rows:
        assert text[row["document_start"] : row["document_end"]] == row["text"]
    assert json.loads(documents[0]["meta"]) == {}

    card = files["README.md"].decode()
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["license"] == "unknown"
    assert [c["data_files"] for c in front["configs"]] == [
        "data/annotations.parquet",
        "data/documents.parquet",
    ]
    assert "- Annotations: 4" in card and "- Workers: 2" in card and "- Documents: 2" in card
    # Both workers marked the same spans: agreement is perfect, by the METRICS definition.
    assert "Krippendorff's alpha by token): 1.000" in card
    assert "| CharE | New character without introduction | singleton | 2 | 1.000 |" in card


def test_card_escapes_taxonomy_text(app, tmp_path):
    from app.db import session_scope
    from app.documents.studies import create_study

    taxonomy = tmp_path / "t.yaml"
    taxonomy.write_text(
        "name: '<img src=x onerror=alert(1)>'\ncategories:\n  - id: Bad\n"
        "    label: 'a | b <script>'\n    definition: \"line\\nbreak\"\n",
        encoding="utf-8",
    )
    with app.app_context(), session_scope() as session:
        create_study(session, "demo", taxonomy)
    card = export(app)["README.md"].decode()
    assert "<script>" not in card and "<img" not in card
    assert "a \\| b &lt;script&gt;" in card


def test_datasets_loads_the_folder(app, client, tmp_path, monkeypatch):
    """``datasets.load_dataset`` on the exported folder (``datasets`` is a test extra)."""
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    make_study(app, documents=DOCUMENTS, suggestions="off")
    token = open_token(client, "w1")
    body = annotation_body(0, "Anna", "CharE", client_id="c1")
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    out = tmp_path / "hf"
    write_folder(out, export(app).items())
    cache = str(tmp_path / "cache")
    rows = datasets.load_dataset(
        "parquet", data_files=str(out / "data" / "annotations.parquet"), cache_dir=cache
    )["train"]
    assert rows.num_rows == 1 and rows[0]["text"] == "Anna" and rows[0]["worker_id"] == "w1"
    by_card = datasets.load_dataset(str(out), "documents", cache_dir=cache)["train"]
    assert by_card["document"] == ["doc-1", "doc-2"]


def test_the_card_names_the_licence_the_researcher_set(app, database_url, monkeypatch):
    """`marginalia study license` sets what the card's YAML says; a bad value changes
    nothing; --clear goes back to unknown."""
    from click.testing import CliRunner

    from app.cli import main

    make_study(app, documents=DOCUMENTS, suggestions="off")
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")

    def run(*args: str):
        return CliRunner().invoke(main, ["study", "license", "demo", *args])

    def card_licence() -> str:
        card = export(app)["README.md"].decode()
        return yaml.safe_load(card.split("---")[1])["license"]

    assert run().output.strip() == "unknown" and card_licence() == "unknown"
    assert run("cc-by-4.0").exit_code == 0 and card_licence() == "cc-by-4.0"
    bad = run("<script>alert(1)</script>")
    assert bad.exit_code == 1 and "identifier such as cc-by-4.0" in bad.output
    assert card_licence() == "cc-by-4.0"
    assert run("--clear").output.strip() == "unknown" and card_licence() == "unknown"
