"""The page's requests, in Chromium over the 26-segment SNaC summary: a document
costs fewer requests (the moves of half a minute are one position update, which carries the
segment views' hint events; the page's load and a stored write stamp the activity, so no
heartbeat goes within a minute of either) and every event and measured second still reaches
the server: unsent position updates coalesce in the outbox (seconds summed per segment, the
segments passed kept as seen, events merged) and a reload replays them."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.models import Assignment, SegmentTime, SuggestionEvent
from tests.browser.helpers import hide_tab, open_assignment, progress_text, wait_loaded, wait_saved
from tests.browser.test_annotate_long import first_word, make_long_study

pytestmark = pytest.mark.browser

SEGMENTS = 26


def kind_of(method: str, url: str) -> str | None:
    """The API request's kind, for counting (None: not an API request)."""
    path = url.split("?", 1)[0]
    if "/api/assignments/" not in path:
        return None
    tail = path.split("/api/assignments/", 1)[1].split("/")
    if len(tail) == 1:
        return "get"
    if tail[1] == "suggestions":
        return "events (batch)" if tail[2] == "events" else "event"
    return {"annotations": "add" if method == "POST" else "remove"}.get(tail[1], tail[1])


def record_requests(page) -> tuple[Counter, list[dict]]:
    """Count the page's API requests by kind; keep the position bodies."""
    counts: Counter = Counter()
    positions: list[dict] = []

    def seen(request) -> None:
        kind = kind_of(request.method, request.url)
        if kind is None:
            return
        counts[kind] += 1
        if kind == "position":
            positions.append(json.loads(request.post_data or "{}"))

    page.on("request", seen)
    return counts, positions


def stored(app, token: str) -> tuple[dict[int, float], set[tuple[int, str]]]:
    with app.app_context(), session_scope() as session:
        aid = session.scalar(select(Assignment.id).where(Assignment.token == token))
        times = {
            row.segment: row.active_seconds
            for row in session.scalars(select(SegmentTime).where(SegmentTime.assignment_id == aid))
        }
        events = {
            (e.suggestion_id, e.event)
            for e in session.scalars(
                select(SuggestionEvent).where(SuggestionEvent.assignment_id == aid)
            )
        }
    return times, events


def sent_seconds(positions: list[dict]) -> dict[int, float]:
    """The active seconds the page sent, summed per segment."""
    total: dict[int, float] = {}
    for body in positions:
        for segment, seconds in (body.get("active") or {}).items():
            total[int(segment)] = total.get(int(segment), 0.0) + seconds
    return total


def test_a_document_costs_fewer_requests_and_every_event_and_second_is_stored(
    app, live_server, pw_page
):
    # A hint on every segment of the real summary. The page's clock is the test's: the walk
    # takes 2.5 s of it, within the half minute a move's position update waits for later
    # moves (and within the wall-clock time the server's time budget allows).
    ids = make_long_study(app, None, [(i, first_word(i)) for i in range(SEGMENTS)])
    page = pw_page
    page.clock.install()
    counts, positions = record_requests(page)
    token = open_assignment(page, live_server.url, "long", "w1")
    page.click("summary")  # the instructions, read and closed
    # Use the first hint (an add and its "accepted"), dismiss the second segment's.
    page.locator(f'#hint-list [data-suggestion-item="{ids[0]}"] button', has_text="Use").click()
    page.click("#add-button")
    wait_saved(page)
    for segment in range(1, SEGMENTS):
        page.mouse.move(300 + segment, 300)  # a reader's input: the time counts
        page.clock.run_for(100)
        page.keyboard.press("n")
        if segment == 1:
            item = f'#hint-list [data-suggestion-item="{ids[1]}"] button'
            page.locator(item, has_text="Dismiss").click()
        wait_saved(page)
    assert progress_text(page) == f"Segment {SEGMENTS} of {SEGMENTS}"
    assert counts["position"] == 0, counts  # every move is waiting in the one deferred update
    page.click("#submit-button")
    page.wait_for_url("**/done")

    total = sum(counts.values())
    print(f"\nrequests for the 26-segment document: {total} {dict(sorted(counts.items()))}")
    # Before, the same walk cost a position update per move (25), a "shown" batch per segment
    # view and a request per dismissal besides, and a heartbeat on load. Now the moves of the
    # half minute are one update, which the submit sends first with every hint event that
    # waited (the last segment's too); the page's load stamped the activity, no heartbeat.
    assert counts["position"] == 1 and counts["events (batch)"] == 0, counts
    assert counts["event"] == 1, counts  # the add's "accepted"
    assert counts["get"] == 1 and counts["heartbeat"] == 0 and counts["submit"] == 1, counts
    assert counts["add"] == 1 and total == 5, counts

    times, events = stored(app, token)
    assert events == {(i, "shown") for i in ids} | {(ids[0], "accepted"), (ids[1], "dismissed")}
    assert set(times) == set(range(SEGMENTS))  # every segment seen
    sent = sent_seconds(positions)
    assert set(sent) == set(range(SEGMENTS)), sent  # the segments passed are named, seen
    assert sum(sent.values()) > 0, "no active time was measured"
    for segment, seconds in sent.items():
        assert times[segment] == pytest.approx(seconds, abs=0.01), (segment, times, sent)


def test_a_deferred_update_goes_half_a_minute_after_the_first_move(app, live_server, pw_page):
    make_long_study(app, None)
    page = pw_page
    page.clock.install()
    counts, positions = record_requests(page)
    token = open_assignment(page, live_server.url, "long", "w1")
    page.click("summary")
    for segment in (1, 2):
        page.mouse.move(300 + segment, 300)
        page.clock.run_for(2_000)
        page.keyboard.press("n")
    page.clock.run_for(25_000)  # 27 s after the first move: still waiting
    assert counts["position"] == 0, counts
    page.clock.run_for(4_000)  # past 30 s: sent, both moves in one update
    wait_saved(page)
    assert counts["position"] == 1, counts
    assert positions[0]["segment"] == 2 and set(positions[0]["active"]) >= {"0", "1"}, positions
    assert set(stored(app, token)[0]) == {0, 1, 2}


def outbox_ops(page) -> list[dict]:
    return page.evaluate(
        "() => JSON.parse(localStorage.getItem('marginalia.outbox.' +"
        " document.getElementById('annotate').dataset.token) || '[]')"
    )


def test_unsent_moves_coalesce_into_one_position_and_a_reload_replays_it(app, live_server, pw_page):
    ids = make_long_study(app, None, [(i, first_word(i)) for i in range(6)])
    page = pw_page
    counts, positions = record_requests(page)
    token = open_assignment(page, live_server.url, "long", "w1")
    page.click("summary")

    # The network fails for position updates: five moves (and one back) wait in the outbox.
    page.route("**/position", lambda route: route.abort("internetdisconnected"))
    for segment in range(1, 6):
        page.mouse.move(300 + segment, 300)
        page.wait_for_timeout(300)
        page.keyboard.press("n")
    assert progress_text(page) == "Segment 6 of 26"
    page.mouse.move(500, 300)
    page.wait_for_timeout(300)
    page.keyboard.press("p")  # back to segment 5
    ops = outbox_ops(page)
    # One position op, deferred, carrying every segment's seconds and the shown events.
    waiting = [o for o in ops if o["kind"] == "position"]
    assert len(waiting) == 1 and waiting[0]["defer"], ops
    assert waiting[0]["segment"] == 4, ops
    shown = {i for o in ops for i in (o.get("events") or {}).get("shown", [])}
    shown |= {i for o in ops if o.get("event") == "shown" for i in o.get("suggestions", [])}
    assert shown == set(ids[:6]), ops
    measured = {int(s) for s in waiting[0].get("active", {})}
    assert measured >= {0, 1, 2, 3, 4, 5}, ops

    # Hidden, the tab tries to send it (and fails); then reloaded while still failing (a
    # crash): the outbox keeps it all and the next try stores it.
    hide_tab(page)
    page.wait_for_timeout(300)
    assert stored(app, token)[1] == set()
    page.reload()
    wait_loaded(page)
    assert progress_text(page) == "Segment 5 of 26"
    page.unroute("**/position")
    wait_saved(page, timeout=20_000)
    hide_tab(page)  # any event of the reloaded page's view goes too
    wait_saved(page)
    times, events = stored(app, token)
    assert events == {(i, "shown") for i in ids[:6]}, events
    assert all(times.get(segment, 0) > 0 for segment in range(6)), times
    assert set(sent_seconds(positions)) >= set(range(6))


def test_no_heartbeat_within_a_minute_of_a_stored_write(app, live_server, pw_page):
    make_long_study(app, None)
    page = pw_page
    page.clock.install()
    counts, _positions = record_requests(page)
    open_assignment(page, live_server.url, "long", "w1")
    page.click("summary")
    assert counts["heartbeat"] == 0 and counts["get"] == 1  # the load's read stamped it
    # Over a minute since the load and nothing stored since: the interaction sends one.
    page.clock.fast_forward(61_000)
    page.mouse.click(5, 5)
    page.wait_for_timeout(300)
    assert counts["heartbeat"] == 1, counts
    # A move, whose update goes half a minute later: stored, it stamped the activity.
    page.keyboard.press("n")
    page.clock.run_for(31_000)
    wait_saved(page)
    assert counts["position"] == 1, counts
    page.clock.fast_forward(30_000)  # 30 s after that write (61 s after the heartbeat)
    page.mouse.click(6, 6)
    page.wait_for_timeout(300)
    assert counts["heartbeat"] == 1, counts
    # Over a minute since that write and nothing else: the interaction sends one.
    page.clock.fast_forward(31_000)
    page.mouse.click(7, 7)
    page.wait_for_timeout(300)
    assert counts["heartbeat"] == 2, counts


def test_a_hidden_tab_sends_the_hint_events_still_waiting(app, live_server, pw_page):
    ids = make_long_study(app, None, [(0, first_word(0))])
    page = pw_page
    token = open_assignment(page, live_server.url, "long", "w1")
    wait_saved(page)
    assert stored(app, token)[1] == set()  # shown, waiting for a move
    hide_tab(page)
    wait_saved(page)
    page.wait_for_function(
        "() => !localStorage.getItem('marginalia.outbox.' +"
        " document.getElementById('annotate').dataset.token)"
    )
    assert stored(app, token)[1] == {(ids[0], "shown")}
