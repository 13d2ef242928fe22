"""Static assets: content-hashed URLs cached for a year, gzip when the client takes it,
relative ES-module imports still resolving, the worker's HTML and JSON compressed, admin
pages not (BREACH), and a favicon instead of a 404."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from urllib.parse import urljoin

from app.web.assets import build_table
from tests.conftest import REPO, make_study
from tests.helpers import open_token

GZIP = {"Accept-Encoding": "gzip, deflate, br"}
ASSET = re.compile(r'(?:src|href)="(/assets/[0-9a-f]{16}/[^"]+)"')
IMPORT = re.compile(r'^\s*(?:import|export)\b[^"\']*?from\s+["\'](\.[^"\']+)["\']', re.M)


SCRIPT = re.compile(r'<script type="module" src="(/assets/[0-9a-f]{16}/[^"]+)"')
PRELOAD = re.compile(r'<link rel="modulepreload" href="(/assets/[0-9a-f]{16}/[^"]+)"')


def page_assets(client, path: str) -> list[str]:
    return ASSET.findall(client.get(path).get_data(as_text=True))


def module_graph(client, entries: list[str]) -> set[str]:
    """Every module URL the entries import, directly or not, found by fetching them."""
    seen, queue = set(), list(entries)
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert answer.mimetype == "text/javascript"
        queue += [urljoin(url, spec) for spec in IMPORT.findall(answer.get_data(as_text=True))]
    return seen


def test_annotate_page_links_hashed_assets_cached_for_a_year_and_gzipped(app, client):
    make_study(app)
    token = open_token(client)
    urls = page_assets(client, f"/a/{token}")
    assert {u.split("/", 3)[3] for u in urls} >= {"css/marginalia.css", "js/annotate.js"}
    for url in urls:
        plain = client.get(url)
        packed = client.get(url, headers=GZIP)
        assert plain.status_code == packed.status_code == 200
        assert packed.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert packed.headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in packed.headers["Vary"]
        assert "Content-Encoding" not in plain.headers
        on_disk = (REPO / "static" / url.split("/", 3)[3]).read_bytes()
        assert gzip.decompress(packed.get_data()) == plain.get_data() == on_disk
        assert len(packed.get_data()) < len(on_disk) * 0.6


def test_every_relative_module_import_resolves_under_the_same_digest(app, client):
    make_study(app)
    entries = SCRIPT.findall(client.get(f"/a/{open_token(client)}").get_data(as_text=True))
    assert [u.rsplit("/", 1)[1] for u in entries] == ["annotate.js", "presence.js"]
    entry = entries[0]
    seen = module_graph(client, entries)
    digest = entry.split("/")[2]
    assert all(u.split("/")[2] == digest for u in seen)
    assert len(seen) >= 12  # the entry, its feature modules and the shared ones


def test_the_annotate_page_preloads_its_data_and_every_module_it_imports(app, client):
    """The browser fetches the page's data and its whole module graph at once
    (``modulepreload``, ``preload`` of the API answer) instead of one level of imports
    after another, then the data."""
    make_study(app)
    token = open_token(client)
    html = client.get(f"/a/{token}").get_data(as_text=True)
    entries = SCRIPT.findall(html)
    preloaded = PRELOAD.findall(html)
    assert len(preloaded) == len(set(preloaded))
    assert set(preloaded) == module_graph(client, entries) - set(entries)
    data = re.findall(
        r'<link rel="preload" href="([^"]+)" as="fetch" crossorigin="anonymous">', html
    )
    assert data == [f"/api/assignments/{token}"]
    assert client.get(data[0]).status_code == 200


def test_digest_follows_content_and_old_digests_are_not_cached(app, client, tmp_path: Path):
    folder = tmp_path / "static"
    (folder / "js").mkdir(parents=True)
    (folder / "js" / "a.js").write_text("export const a = 1;\n")
    first = build_table(folder).digest
    assert build_table(folder).digest == first
    (folder / "js" / "a.js").write_text("export const a = 2;\n")
    assert build_table(folder).digest != first
    make_study(app)
    [css] = [u for u in page_assets(client, f"/a/{open_token(client)}") if u.endswith(".css")]
    stale = re.sub(r"/assets/[0-9a-f]{16}/", "/assets/0000000000000000/", css)
    answer = client.get(stale)
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-cache"


def test_unknown_and_escaping_asset_paths_are_404(client):
    for path in (
        "/assets/0123456789abcdef/js/nope.js",
        "/assets/0123456789abcdef/../app/config.py",
        "/assets/0123456789abcdef/%2e%2e/pyproject.toml",
        "/assets/0123456789abcdef/",
    ):
        assert client.get(path).status_code == 404, path


def test_worker_html_and_json_are_compressed_admin_pages_are_not(app, client):
    make_study(app, documents=[("doc-1", ["A segment of some length. " * 40, "Another."])])
    token = open_token(client)
    for path in (f"/a/{token}", f"/api/assignments/{token}"):
        packed = client.get(path, headers=GZIP)
        assert packed.headers.get("Content-Encoding") == "gzip", path
        plain = client.get(path)
        assert "Content-Encoding" not in plain.headers
        assert gzip.decompress(packed.get_data()) == plain.get_data()
    login = client.get("/admin/login", headers=GZIP)
    assert login.status_code == 200 and "Content-Encoding" not in login.headers


def test_favicon_is_served(client):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 200 and answer.mimetype == "image/svg+xml"
    assert b"<svg" in answer.get_data()
    assert 'rel="icon"' in client.get("/admin/login").get_data(as_text=True)
