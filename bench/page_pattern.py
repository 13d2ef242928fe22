"""The annotate page's bookkeeping requests, as bench/load.py's simulated workers send them.

Three patterns, so a run can count a document's requests each way:

- ``page`` (the page now, static/js/outbox.js and presence.js): a move's position update is
  deferred and later moves join it (their active seconds summed, their segments kept as
  seen, the hint events of the views riding along) until ``POSITION_EVERY_S`` (30 s) after
  the first of them, or until submit, which sends it first; the page's load sends no
  heartbeat (its data read stamps the activity) and a heartbeat goes only after a minute
  with no stored write. The page's timer sends a due update at once; the simulated worker,
  whose requests share one connection in order, sends it at its next action (the same count
  of requests per document);
- ``every-move`` (the page before it): one position update per move, a heartbeat on load;
- ``two-requests`` (the page before that): besides, one "shown" batch (``POST
  …/suggestions/events``) per segment view with hints, one request per dismissal, and a
  heartbeat once a minute while the worker acts, stored writes or not.

Each sends the active seconds spent on the segment left (the simulated think time), as the
page's timer measures them.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

PATTERNS = ("page", "every-move", "two-requests")
DISMISS_PROBABILITY = 0.1  # per segment view with hints: the worker dismisses one
HEARTBEAT_EVERY_S = 60.0
POSITION_EVERY_S = 30.0  # static/js/outbox.js's POSITION_EVERY_MS


class PageBookkeeping:
    """One document's hint events, active seconds, positions and heartbeats, for one
    simulated tab.

    ``call(endpoint, method, path, expect, body)`` sends a request (the worker's caller,
    counting it); each method here returns what it sent through it."""

    def __init__(self, pattern: str, base: str, hints: dict[int, list[int]], call) -> None:
        if pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}")
        self.pattern, self.base, self.hints, self.call = pattern, base, hints, call
        self.shown: set[int] = set()
        self.waiting: dict[str, list[int]] = {}
        self.active: dict[str, float] = {}
        self.last_beat = self.last_write = time.monotonic()
        self.position: dict[str, Any] | None = None  # ``page``: the deferred update
        self.due = 0.0

    async def loaded(self) -> None:
        """The page (re)loaded: its heartbeat (``page``: its data read stamped the activity)."""
        self.last_beat = time.monotonic()
        if self.pattern != "page":
            await self.call("heartbeat", "POST", f"{self.base}/heartbeat", (204,), {})

    async def interaction(self) -> None:
        """The worker acts (a key, a click): a due position update, a heartbeat if one is due."""
        now = time.monotonic()
        if self.position is not None and now >= self.due:
            await self._send_position()
        since = now - (
            self.last_beat
            if self.pattern == "two-requests"
            else max(self.last_beat, self.last_write)
        )
        if since >= HEARTBEAT_EVERY_S:
            self.last_beat = now
            await self.call("heartbeat", "POST", f"{self.base}/heartbeat", (204,), {})

    def wrote(self) -> None:
        """An add or remove was stored (it stamps the worker's activity, as a heartbeat)."""
        self.last_write = time.monotonic()

    async def view(self, segment: int, rng) -> None:
        """Segment ``segment`` is shown: its hints logged, perhaps one dismissed."""
        fresh = [i for i in self.hints.get(segment, []) if i not in self.shown]
        self.shown.update(fresh)
        if fresh:
            await self._event("shown", fresh)
        if self.hints.get(segment) and rng.random() < DISMISS_PROBABILITY:
            await self._event("dismissed", [rng.choice(self.hints[segment])])

    async def _event(self, event: str, ids: list[int]) -> None:
        if self.pattern != "two-requests":
            self.waiting.setdefault(event, []).extend(ids)
        elif event == "dismissed":
            await self.call(
                "event",
                "POST",
                f"{self.base}/suggestions/{ids[0]}/events",
                (204,),
                {"event": event},
            )
        else:
            body = {"event": event, "suggestions": ids}
            await self.call("events", "POST", f"{self.base}/suggestions/events", (204,), body)

    def spent(self, segment: int, seconds: float) -> None:
        """Active time measured on ``segment``."""
        if seconds >= 0.05:
            key = str(segment)
            self.active[key] = round(self.active.get(key, 0.0) + seconds, 1)

    async def move(self, segment: int) -> None:
        """A move to ``segment``: its position update, with what waited for it (``page``:
        deferred, joining the one waiting)."""
        if self.pattern != "page":
            await self._send(self._take(segment, None))
            return
        if self.position is None:
            self.due = time.monotonic() + POSITION_EVERY_S
        self.position = self._take(segment, self.position)

    def _take(self, segment: int, into: dict[str, Any] | None) -> dict[str, Any]:
        """A position body for ``segment`` with the seconds and events measured since the
        last one, joined to ``into`` (an update not yet sent) as the outbox coalesces."""
        body: dict[str, Any] = {"segment": segment, "active": dict(self.active)}
        if into is not None:
            for key, seconds in into.get("active", {}).items():
                body["active"][key] = round(body["active"].get(key, 0.0) + seconds, 1)
            if into["segment"] != segment:
                body["active"].setdefault(str(into["segment"]), 0.0)  # seen
            for event, ids in into.get("events", {}).items():
                self.waiting.setdefault(event, []).extend(ids)
        if self.waiting:
            body["events"] = {e: sorted(set(ids)) for e, ids in self.waiting.items()}
        if not body["active"]:
            del body["active"]
        self.active, self.waiting = {}, {}
        return body

    async def _send_position(self) -> None:
        body, self.position = self.position, None
        if body is not None:
            await self._send(body)

    async def _send(self, body: dict[str, Any]) -> None:
        self.last_write = time.monotonic()
        await self.call("position", "POST", f"{self.base}/position", (204,), body)

    async def before_submit(self, segment: int) -> None:
        """Submit first sends the last segment's seconds (with the deferred update, if any),
        and the events still waiting, on their own when no position update was due."""
        if self.position is not None or self.active:
            self.position = self._take(segment, self.position)
            await self._send_position()
        for event, ids in self.waiting.items():
            body = {"event": event, "suggestions": ids}
            await self.call("events", "POST", f"{self.base}/suggestions/events", (204,), body)
        self.waiting = {}


def hints_by_segment(payload: dict[str, Any]) -> dict[int, list[int]]:
    """The page's hints (``GET /api/assignments/<token>``'s ``suggestions``) by segment."""
    by_segment: dict[int, list[int]] = {}
    for s in payload.get("suggestions") or []:
        by_segment.setdefault(s["segment"], []).append(s["id"])
    return by_segment


def store_hints(url: str, slug: str, per_segment: int) -> None:
    """Show hints in study ``slug``: ``per_segment`` detector-like suggestions on each
    segment of its documents (the first words), as a detector run would store them."""
    if per_segment <= 0:
        return
    from sqlalchemy import select

    from app import create_app
    from app.db import session_scope
    from app.models import Document, Segment, Study, Suggestion

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    with app.app_context(), session_scope() as session:
        study = session.scalar(select(Study).where(Study.slug == slug))
        study.suggestions = "shown"
        rows = session.execute(
            select(Segment.document_id, Segment.index, Segment.text)
            .join(Document, Document.id == Segment.document_id)
            .where(Document.study_id == study.id)
        ).all()
        for document_id, index, text in rows:
            words = text.split()
            start = 0
            for n, word in enumerate(words[:per_segment]):
                start = text.index(word, start)
                session.add(
                    Suggestion(
                        document_id=document_id,
                        segment=index,
                        start=start,
                        end=start + len(word),
                        text=word,
                        category="CharE",
                        score=0.9 - n / 100,
                        detector="bench",
                        detector_version="1",
                    )
                )
                start += len(word)
    app.extensions["db_engine"].dispose()


def per_document(tallies: list[Counter]) -> tuple[float, dict[str, float]]:
    """Requests per submitted document: the mean, and by endpoint."""
    if not tallies:
        return 0.0, {}
    total: Counter = Counter()
    for tally in tallies:
        total.update(tally)
    n = len(tallies)
    return sum(total.values()) / n, {k: round(v / n, 2) for k, v in sorted(total.items())}
