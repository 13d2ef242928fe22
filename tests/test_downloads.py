"""Every export format is a download linked from the dashboard, and the download is the
file ``marginalia export`` writes, byte for byte (a zip holds the files ``--out FOLDER``
writes), on SQLite and Postgres. The BooookScore download answered 500 (``KeyError:
'booookscore'``: the downloads' own table of formats lacked it) and the dashboard had no
link for it; the formats' registry is now the one table both read."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from app.formats import EXPORT_FORMATS, FILE_SET_FORMATS
from tests.conftest import BACKENDS, make_database_url, make_study
from tests.helpers import DOCUMENTS, annotation_body, api_add, cli_in_process, open_token
from tests.test_pairing import EARLIER, REPEAT, TEXTS
from tests.test_worker_management import ADMIN, create_researcher, logged_in


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return make_database_url(request.param, request, tmp_path)


def test_every_export_format_downloads_from_the_dashboard_as_the_cli_writes_it(
    app, client, database_url, tmp_path
):
    make_study(app, documents=[*DOCUMENTS, ("doc-3", TEXTS)])
    marks = {
        "w1": [annotation_body(0, "Anna", "CharE", comment="=1+1 looks like a formula")],
        "w2": [annotation_body(1, "brother", "RefE")],
        "w3": [],  # submitted, no mark
    }
    for worker, bodies in marks.items():
        token = open_token(client, worker=worker)
        for body in bodies:
            assert api_add(client, token, body).status_code == 201
        assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    token = open_token(client, worker="w1", document="doc-3")  # a pair across a segment break
    pair = {**REPEAT, "category": "RepE", "paired": EARLIER, "client_id": "r1"}
    assert api_add(client, token, pair).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200

    create_researcher(app, ADMIN, admin=True)
    ada = logged_in(app, ADMIN)
    page = ada.get("/admin/studies/demo").get_data(as_text=True)
    links = dict(re.findall(r'data-format="([^"]+)" href="([^"]+)"', page))
    assert set(links) == set(EXPORT_FORMATS), links
    env = {"DATABASE_URL": database_url}
    for fmt, href in links.items():
        answer = ada.get(href.replace("&amp;", "&"))
        assert answer.status_code == 200, (fmt, answer.get_data(as_text=True)[:200])
        out = tmp_path / fmt
        done = cli_in_process(env, "export", "demo", "--format", fmt, "--out", str(out))
        assert done.returncode == 0, (fmt, done.stderr)
        if fmt in FILE_SET_FORMATS:
            with zipfile.ZipFile(io.BytesIO(answer.get_data())) as bundle:
                downloaded = {name: bundle.read(name) for name in bundle.namelist()}
            written = {
                p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()
            }
            assert downloaded == written, fmt
        else:
            assert answer.get_data() == out.read_bytes(), fmt
        assert answer.get_data(), fmt
