"""A book-length document's payload: ``GET /api/assignments/<token>`` gzips the document's
~1 MB share once per process (kept deflated in the actions' cache) and only the worker's own
parts per request; the answer decompresses to exactly the plain one."""

from __future__ import annotations

import gzip
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from app.annotation.cache import cache_of
from app.web.assets import deflated_piece, gzip_pieces
from tests.conftest import make_study
from tests.helpers import annotation_body, open_token

SEGMENTS = [
    f"Teil {n}: Zoë sails past the café 🙂 at dawn; “quoted” <b>text</b>." for n in range(400)
]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=3000), st.booleans()), max_size=6))
def test_pieces_compressed_apart_make_one_gzip_member(pieces):
    given_pieces = [(raw, deflated_piece(raw) if kept else None) for raw, kept in pieces]
    assert gzip.decompress(gzip_pieces(given_pieces)) == b"".join(raw for raw, _ in pieces)


def test_the_payload_is_gzipped_around_the_documents_cached_share(app, client):
    make_study(app, documents=[("book", SEGMENTS)], suggestions="off")
    token = open_token(client, "reader", "book")
    body = annotation_body(3, "café", "CharE", texts=SEGMENTS, client_id="c1")
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    url = f"/api/assignments/{token}"
    for _again in range(2):  # the share compressed on the first, reused on the second
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        packed = client.get(url, headers={"Accept-Encoding": "gzip, deflate"})
        assert "Content-Encoding" not in plain.headers
        assert packed.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(packed.data) == plain.data
        assert plain.get_json()["annotations"][0]["text"] == "café"
        assert len(plain.get_json()["document"]["segments"]) == len(SEGMENTS)
    [entry] = cache_of(app.extensions["db_engine"]).documents.values()
    part = entry.part
    assert zlib.decompressobj(-zlib.MAX_WBITS).decompress(part.deflated) == part.share
    assert part.share.decode() in plain.data.decode()
