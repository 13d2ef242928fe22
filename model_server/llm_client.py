"""A small client for OpenAI-compatible chat-completions endpoints (vLLM, Ollama,
llama.cpp's server, OpenAI): answers cached on disk by (model, messages), retries with
exponential backoff on 429, 5xx, timeouts and dropped connections.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}


class LLMUnavailable(RuntimeError):
    """The endpoint did not give a usable answer after every retry (or refused the request)."""


@dataclass
class ClientSettings:
    """Where and how to call; from the environment by :meth:`from_env`."""

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key: str = ""
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_tokens: int = 1024
    cache_dir: Path | None = None

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


@dataclass
class Completion:
    """One answer: the first choice, tokens used, whether it came from the cache."""

    choice: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    retries: int
    timeouts: int


def cache_key(model: str, messages: list[dict[str, str]]) -> str:
    """sha256 of the model name and the exact messages."""
    blob = json.dumps([model, messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ChatClient:
    """Thread-safe: one ``httpx.Client`` shared by the detector's worker threads."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        headers = {"Content-Type": "application/json"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key}"
        self._http = httpx.Client(headers=headers, timeout=settings.timeout)

    def _cache_path(self, key: str) -> Path | None:
        return self.settings.cache_dir / f"{key}.json" if self.settings.cache_dir else None

    def _read_cache(self, key: str) -> dict[str, Any] | None:
        path = self._cache_path(key)
        if path is None or not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_cache(self, key: str, choice: dict[str, Any]) -> None:
        """Keep an answer (written whole or not at all)."""
        path = self._cache_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
        ) as tmp:
            json.dump(choice, tmp, ensure_ascii=False)
        os.replace(tmp.name, path)

    def _wait(self, attempt: int, response: httpx.Response | None) -> None:
        delay = self.settings.backoff * (2**attempt)
        if response is not None:
            with contextlib.suppress(ValueError):
                delay = max(delay, float(response.headers.get("retry-after", 0)))
        time.sleep(min(delay, self.settings.max_backoff))

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, Completion]:
        """(cache key, answer); raises :class:`LLMUnavailable` after the last retry."""
        key = cache_key(self.settings.model, messages)
        if (hit := self._read_cache(key)) is not None:
            return key, Completion(hit, 0, 0, cached=True, retries=0, timeouts=0)
        body = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.settings.max_tokens,
            "response_format": {"type": "json_object"},
        }
        url = f"{self.settings.base_url}/chat/completions"
        timeouts, last = 0, "no attempt"
        for attempt in range(self.settings.max_retries + 1):
            response = None
            try:
                response = self._http.post(url, json=body)
            except httpx.TimeoutException:
                timeouts, last = timeouts + 1, "timed out"
            except httpx.TransportError as exc:
                last = f"connection failed: {exc}"
            else:
                if response.status_code == 200:
                    return key, self._completion(response, attempt, timeouts)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUSES:
                    raise LLMUnavailable(f"{url}: {last}")
            if attempt < self.settings.max_retries:
                self._wait(attempt, response)
        raise LLMUnavailable(f"{url}: {last} (after {self.settings.max_retries} retries)")

    def _completion(self, response: httpx.Response, attempt: int, timeouts: int) -> Completion:
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            choice = {}  # a body that is not a completion: parse_answer calls it malformed
            data = {}
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            choice if isinstance(choice, dict) else {},
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            cached=False,
            retries=attempt,
            timeouts=timeouts,
        )

    def close(self) -> None:
        self._http.close()
