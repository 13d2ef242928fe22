"""FALTE markup is parsed in linear time: crafted ``<span class='x ne-a…``
markup that made the old backtracking regex run for tens of seconds is handled in well under
a second, and the output is the old parser's on FALTE's real sample and on generated markup."""

from __future__ import annotations

import html
import io
import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.entities.markup import strip_entity_markup
from tests.conftest import make_study, shared_file
from tests.test_admin import admin, csrf, researcher  # noqa: F401 - fixtures

# The parser this replaces, kept as the oracle for well-formed and odd-but-harmless markup.
_OLD_SPAN = re.compile(
    r"""<span\b[^>]*?\bclass\s*=\s*["'][^"']*?\bne-(\w+)[^"']*["'][^>]*>(.*?)</span\s*>""",
    re.IGNORECASE | re.DOTALL,
)
_OLD_TAG = re.compile(r"<[^>]*>")


def _old_plain(fragment: str) -> str:
    return html.unescape(_OLD_TAG.sub("", fragment))


def old_strip(segment: str) -> tuple[str, list[tuple[int, int, str]]]:
    parts, marks, length, pos = [], [], 0, 0
    for match in _OLD_SPAN.finditer(segment):
        before = _old_plain(segment[pos : match.start()])
        parts.append(before)
        length += len(before)
        inner = _old_plain(match.group(2))
        if inner.strip():
            start = length + (len(inner) - len(inner.lstrip()))
            marks.append((start, start + len(inner.strip()), match.group(1)))
        parts.append(inner)
        length += len(inner)
        pos = match.end()
    parts.append(_old_plain(segment[pos:]))
    text = "".join(parts)
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    return text, [
        (s - lead, e - lead, c) for s, e, c in marks if s >= lead and e - lead <= len(text)
    ]


CRAFTED = {
    "unterminated class value": "<span class='x ne-" + "a" * 100_000,
    "repeated open tags": "<span class='x ne-a" * 5_000,
    "class values without quotes closing": "<span " + "class='x ne-a " * 7_000 + ">",
    "open tags without a close": "<span class='ne ne-1'>Anna " * 4_000,
    "lone angle brackets": "<" * 100_000,
    "spans inside one tag": "<span" * 20_000 + " class='ne ne-1'>x</span>",
    "close tags without >": "<span class='ne ne-1'>x</span    " * 3_000,
}


@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_markup_parses_in_linear_time(name):
    segment = CRAFTED[name]
    assert len(segment) >= 60_000
    started = time.process_time()
    text, marks = strip_entity_markup(segment)
    assert time.process_time() - started < 1.0, name
    for start, end, _ in marks:
        assert text[start:end] == text[start:end].strip()


def test_doubling_the_input_roughly_doubles_the_time():
    """Linear, not quadratic: 4x the input costs far less than 16x the time."""

    def cost(n: int) -> float:
        segment = "<span class='x ne-a" * n + "<" * n
        started = time.perf_counter()
        for _ in range(3):
            strip_entity_markup(segment)
        return time.perf_counter() - started

    small, large = cost(5_000), cost(20_000)
    assert large < max(small, 0.005) * 10


def test_same_output_as_before_on_the_falte_sample():
    stories = json.loads(shared_file("falte", "stories.json").read_text())
    segments = [raw for story in stories.values() for raw in story["sentences"]]
    assert segments
    for raw in segments:
        assert strip_entity_markup(raw) == old_strip(raw)


FRAGMENTS = st.sampled_from(
    [
        '<span class="ne ne-1">',
        "<span class = 'ne ne-22'>",
        '<SPAN CLASS="x NE-3 y">',
        '<span id="a" class="plain">',
        '<span class="ne-x" class="ne ne-4">',
        "</span>",
        "</span >",
        "</SPAN>",
        "<b>",
        "</b>",
        "<p>",
        "<",
        ">",
        "&amp;",
        "&#39;",
        "&eacute;",
        " ",
        "  ",
        "\n",
        "Anna",
        "Zoë",
        "café 🙂",
        ", ",
        "x",
    ]
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(FRAGMENTS, max_size=25).map("".join))
def test_same_output_as_the_old_parser_on_generated_markup(segment):
    assert strip_entity_markup(segment) == old_strip(segment)


def test_a_crafted_falte_upload_is_handled_quickly_over_http(app, admin):  # noqa: F811
    """The attack as it came in: a ~100 KB FALTE upload of crafted markup, one request."""
    make_study(app, documents=[("doc-0", ["Existing."])])
    crafted = ["<span class='x ne-a" * 1_000, "<span class='x ne-" + "a" * 19_000]
    crafted += ["<span class='ne ne-1'>Anna " * 700, "<" * 19_000, "Plain <b>end</b>."]
    content = json.dumps({"crafted": {"sentences": crafted * 2}}).encode()
    assert len(content) > 90_000
    started = time.process_time()
    answer = admin.post(
        "/admin/studies/demo/documents",
        data={"csrf_token": csrf(admin), "file": (io.BytesIO(content), "f.json"), "ner": ""},
        content_type="multipart/form-data",
    )
    assert time.process_time() - started < 2.0
    assert answer.status_code == 302, answer.get_data(as_text=True)[-300:]
