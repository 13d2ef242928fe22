"""Static assets under a content-hashed path, cached for a year and sent gzip-compressed.

The whole ``static/`` folder is hashed into one digest and served at
``/assets/<digest>/<path>``: the ES modules import one another by relative path
(``./annotate/state.js``), and those paths resolve under the same digest, so no import needs
rewriting and no import map is needed. Any change to any file changes the digest, so a
browser never mixes an old module with a new one. A hashed URL never changes its content:
``Cache-Control: public, max-age=31536000, immutable``. Each file is compressed once, at
start-up, with the standard library's gzip (brotli would need a compiled package); HTML and
JSON answers of the worker's pages and API are compressed per response (see :func:`compress`).
Also ``/favicon.ico``, so no page 404s on it.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import posixpath
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from flask import Blueprint, Flask, Response, abort, current_app, request, url_for

bp = Blueprint("assets", __name__)

YEAR = 31536000
IMMUTABLE = f"public, max-age={YEAR}, immutable"
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
MIN_COMPRESS_BYTES = 512
# Dynamic answers compressed per response: worker pages and the worker API. Admin pages are
# left alone: they carry CSRF tokens beside researcher-typed text (BREACH).
COMPRESSED_PREFIXES = ("/api/", "/a/", "/s/")
FAVICON_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    b'<rect width="32" height="32" rx="6" fill="#2450b2"/>'
    b'<path d="M9 24V8h3l4 9 4-9h3v16h-3V14l-3 7h-2l-3-7v10z" fill="#fff"/></svg>'
)


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes | None
    mimetype: str


@dataclass(frozen=True)
class AssetTable:
    digest: str
    files: dict[str, Asset]


def build_table(folder: Path) -> AssetTable:
    """Read every file under ``folder``: one digest over all paths and contents, each file
    with its gzip form when that is worth sending."""
    files: dict[str, Asset] = {}
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        body = path.read_bytes()
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
        mimetype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith(".js"):
            mimetype = "text/javascript"
        packed = None
        if mimetype.startswith(COMPRESSIBLE) and len(body) >= MIN_COMPRESS_BYTES:
            packed = gzip.compress(body, compresslevel=9, mtime=0)
            if len(packed) >= len(body):
                packed = None
        files[name] = Asset(body, packed, mimetype)
    return AssetTable(digest.hexdigest()[:16], files)


def _table() -> AssetTable:
    table = current_app.extensions.get("marginalia_assets")
    if table is None or current_app.debug:
        table = build_table(Path(current_app.static_folder or "static"))
        current_app.extensions["marginalia_assets"] = table
    return table


def asset_url(filename: str) -> str:
    """The hashed URL of ``static/<filename>`` (the template helper)."""
    return url_for("assets.asset", digest=_table().digest, filename=filename)


# A static import of a module by relative path: ``import … from "./x.js"``, ``import "./x.js"``
# (not a dynamic ``import("./x.js")``, which is loaded when needed).
STATIC_IMPORT = re.compile(rb"""(?:\bfrom|\bimport)\s*["'](\.\.?/[^"'\s]+\.js)["']""")
_IMPORTS: dict[tuple[str, str], tuple[str, ...]] = {}


def imported_modules(table: AssetTable, entry: str) -> tuple[str, ...]:
    """Every module ``static/<entry>`` imports, directly or through others, in the order
    first met (static imports only; paths as under ``static/``)."""
    key = (table.digest, entry)
    if key not in _IMPORTS:
        found: dict[str, None] = {}
        waiting = [entry]
        while waiting:
            name = waiting.pop(0)
            asset = table.files.get(name)
            for match in STATIC_IMPORT.finditer(asset.body if asset else b""):
                target = posixpath.normpath(
                    posixpath.join(posixpath.dirname(name), match.group(1).decode())
                )
                if target not in found and target != entry and target in table.files:
                    found[target] = None
                    waiting.append(target)
        _IMPORTS[key] = tuple(found)
    return _IMPORTS[key]


def module_preloads(*entries: str) -> list[str]:
    """The hashed URLs of every module the entry modules import (the template helper, for
    ``<link rel="modulepreload">``): the browser fetches the whole graph at once instead of
    one level of imports after another (a round trip per level)."""
    table = _table()
    names = dict.fromkeys(name for entry in entries for name in imported_modules(table, entry))
    return [url_for("assets.asset", digest=table.digest, filename=name) for name in names]


def _accepts_gzip() -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "").lower()


@bp.get("/assets/<digest>/<path:filename>")
def asset(digest: str, filename: str) -> Response:
    table = _table()
    found = table.files.get(filename)
    if found is None:
        abort(404)
    packed = found.gzipped is not None and _accepts_gzip()
    response = Response(found.gzipped if packed else found.body, mimetype=found.mimetype)
    if packed:
        response.headers["Content-Encoding"] = "gzip"
    response.headers["Vary"] = "Accept-Encoding"
    # An old digest (a page from before a deploy) still gets today's file, but not for a year.
    response.headers["Cache-Control"] = IMMUTABLE if digest == table.digest else "no-cache"
    return response


@bp.get("/favicon.ico")
def favicon() -> Response:
    response = Response(FAVICON_SVG, mimetype="image/svg+xml")
    response.headers["Cache-Control"] = "public, max-age=86400"
    return response


GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, mtime 0


def deflated_piece(data: bytes) -> bytes:
    """``data`` as raw deflate blocks ending on a full flush: pieces compressed apart and
    laid one after the other are one valid deflate stream (:func:`gzip_pieces`)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush(zlib.Z_FULL_FLUSH)


def gzip_pieces(pieces: list[tuple[bytes, bytes | None]]) -> bytes:
    """One gzip member of the pieces' bytes in order, each given as (raw, deflated by
    :func:`deflated_piece` or None to compress it now): a piece compressed once and kept is
    not compressed again. Decompresses to ``b"".join(raw for raw, _ in pieces)``."""
    out = [GZIP_HEADER]
    crc = size = 0
    for raw, deflated in pieces:
        out.append(deflated if deflated is not None else deflated_piece(raw))
        crc, size = zlib.crc32(raw, crc), size + len(raw)
    out.append(zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS).flush(zlib.Z_FINISH))
    out.append(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))
    return b"".join(out)


def compress(response: Response) -> Response:
    """gzip a worker page's or the worker API's HTML or JSON answer when the client takes it."""
    if (
        request.method not in ("GET", "HEAD")
        or not request.path.startswith(COMPRESSED_PREFIXES)
        or response.status_code != 200
        or response.direct_passthrough
        or response.is_streamed
        or "Content-Encoding" in response.headers
        or not (response.mimetype or "").startswith(("text/html", "application/json"))
        or not _accepts_gzip()
    ):
        return response
    body = response.get_data()
    if len(body) < MIN_COMPRESS_BYTES:
        return response
    response.set_data(gzip.compress(body, compresslevel=6, mtime=0))
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response


def register(app: Flask) -> None:
    """The asset routes, the ``asset_url`` template helper and response compression."""
    app.register_blueprint(bp)
    app.jinja_env.globals["asset_url"] = asset_url
    app.jinja_env.globals["module_preloads"] = module_preloads
    app.after_request(compress)
