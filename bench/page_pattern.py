"""The annotate page's bookkeeping requests, as bench/load.py's simulated workers send them.

Two patterns, so a run can count a document's requests both ways (the
page once sent each hint event and heartbeat as a request of its own):

- ``page`` (the page now): a segment view's "shown" hints and a dismissal wait and ride in the
  position update of the next move (``"events": {"shown": [...], "dismissed": [...]}``); the
  submit's final position update (the last segment's active seconds) takes the last view's;
  a heartbeat goes out on load and then only after a minute with no stored write;
- ``two-requests`` (the page before): one "shown" batch (``POST …/suggestions/events``) per
  segment view with hints, one request per dismissal, a heartbeat on load and then once a
  minute while the worker acts.

Both send each move's position with the active seconds spent on the segment left (the
simulated think time), as the page's timer measures them.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

PATTERNS = ("page", "two-requests")
DISMISS_PROBABILITY = 0.1  # per segment view with hints: the worker dismisses one
HEARTBEAT_EVERY_S = 60.0


class PageBookkeeping:
    """One document's hint events, active seconds and heartbeats, for one simulated tab.

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

    async def loaded(self) -> None:
        """The page (re)loaded: its heartbeat."""
        self.last_beat = time.monotonic()
        await self.call("heartbeat", "POST", f"{self.base}/heartbeat", (204,), {})

    async def interaction(self) -> None:
        """The worker acts (a key, a click): a heartbeat if one is due."""
        now = time.monotonic()
        since = now - (
            self.last_beat
            if self.pattern == "two-requests"
            else max(self.last_beat, self.last_write)
        )
        if since >= HEARTBEAT_EVERY_S:
            await self.loaded()

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
        if self.pattern == "page":
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
        """A move to ``segment``: the position update, with what waited for it."""
        body: dict[str, Any] = {"segment": segment}
        if self.active:
            body["active"] = self.active
        if self.waiting:
            body["events"] = self.waiting
        self.active, self.waiting = {}, {}
        self.last_write = time.monotonic()
        await self.call("position", "POST", f"{self.base}/position", (204,), body)

    async def before_submit(self, segment: int) -> None:
        """Submit first sends the last segment's seconds (and, on ``page``, the events still
        waiting, on their own when no position update was due)."""
        if self.active:
            await self.move(segment)
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
