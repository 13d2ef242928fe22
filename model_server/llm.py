"""The LLM backend: ``DETECTOR_MODEL=openai:<model>``, any taxonomy, any OpenAI-compatible
chat-completions endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).

One request per segment (the earlier segments as context); each answer's quoted spans are
located in the segment (word boundaries, the occurrence its context names). Answers that are
malformed, truncated or refused, items with an unknown category and quotes that cannot be
located are dropped and counted in :class:`~model_server.interface.DetectionStats`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from model_server.interface import DetectionInput, DetectionStats
from model_server.llm_client import ChatClient, ClientSettings
from model_server.llm_prompt import build_messages, parse_answer
from model_server.locate import locate, occurrences
from model_server.pipeline import SuggestionRow
from model_server.text import split_many

PREFIX = "openai:"


def _sentence_around(spans: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The sentence (or run of sentences) that holds [start, end)."""
    covering = [s for s in spans if s[0] < end and start < s[1]]
    if not covering:
        return start, end
    return min(s[0] for s in covering), max(s[1] for s in covering)


def _earlier(segments: list[str], index: int, before: int, quote: str):
    """The closest earlier occurrence of ``quote``: in this segment before ``before``,
    else in the nearest earlier segment. (segment, start, end) or None."""
    here = occurrences(segments[index][:before], quote)
    if here:
        return (index, *here[-1])
    for k in range(index - 1, -1, -1):
        found = occurrences(segments[k], quote)
        if found:
            return (k, *found[-1])
    return None


class LLMDetector:
    """Reads the study's taxonomy itself, so it works through :meth:`detect_segments`."""

    name = "openai"

    def __init__(self, settings: ClientSettings, concurrency: int = 4) -> None:
        self.settings = settings
        self.version = settings.model[:100]
        self.concurrency = max(1, concurrency)
        self.client = ChatClient(settings)

    @classmethod
    def from_spec(cls, spec: str) -> LLMDetector:
        """``openai:<model>``, the endpoint and limits from the environment."""
        model = spec[len(PREFIX) :].strip()
        if not model:
            raise ValueError("DETECTOR_MODEL=openai:<model> needs a model name")
        concurrency = int(os.environ.get("OPENAI_CONCURRENCY", "4"))
        return cls(ClientSettings.from_env(model), concurrency)

    def detect(self, batch: Sequence[DetectionInput | tuple]) -> list[list[Any]]:
        """Sentence-level detection has no taxonomy to prompt with."""
        raise TypeError("the LLM backend needs the study's taxonomy: use detect_segments")

    def _segment(
        self, segments: list[str], index: int, sentences: list[tuple[int, int]], taxonomy: dict
    ) -> tuple[list[SuggestionRow], DetectionStats]:
        stats = DetectionStats(requests=1)
        text = segments[index]
        messages = build_messages(taxonomy, "\n\n".join(segments[:index]), text)
        key, answer = self.client.complete(messages)
        stats.cache_hits = int(answer.cached)
        stats.requests -= stats.cache_hits
        stats.retries, stats.timeouts = answer.retries, answer.timeouts
        stats.prompt_tokens, stats.completion_tokens = (
            answer.prompt_tokens,
            answer.completion_tokens,
        )
        parsed = parse_answer(answer.choice)
        if parsed.failure:
            setattr(stats, parsed.failure, 1)
            return [], stats
        if not answer.cached:
            self.client.keep(key, answer)
        stats.bad_items = parsed.bad_items
        categories = {c["id"]: c for c in taxonomy.get("categories", [])}
        rows: dict[tuple[str, int, int], SuggestionRow] = {}
        for item in parsed.items:
            category = categories.get(item["category"])
            if category is None:
                stats.unknown_category += 1
                continue
            found = locate(text, item["span"], item["context"])
            if found is None:
                stats.unlocatable += 1
                continue
            start, end = found
            if category.get("scope") == "sentence":
                start, end = _sentence_around(sentences, start, end)
            pair = None
            if category.get("kind") == "paired" and item["earlier_span"]:
                pair = _earlier(segments, index, start, item["earlier_span"])
                stats.unlocatable_earlier += pair is None
            rows.setdefault(
                (category["id"], start, end),
                SuggestionRow(
                    index,
                    start,
                    end,
                    text[start:end],
                    category["id"],
                    1.0,
                    self.name,
                    self.version,
                    reason=item["reason"],
                    paired_segment=pair[0] if pair else None,
                    paired_start=pair[1] if pair else None,
                    paired_end=pair[2] if pair else None,
                    paired_text=segments[pair[0]][pair[1] : pair[2]] if pair else None,
                ),
            )
        return list(rows.values()), stats

    def detect_segments(
        self, segments: list[str], taxonomy: dict[str, Any]
    ) -> tuple[list[SuggestionRow], DetectionStats]:
        """Suggestion rows for a document (ordered by segment, start, category) and the
        cost; at most ``concurrency`` requests in flight. Raises
        :class:`~model_server.llm_client.LLMUnavailable` when the endpoint stays down."""
        started = time.perf_counter()
        sentences = split_many(list(segments)) if segments else []
        stats = DetectionStats()
        rows: list[SuggestionRow] = []
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [
                pool.submit(self._segment, segments, i, sentences[i], taxonomy)
                for i, text in enumerate(segments)
                if text.strip()
            ]
            for future in futures:
                found, segment_stats = future.result()
                rows.extend(found)
                stats.add(segment_stats)
        rows.sort(key=lambda r: (r.segment, r.start, r.category))
        stats.suggestions = len(rows)
        stats.seconds = time.perf_counter() - started
        return rows, stats
