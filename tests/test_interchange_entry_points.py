"""The interchange formats through ``marginalia import/export`` and the admin upload and
download: folders with --out, zips over HTTP, one-line errors, nothing half-written."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment
from tests.conftest import REPO, make_study, shared_file
from tests.helpers import DOCUMENTS, annotation_body, open_token
from tests.test_admin import login, upload


@pytest.fixture
def cli(database_url, monkeypatch, tmp_path):
    from app.cli import main

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args))

    return invoke


@pytest.fixture
def admin(app, client):
    from app.researchers.accounts import create_researcher

    with app.app_context(), session_scope() as session:
        create_researcher(session, "researcher@example.org", "a long enough password", role="admin")
    assert login(client).status_code == 302
    return client


def annotated_study(app, client) -> None:
    make_study(app, documents=DOCUMENTS, suggestions="off")
    token = open_token(client, "w1")
    body = annotation_body(0, "Anna", "CharE", client_id="c1", comment="first mention")
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200


def test_cli_thresh_import_and_brat_export_to_a_folder(app, cli, tmp_path):
    taxonomy = cli("taxonomy", "from-thresh", str(shared_file("thresh", "snac.yml")))
    assert taxonomy.exit_code == 0, taxonomy.output
    (tmp_path / "thresh.yaml").write_text(taxonomy.output, encoding="utf-8")
    assert cli("study", "create", "t", "--taxonomy", "thresh.yaml").exit_code == 0
    path = str(shared_file("thresh", "snac.json"))
    result = cli("import", "t", path, "--format", "thresh", "--no-ner")
    assert result.exit_code == 0, result.output
    assert "annotations kept as" in result.output
    refused = cli("export", "t", "--format", "brat")
    assert refused.exit_code == 1
    assert refused.output.strip() == "error: brat writes several files: pass --out FOLDER"
    assert cli("export", "t", "--format", "brat", "--out", "out").exit_code == 0
    assert (tmp_path / "out" / "annotation.conf").is_file()
    again = cli("export", "t", "--format", "brat", "--out", "out")
    assert again.exit_code == 1 and "exists and is not an empty folder" in again.output
    with app.app_context(), session_scope() as session:
        assert session.scalars(select(Assignment.platform)).first() == "import"


def test_cli_gold_needs_a_format_with_annotations(app, cli, tmp_path):
    make_study(app)
    (tmp_path / "p.json").write_text(json.dumps({"d": ["One."]}))
    result = cli("import", "demo", "p.json", "--gold", "--no-ner")
    assert result.exit_code == 1
    assert "--gold needs a file with annotations" in result.output


def test_cli_thresh_template_errors_are_one_line(cli, tmp_path):
    (tmp_path / "bad.yml").write_text("edits:\n  - name: 'has space'\n")
    result = cli("taxonomy", "from-thresh", "bad.yml")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: bad.yml: edits[0].name: 'has space' is not a valid id (letters, digits, _ . -)"
    )


def test_admin_downloads_zips_and_uploads_a_brat_zip(app, client, admin):
    annotated_study(app, client)
    answer = admin.get("/admin/studies/demo/export.brat")
    assert answer.status_code == 200 and answer.mimetype == "application/zip"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="demo.brat.zip"'
    names = zipfile.ZipFile(io.BytesIO(answer.data)).namelist()
    assert "annotation.conf" in names and "w1/doc-1.ann" in names
    thresh = admin.get("/admin/studies/demo/export.thresh")
    assert thresh.status_code == 200
    assert [e["id"] for e in json.loads(thresh.data)] == ["doc-1", "doc-2"]
    labelstudio = admin.get("/admin/studies/demo/export.labelstudio")
    assert set(zipfile.ZipFile(io.BytesIO(labelstudio.data)).namelist()) == {
        "tasks.json",
        "labeling_config.xml",
    }
    # Label Studio's zip goes back in as it came out: the same ids clash, nothing is stored.
    clash = upload(admin, labelstudio.data, "demo.labelstudio.zip", ner="")
    assert clash.status_code == 302  # queued; upload() ran the worker, which refused it
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "Import failed: " in page and "already has document &#39;doc-1&#39;" in page
    assert "brat (zip)" in page and "Hugging Face dataset (zip)" in page

    # The brat zip, renamed, goes back in as new documents with w1's work.
    bundle = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(answer.data)) as source, zipfile.ZipFile(bundle, "w") as out:
        for name in source.namelist():
            out.writestr(name.replace("doc-", "copy-"), source.read(name))
    answer = upload(admin, bundle.getvalue(), "back.zip", ner="")
    assert answer.status_code == 302
    page = admin.get("/admin/studies/demo").get_data(as_text=True)
    assert "1 annotation kept as 1 imported worker&#39;s assignment" in page
    with app.app_context(), session_scope() as session:
        workers = session.scalars(select(Assignment.worker_id).order_by(Assignment.id)).all()
    assert workers == ["w1", "w1"]


def test_admin_upload_of_a_bad_zip_is_a_form_error(app, admin):
    make_study(app)
    answer = upload(admin, b"not a zip", "x.zip", ner="")
    assert answer.status_code == 400
    assert "is neither a folder nor a zip file" in answer.get_data(as_text=True)


def test_pyarrow_is_a_runtime_dependency_and_the_dataset_download_works(app, client, admin):
    """The "Hugging Face dataset (zip)" download failed with 400 on a `make run` install,
    which installs the runtime dependencies only: pyarrow must be one of them."""
    import tomllib

    from tests.conftest import REPO

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = {
        dep.split(">")[0].split("=")[0].split("<")[0].strip() for dep in project["dependencies"]
    }
    assert "pyarrow" in runtime
    annotated_study(app, client)
    answer = admin.get("/admin/studies/demo/export.parquet")
    assert answer.status_code == 200, answer.data[:200]
    names = zipfile.ZipFile(io.BytesIO(answer.data)).namelist()
    assert "data/annotations.parquet" in names and "README.md" in names


# Run where pyarrow cannot be imported (None in sys.modules: ``import pyarrow`` raises
# ImportError, as on an install without the ``hf`` extra), against the test's database.
WITHOUT_PYARROW = """
import sys

sys.modules["pyarrow"] = None
from click.testing import CliRunner

from app import create_app
from app.cli import main
from tests.test_admin import login

app = create_app({"DATABASE_URL": sys.argv[1], "SECRET_KEY": "test", "TESTING": True})
client = app.test_client()
assert login(client).status_code == 302
answer = client.get("/admin/studies/demo/export.parquet")
print("page", answer.status_code, answer.get_data(as_text=True).count("needs pyarrow"))
result = CliRunner().invoke(main, ["export", "demo", "--format", "parquet", "--out", "hf"])
print("cli", result.exit_code, result.output.strip())
"""


def test_parquet_without_pyarrow_is_a_clear_error(app, client, admin, database_url, tmp_path):
    annotated_study(app, client)
    environment = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test"}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYARROW, database_url],
        cwd=tmp_path,
        env={**environment, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    page, cli = done.stdout.splitlines()[-2:]
    assert page.split()[:2] == ["page", "400"] and int(page.split()[2]) >= 1, page
    assert cli.startswith("cli 1 error: the parquet export needs pyarrow"), cli
    assert not (tmp_path / "hf").exists()
