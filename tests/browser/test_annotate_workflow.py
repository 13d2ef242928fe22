"""A worker does a whole document in Chromium; the CSV export then holds exactly their work."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.browser.helpers import (
    annotation_texts,
    category_button,
    drag_select,
    highlight_text,
    open_assignment,
    progress_text,
    wait_loaded,
    wait_saved,
    wait_value,
)
from tests.conftest import make_study

pytestmark = pytest.mark.browser

SEGMENTS = [
    "Anna Berg runs a bakery in the harbour town of Lisle. She is an only child and lives "
    "alone above the shop.",
    "Every morning Anna bakes rye bread for the fishermen, who pay her in herring.",
    "Anna's brother visits her and they argue about the shop. Tomas leaves before dawn.",
    "At the party, Anna bakes rye bread for the fishermen, who pay her in herring. "
    "Nobody thanks her.",
    "In the end the the bakery closes and Anna moves to the city 🌆 with the letter.",
]


def export_csv(app, slug: str) -> list[dict[str, str]]:
    """Rows of `marginalia export SLUG --format csv`, run as a researcher would."""
    script = Path(sys.executable).with_name("marginalia")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]
    env = {**os.environ, "DATABASE_URL": app.config["DATABASE_URL"]}
    done = subprocess.run(
        [*command, "export", slug, "--format", "csv"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def test_worker_does_a_whole_document_and_the_export_matches(app, live_server, pw_page, artifacts):
    make_study(app, slug="bakery", documents=[("bakery-1", SEGMENTS)])
    page = pw_page
    token = open_assignment(page, live_server.url, "bakery", "worker-7")
    assert progress_text(page) == "Segment 1 of 5"
    assert page.locator("#context-section").is_hidden()
    assert page.locator("#submit-button").is_hidden()

    # Segments 1 and 2: nothing wrong.
    page.click("#next-button")
    page.click("#next-button")
    assert progress_text(page) == "Segment 3 of 5"
    assert page.locator("#context .seg-text").count() == 2

    # Segment 3: an inconsistency paired with text picked in the context box, with a comment.
    drag_select(page, 2, "Anna's brother")
    wait_value(page, "#span-field", "Anna's brother")
    category_button(page, "InconE").click()
    assert (
        page.locator("#paired-prompt").inner_text()
        == "Now select the earlier text that this contradicts."
    )
    assert "awaiting-paired" in page.locator("#annotate").get_attribute("class")
    page.screenshot(path=str(artifacts / "annotate-awaiting-paired-1280x800.png"))
    assert page.locator("#add-button").is_disabled()
    drag_select(page, 0, "She is an only child")
    wait_value(page, "#paired-field", "She is an only child")
    page.fill("#comment-field", "She was an only child in segment 1.")
    page.click("#add-button")
    # A new character, chosen with the keyboard shortcut.
    drag_select(page, 2, "Tomas")
    wait_value(page, "#span-field", "Tomas")
    page.keyboard.press("1")
    assert category_button(page, "CharE").get_attribute("aria-pressed") == "true"
    page.click("#add-button")
    wait_saved(page)
    assert annotation_texts(page) == ["Anna's brother", "Tomas"]
    page.click("#next-button")

    # Segment 4: a repetition of segment 2 (partly dragged words snap to whole words), and a
    # scene error that widens to the whole sentence, which the worker then removes.
    drag_select(page, 3, "ye bread for the fishermen, who pay her in herrin")
    wait_value(page, "#span-field", "rye bread for the fishermen, who pay her in herring")
    page.keyboard.press("5")
    drag_select(page, 1, "rye bread for the fishermen, who pay her in herring")
    wait_value(page, "#paired-field", "rye bread for the fishermen, who pay her in herring")
    page.screenshot(path=str(artifacts / "annotate-paired-selection-1280x800.png"))
    page.keyboard.press("Control+Enter")
    drag_select(page, 3, "the party")
    category_button(page, "SceneE").click()
    expected_sentence = SEGMENTS[3].split(" Nobody")[0]
    assert page.input_value("#span-field") == expected_sentence
    page.click("#add-button")
    wait_saved(page)
    assert len(annotation_texts(page)) == 4
    page.screenshot(path=str(artifacts / "annotate-mid-document-1280x800.png"))
    page.locator('.annot-item[data-category="SceneE"] .remove-btn').click()
    wait_saved(page)
    assert annotation_texts(page) == [
        "Anna's brother",
        "Tomas",
        "rye bread for the fishermen, who pay her in herring",
    ]

    # Back a segment, then reload mid-document: everything comes back from the server.
    page.click("#prev-button")
    assert progress_text(page) == "Segment 3 of 5"
    wait_saved(page)
    page.reload()
    wait_loaded(page)
    assert progress_text(page) == "Segment 3 of 5"
    assert annotation_texts(page) == [
        "Anna's brother",
        "Tomas",
        "rye bread for the fishermen, who pay her in herring",
    ]
    assert (
        page.locator(".annot-comment").inner_text()
        == "Comment: She was an only child in segment 1."
    )
    keys = page.locator("#annotation-list .annot-item").evaluate_all(
        "els => els.map(e => e.dataset.key)"
    )
    assert highlight_text(page, keys[0]) == "Anna's brother"
    assert highlight_text(page, keys[1]) == "Tomas"
    paired = page.locator(f'[data-paired~="{keys[0]}"]').all_inner_texts()
    assert "".join(paired) == "She is an only child"

    # The list jumps to an annotation's segment.
    page.locator('.annot-item[data-category="RepE"] .annot-seg').click()
    assert progress_text(page) == "Segment 4 of 5"

    # Last segment: a grammar error with a comment and a missing reference after an emoji.
    page.click("#next-button")
    assert progress_text(page) == "Segment 5 of 5"
    assert page.locator("#next-button").is_hidden()
    drag_select(page, 4, "the the")
    wait_value(page, "#span-field", "the the")
    category_button(page, "GramE").click()
    page.fill("#comment-field", "doubled word")
    page.click("#add-button")
    drag_select(page, 4, "the letter")
    wait_value(page, "#span-field", "the letter")
    category_button(page, "RefE").click()
    page.click("#add-button")
    page.click("#submit-button")
    page.wait_for_url(f"**/a/{token}/done")
    code = page.locator("#completion-code").inner_text().strip()
    assert code

    rows = export_csv(app, "bakery")
    got = sorted(
        (
            int(r["segment"]),
            r["span_text"],
            r["category"],
            r["paired_segment"],
            r["paired_text"],
            r["comment"],
        )
        for r in rows
    )
    assert got == [
        (
            2,
            "Anna's brother",
            "InconE",
            "0",
            "She is an only child",
            "She was an only child in segment 1.",
        ),
        (2, "Tomas", "CharE", "", "", ""),
        (
            3,
            "rye bread for the fishermen, who pay her in herring",
            "RepE",
            "1",
            "rye bread for the fishermen, who pay her in herring",
            "",
        ),
        (4, "the letter", "RefE", "", "", ""),
        (4, "the the", "GramE", "", "", "doubled word"),
    ]
    for r in rows:
        text = SEGMENTS[int(r["segment"])]
        start, end = int(r["span_start"]), int(r["span_end"])
        assert text[start:end] == r["span_text"]
        assert start == text.index(r["span_text"])  # code points: the emoji counts once
        if r["paired_segment"]:
            earlier = SEGMENTS[int(r["paired_segment"])]
            assert earlier[int(r["paired_start"]) : int(r["paired_end"])] == r["paired_text"]
        assert r["worker_id"] == "worker-7"
        assert r["completion_code"] == code
    letter = next(r for r in rows if r["category"] == "RefE")
    assert int(letter["span_start"]) == len(SEGMENTS[4]) - len("the letter.")

    # Reopening the submitted assignment is read-only.
    page.goto(f"{live_server.url}/a/{token}")
    wait_loaded(page)
    assert code in page.locator("#banner").inner_text()
    assert page.locator("#annot-form").is_hidden()
    assert page.locator(".remove-btn").count() == 0
    assert len(annotation_texts(page)) == 5
    page.screenshot(path=str(artifacts / "annotate-read-only-1280x800.png"))


def test_changes_made_offline_survive_a_reload_and_reach_the_server(app, live_server, pw_page):
    from app.db import session_scope
    from app.models import Annotation

    make_study(app, slug="bakery", documents=[("bakery-1", SEGMENTS)])
    page = pw_page
    open_assignment(page, live_server.url, "bakery", "worker-8")
    page.route("**/annotations", lambda route: route.abort("internetdisconnected"))
    drag_select(page, 0, "Lisle")
    wait_value(page, "#span-field", "Lisle")
    page.keyboard.press("2")
    page.click("#add-button")
    page.wait_for_function(
        "() => document.getElementById('save-status').textContent === 'Offline — will retry'"
    )
    assert page.locator("#save-status").get_attribute("role") == "status"

    # The tab is reloaded while still offline: the outbox keeps the annotation.
    page.reload()
    wait_loaded(page)
    assert annotation_texts(page) == ["Lisle"]
    assert page.locator(".annot-item.is-pending").count() == 1

    page.unroute("**/annotations")
    wait_saved(page, timeout=20_000)
    assert page.locator("#save-status").inner_text().endswith("Saved")
    assert page.locator(".annot-item.is-pending").count() == 0
    with app.app_context(), session_scope() as session:
        stored = session.scalars(select(Annotation)).all()
        assert [(a.text, a.category, a.removed_at) for a in stored] == [("Lisle", "RefE", None)]
        assert session.scalar(select(func.count()).select_from(Annotation)) == 1

    # Offline again: a removal made now is kept across a reload and reaches the server later.
    page.route("**/annotations/*", lambda route: route.abort("internetdisconnected"))
    page.locator(".remove-btn").click()
    page.wait_for_function(
        "() => document.getElementById('save-status').textContent === 'Offline — will retry'"
    )
    page.reload()
    wait_loaded(page)
    assert annotation_texts(page) == []
    page.unroute("**/annotations/*")
    wait_saved(page, timeout=20_000)
    with app.app_context(), session_scope() as session:
        [stored] = session.scalars(select(Annotation)).all()
        assert stored.removed_at is not None


def test_a_page_left_open_after_submitting_elsewhere_turns_read_only(app, live_server, pw_page):
    import urllib.request

    make_study(app, slug="bakery", documents=[("bakery-1", SEGMENTS)])
    page = pw_page
    token = open_assignment(page, live_server.url, "bakery", "worker-9")
    request = urllib.request.Request(
        f"{live_server.url}/api/assignments/{token}/submit", data=b"", method="POST"
    )
    with urllib.request.urlopen(request) as answer:
        code = json.load(answer)["completion_code"]

    drag_select(page, 0, "Lisle")
    wait_value(page, "#span-field", "Lisle")
    page.keyboard.press("2")
    page.click("#add-button")
    page.wait_for_function("() => !document.getElementById('banner').hidden")
    assert "already been submitted" in page.locator("#banner").inner_text()
    assert page.locator("#annot-form").is_hidden()
    page.reload()
    wait_loaded(page)
    assert code in page.locator("#banner").inner_text()
    assert annotation_texts(page) == []
