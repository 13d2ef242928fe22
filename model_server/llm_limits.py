"""An endpoint's limits, shared by every thread of one process: at most ``concurrency``
requests in flight and at most ``per_minute`` started in any minute (requests spaced
60 / per_minute seconds apart). A hosted API's rate limit or a local server's batch size is
a property of the endpoint, not of one document, so two documents (or two annotators) sent
to the same base URL share one :class:`EndpointLimit` (:func:`limit_for`). Several worker
processes each keep their own: run one LLM worker per endpoint, or divide the limit."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class EndpointLimit:
    def __init__(self, concurrency: int, per_minute: float | None) -> None:
        self.concurrency = max(1, int(concurrency))
        self.per_minute = per_minute if per_minute and per_minute > 0 else None
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._next_start = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the endpoint's slots, started no sooner than the rate allows."""
        with self._slots:
            if self.per_minute:
                with self._lock:
                    now = time.monotonic()
                    start = max(now, self._next_start)
                    self._next_start = start + 60.0 / self.per_minute
                if start > now:
                    time.sleep(start - now)
            yield


_LIMITS: dict[str, EndpointLimit] = {}
_REGISTRY = threading.Lock()


def limit_for(base_url: str, concurrency: int, per_minute: float | None) -> EndpointLimit:
    """The process's limit for ``base_url``; new limits replace it (requests in flight keep
    the slot they hold)."""
    key = base_url.rstrip("/")
    with _REGISTRY:
        found = _LIMITS.get(key)
        wanted = (max(1, int(concurrency)), per_minute if per_minute and per_minute > 0 else None)
        if found is None or (found.concurrency, found.per_minute) != wanted:
            found = _LIMITS[key] = EndpointLimit(concurrency, per_minute)
        return found
