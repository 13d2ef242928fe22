"""The command line's wording: counted nouns ("1 annotator", "imported 1 document"), a
too-short password refused before it is typed twice, "database created" for a new database,
a warning when a study wants suggestions that its taxonomy cannot receive, and `make run`
stopping cleanly on Ctrl+C."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.base import counted
from tests.conftest import REPO

SNAC_YAML = str(REPO / "taxonomies" / "snac.yaml")
NO_LABELS_YAML = """\
name: plain
categories:
  - id: typo
    label: Typo
    definition: A misspelt word.
"""


@pytest.fixture
def cli(database_url, monkeypatch):
    """Run ``marginalia`` in-process (this worktree's code) against a migrated database."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECRET_KEY", "test")
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(main, list(args), input=input)

    return invoke


def test_counted_nouns():
    assert counted(1, "document") == "1 document"
    assert counted(0, "document") == "0 documents"
    assert counted(2, "entity", "entities") == "2 entities"
    assert counted(1, "entity", "entities") == "1 entity"


def test_one_annotator_and_one_document_are_singular(cli, app, tmp_path):
    created = cli("study", "create", "solo", "--taxonomy", SNAC_YAML, "--annotators-per-doc", "1")
    assert created.exit_code == 0, created.output
    assert "1 annotator per document" in created.output
    docs = tmp_path / "one.json"
    docs.write_text(json.dumps({"d1": ["A single segment."]}), "utf-8")
    imported = cli("import", "solo", str(docs), "--format", "paragraphs", "--no-ner")
    assert imported.exit_code == 0, imported.output
    assert "imported 1 document (1 segment)" in imported.output
    assert "documents" not in imported.output


def test_a_short_password_is_refused_before_the_confirmation(cli, app):
    # Typed once, refused at once: the prompt asks again (here the input ends) instead of
    # asking to repeat a password that will be refused anyway.
    short = cli("researcher", "create", "r@example.org", input="short\n")
    assert short.exit_code != 0
    assert "at least 10 characters" in short.output
    assert "Repeat for confirmation" not in short.output
    mismatch = cli(
        "researcher", "create", "r@example.org", input="long enough one\nanother long one\n"
    )
    assert mismatch.exit_code == 1 and "do not match" in mismatch.output
    given = cli("researcher", "create", "r@example.org", "--password", "tiny")
    assert given.exit_code == 1 and given.output.startswith("error: ")
    ok = cli("researcher", "create", "r@example.org", input="long enough one\nlong enough one\n")
    assert ok.exit_code == 0, ok.output
    assert "researcher r@example.org created" in ok.output


def test_suggestions_without_detector_labels_warn_at_creation(cli, app, tmp_path):
    taxonomy = tmp_path / "plain.yaml"
    taxonomy.write_text(NO_LABELS_YAML, "utf-8")
    shown = cli("study", "create", "plain", "--taxonomy", str(taxonomy), "--suggestions", "shown")
    assert shown.exit_code == 0, shown.output
    assert "warning: no category of taxonomy 'plain' has a detector_label" in shown.output
    assert "workers will see no hints" in shown.output
    off = cli("study", "create", "quiet", "--taxonomy", str(taxonomy), "--suggestions", "off")
    assert off.exit_code == 0 and "warning" not in off.output
    labelled = cli("study", "create", "snac", "--taxonomy", SNAC_YAML, "--suggestions", "shown")
    assert labelled.exit_code == 0 and "warning" not in labelled.output


def test_admin_new_study_warns_about_detector_labels(app, client):
    import io

    from app.db import session_scope
    from app.researchers.accounts import create_researcher
    from tests.test_admin import EMAIL, PASSWORD, csrf, login

    with app.app_context(), session_scope() as session:
        create_researcher(session, EMAIL, PASSWORD)
    assert login(client).status_code == 302
    answer = client.post(
        "/admin/studies/new",
        data={
            "csrf_token": csrf(client),
            "slug": "plain",
            "taxonomy_file": (io.BytesIO(NO_LABELS_YAML.encode()), "plain.yaml"),
            "suggestions": "shown",
            "annotators_per_doc": "3",
        },
        content_type="multipart/form-data",
        follow_redirects=True,
    )
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200, page
    assert "flash-warn" in page and "has a detector_label" in page


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_stops_cleanly_on_ctrl_c(tmp_path):
    """Ctrl+C (SIGINT to the terminal's process group) ends `make run` without a crash and
    leaves no worker behind."""
    fake = tmp_path / "bin"
    fake.mkdir()
    pids = tmp_path / "pids"
    (fake / "python").touch()
    stamp = tmp_path / "stamp"
    stamp.touch()
    (fake / "marginalia").write_text(
        f'#!/bin/sh\ncase "$1" in web|worker) echo $$ >> {pids}; exec sleep 600;; '
        'esac\necho "$@"\n',
        "utf-8",
    )
    (fake / "marginalia").chmod(0o755)
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"BIN={fake}", f"RUN_STAMP={stamp}"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # as from a terminal: Ctrl+C's default action. A pytest started in the background
        # (`cmd &` in a script, as a CI runner may) ignores SIGINT, and an ignored signal is
        # inherited across exec: make would never see it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # generous deadlines: under a loaded CI machine a fork can wait seconds for a core
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 2):
        time.sleep(0.1)
    if not pids.exists() or len(pids.read_text().split()) < 2:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"make run did not start web and worker within 60 s: {proc.communicate()[0]}")
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"make run did not stop on Ctrl+C: {out}")
    assert "Segmentation fault" not in out and "core dumped" not in out, out
    time.sleep(0.2)
    for pid in pids.read_text().split():
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} outlived make run"
