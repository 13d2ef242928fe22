"""A small client for OpenAI-compatible chat-completions endpoints (vLLM, Ollama,
llama.cpp's server, OpenAI): answers cached by (model, request), retries with exponential
backoff on 429, 5xx, timeouts and dropped connections, an endpoint's limits shared by every
thread of the process (:mod:`model_server.llm_limits`).

Two callers: the ``openai:`` detector (answers cached on disk, :class:`DiskCache`) and the
study's LLM annotators (``app/llm/``: answers cached in the database, with what each cost
when it was made, so a re-run or a report is free).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
JSON_OBJECT = {"type": "json_object"}


class LLMUnavailable(RuntimeError):
    """The endpoint did not give a usable answer after every retry (``transient``), or
    refused the request outright (a bad key, an unknown model: not ``transient``)."""

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass
class ClientSettings:
    """Where and how to call; from the environment by :meth:`from_env`. The key is read
    from the environment by the caller and kept only in memory."""

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key: str = ""
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_tokens: int = 1024
    cache_dir: Path | None = None
    temperature: float = 0.0
    response_format: dict[str, Any] = field(default_factory=lambda: dict(JSON_OBJECT))

    @classmethod
    def from_env(cls, model: str) -> ClientSettings:
        env = os.environ
        cache = env.get("DETECTOR_CACHE_DIR", str(Path.home() / ".cache" / "marginalia" / "llm"))
        return cls(
            model=model,
            base_url=env.get("OPENAI_BASE_URL", cls.base_url).rstrip("/"),
            api_key=env.get("OPENAI_API_KEY", ""),
            timeout=float(env.get("OPENAI_TIMEOUT", cls.timeout)),
            max_retries=int(env.get("OPENAI_MAX_RETRIES", cls.max_retries)),
            backoff=float(env.get("OPENAI_BACKOFF", cls.backoff)),
            max_tokens=int(env.get("OPENAI_MAX_TOKENS", cls.max_tokens)),
            cache_dir=Path(cache) if cache and cache.lower() != "off" else None,
        )

    def request_options(self) -> dict[str, Any]:
        """What the request carries beyond the model and messages, in the cache key only
        when it differs from the detector's defaults (temperature 0, a JSON object), so the
        detector's cached answers keep their keys."""
        options: dict[str, Any] = {}
        if self.temperature != 0.0:
            options["temperature"] = self.temperature
        if self.response_format != JSON_OBJECT:
            options["response_format"] = self.response_format
        return options


@dataclass
class Completion:
    """One answer: the first choice, what this call spent (tokens, seconds: 0 from the
    cache), whether it came from the cache, and what the answer cost when it was made
    (``answer_*``: the same as spent for a fresh answer)."""

    choice: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    retries: int
    timeouts: int
    seconds: float = 0.0
    answer_prompt_tokens: int = 0
    answer_completion_tokens: int = 0
    answer_seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        """What a cache keeps of it."""
        return {
            "choice": self.choice,
            "prompt_tokens": self.answer_prompt_tokens,
            "completion_tokens": self.answer_completion_tokens,
            "seconds": self.answer_seconds,
        }


class AnswerCache(Protocol):
    """Where answers are kept by cache key: :class:`DiskCache`, or the database's."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, record: dict[str, Any]) -> None: ...


class DiskCache:
    """One JSON file per key holding the answer's choice (the detector's cache)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.folder / f"{key}.json"
        if not path.exists():
            return None
        try:
            return {"choice": json.loads(path.read_text(encoding="utf-8"))}
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Keep an answer (written whole or not at all)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=self.folder, delete=False, suffix=".tmp", encoding="utf-8"
        ) as tmp:
            json.dump(record["choice"], tmp, ensure_ascii=False)
        os.replace(tmp.name, self.folder / f"{key}.json")


def cache_key(
    model: str, messages: list[dict[str, str]], options: dict[str, Any] | None = None
) -> str:
    """sha256 of the model name, the exact messages and any non-default request options."""
    parts = [model, messages, *([options] if options else [])]
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _count(value: Any) -> int:
    """A token count from ``usage`` (0 when absent or not a whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class ChatClient:
    """Thread-safe: one ``httpx.Client`` shared by the caller's worker threads; ``limit``
    wraps every HTTP attempt (an endpoint's concurrency and rate, :mod:`llm_limits`)."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        cache: AnswerCache | None = None,
        limit: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> None:
        self.settings = settings
        if cache is None and settings.cache_dir is not None:
            cache = DiskCache(settings.cache_dir)
        self.cache = cache
        self.limit = limit or contextlib.nullcontext
        headers = {"Content-Type": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.Client(headers=headers, timeout=settings.timeout)

    def keep(self, key: str, answer: Completion) -> None:
        """Cache an answer that proved usable (a malformed one is asked again next time)."""
        if self.cache is not None and not answer.cached:
            self.cache.put(key, answer.record())

    def _wait(self, attempt: int, response: httpx.Response | None) -> None:
        delay = self.settings.backoff * (2**attempt)
        if response is not None:
            with contextlib.suppress(ValueError):
                delay = max(delay, float(response.headers.get("retry-after", 0)))
        time.sleep(min(delay, self.settings.max_backoff))

    def complete(
        self, messages: list[dict[str, str]], *, fresh: bool = False
    ) -> tuple[str, Completion]:
        """(cache key, answer); ``fresh`` asks the endpoint even when the cache has the key.
        Raises :class:`LLMUnavailable` after the last retry."""
        options = self.settings.request_options()
        key = cache_key(self.settings.model, messages, options)
        hit = None if fresh or self.cache is None else self.cache.get(key)
        if hit is not None and isinstance(hit.get("choice"), dict):
            return key, Completion(
                hit["choice"],
                0,
                0,
                cached=True,
                retries=0,
                timeouts=0,
                answer_prompt_tokens=int(hit.get("prompt_tokens") or 0),
                answer_completion_tokens=int(hit.get("completion_tokens") or 0),
                answer_seconds=float(hit.get("seconds") or 0.0),
            )
        body = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "response_format": self.settings.response_format,
        }
        url = f"{self.settings.base_url}/chat/completions"
        timeouts, last, started = 0, "no attempt", time.perf_counter()
        for attempt in range(self.settings.max_retries + 1):
            response = None
            try:
                with self.limit():
                    response = self._http.post(url, json=body)
            except httpx.TimeoutException:
                timeouts, last = timeouts + 1, "timed out"
            except httpx.TransportError as exc:
                last = f"connection failed: {exc}"
            else:
                if response.status_code == 200:
                    seconds = time.perf_counter() - started
                    return key, self._completion(response, attempt, timeouts, seconds)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUSES:
                    raise LLMUnavailable(f"{url}: {last}", transient=False)
            if attempt < self.settings.max_retries:
                self._wait(attempt, response)
        raise LLMUnavailable(f"{url}: {last} (after {self.settings.max_retries} retries)")

    def _completion(
        self, response: httpx.Response, attempt: int, timeouts: int, seconds: float
    ) -> Completion:
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            choice = {}  # a body that is not a completion: parse_answer calls it malformed
            data = {}
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        prompt, completion = (
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
        )
        return Completion(
            choice if isinstance(choice, dict) else {},
            prompt,
            completion,
            cached=False,
            retries=attempt,
            timeouts=timeouts,
            seconds=seconds,
            answer_prompt_tokens=prompt,
            answer_completion_tokens=completion,
            answer_seconds=seconds,
        )

    def close(self) -> None:
        self._http.close()
