"""static/js/outbox.js run in Chromium against a stand-in server (the page's
requests): deferred hint events ride in the next position update, unsent position updates
coalesce without losing a second or an event, the server's 200-ids limit is kept, and a
position refused for its events still goes without them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.browser

ORIGIN = "http://marginalia.test"


@pytest.fixture
def outbox(pw_page):
    """Load outbox.js as an ES module on a stand-in origin; ``sent`` lists the API requests
    (method, path, body); ``answer[path suffix]`` sets a status to answer with."""
    sent: list[tuple[str, str, dict | None]] = []
    answer: dict[str, int] = {}

    def serve(route):
        request = route.request
        path = request.url.removeprefix(ORIGIN)
        if path.startswith("/static/"):
            file = REPO / path.lstrip("/")
            route.fulfill(body=file.read_text("utf-8"), content_type="text/javascript")
        elif path.startswith("/api/"):
            if answer.get("abort"):
                route.abort("internetdisconnected")
                return
            sent.append((request.method, path, json.loads(request.post_data or "null")))
            status = next((s for k, s in answer.items() if path.endswith(k)), 204)
            if status == 204:
                route.fulfill(status=204, body="")
            else:
                route.fulfill(status=status, json={"error": "refused"})
        else:
            route.fulfill(body="<!doctype html><title>outbox</title>", content_type="text/html")

    pw_page.route(f"{ORIGIN}/**", serve)
    pw_page.goto(f"{ORIGIN}/")
    pw_page.evaluate(
        """async () => {
             const { Outbox } = await import('/static/js/outbox.js');
             window.stamped = 0;
             window.addEventListener('marginalia:stamped', () => { window.stamped += 1; });
             window.box = new Outbox('/api/assignments/t', 't', {
               status: () => {}, resolveId: () => null, done: () => {}, failed: () => {},
             });
           }"""
    )
    pw_page.sent = sent  # type: ignore[attr-defined]
    pw_page.answer = answer  # type: ignore[attr-defined]
    return pw_page


def push(page, *ops) -> None:
    """Push ``ops`` in one go (no timer of the outbox runs in between)."""
    page.evaluate("(ops) => { for (const op of ops) window.box.push(op); }", list(ops))


def settle(page) -> list[dict]:
    """Wait until nothing sendable is left; the ops still stored."""
    page.wait_for_function(
        "() => !window.box.running && !window.box.timer"
        " && window.box.pending().every((o) => o.defer)"
    )
    return page.evaluate("() => JSON.parse(localStorage.getItem('marginalia.outbox.t') || '[]')")


def shown(ids: list[int]) -> dict:
    return {"kind": "events", "event": "shown", "suggestions": ids, "defer": True}


def test_hint_events_wait_for_the_next_move_and_ride_in_its_position(outbox):
    page = outbox
    push(
        page,
        shown([1, 2]),
        {"kind": "events", "event": "dismissed", "suggestions": [2], "defer": True},
    )
    push(page, shown([2, 3]))
    stored = settle(page)
    assert page.sent == [] and [o["suggestions"] for o in stored] == [[1, 2, 3], [2]]
    push(page, {"kind": "position", "segment": 1, "active": {"0": 2.5}})
    assert settle(page) == []
    assert page.sent == [
        (
            "POST",
            "/api/assignments/t/position",
            {"segment": 1, "active": {"0": 2.5}, "events": {"shown": [1, 2, 3], "dismissed": [2]}},
        )
    ]
    assert page.evaluate("() => window.stamped") == 1
    # What is left at submit goes on its own (drain releases it).
    push(page, shown([4]))
    page.evaluate("() => window.box.drain()")
    settle(page)
    assert page.sent[-1] == (
        "POST",
        "/api/assignments/t/suggestions/events",
        {"event": "shown", "suggestions": [4]},
    )


def test_unsent_positions_coalesce_with_every_second_and_event(outbox):
    page = outbox
    page.answer["abort"] = 1  # the network is gone
    push(
        page,
        shown([1]),
        {"kind": "position", "segment": 1, "active": {"0": 2.5}},  # sent at once: in flight
        shown([2]),
        {"kind": "position", "segment": 2, "active": {"1": 1.5}},
        shown([3]),
        {"kind": "position", "segment": 1, "active": {"2": 0.5, "0": 1.0}},
    )
    stored = page.evaluate("() => window.box.pending()")
    # The one in flight stays as it is; the two after it are one, seconds summed per segment.
    assert [(o["segment"], o["active"], o["events"]) for o in stored] == [
        (1, {"0": 2.5}, {"shown": [1]}),
        (1, {"0": 1.0, "1": 1.5, "2": 0.5}, {"shown": [2, 3]}),
    ], stored
    page.wait_for_function("() => window.box.timer")  # its try failed: backing off
    page.answer.clear()
    page.evaluate("() => window.box.kick(true)")
    assert settle(page) == []
    bodies = [body for _m, path, body in page.sent if path.endswith("/position")]
    assert [b["segment"] for b in bodies] == [1, 1]
    total: dict[str, float] = {}
    for body in bodies:
        for segment, seconds in body["active"].items():
            total[segment] = total.get(segment, 0) + seconds
    assert total == {"0": 3.5, "1": 1.5, "2": 0.5}
    assert sorted(i for b in bodies for i in b["events"]["shown"]) == [1, 2, 3]


def test_the_server_limit_of_200_ids_per_event_is_kept(outbox):
    page = outbox
    push(page, shown(list(range(1, 151))), shown(list(range(151, 301))))
    stored = settle(page)
    assert [len(o["suggestions"]) for o in stored] == [150, 150]
    push(page, {"kind": "position", "segment": 1})
    stored = settle(page)
    assert len(page.sent[0][2]["events"]["shown"]) == 150
    assert [len(o["suggestions"]) for o in stored] == [150]  # the next move's
    page.evaluate("() => window.box.release()")
    assert settle(page) == []
    assert all(
        len(body.get("suggestions") or body["events"]["shown"]) <= 200 for _m, _p, body in page.sent
    )
    assert sorted(
        i for _m, _p, b in page.sent for i in (b.get("suggestions") or b["events"]["shown"])
    ) == list(range(1, 301))


def test_a_position_refused_for_its_events_goes_again_without_them(outbox):
    page = outbox
    page.answer["/position"] = 400
    push(page, shown([7]))
    push(page, {"kind": "position", "segment": 3, "active": {"2": 4.0}})
    page.wait_for_function("() => window.box.pending().length === 0")
    assert [body for _m, _p, body in page.sent] == [
        {"segment": 3, "active": {"2": 4.0}, "events": {"shown": [7]}},
        {"segment": 3, "active": {"2": 4.0}},
    ]
