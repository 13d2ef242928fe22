"""The LLM backend against a local stand-in chat-completions server: every bad answer is
dropped and counted, errors are retried with backoff, answers are cached, spans located."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.documents.taxonomy import load_taxonomy
from model_server.detector import load_detector
from model_server.llm import LLMDetector
from model_server.llm_client import ClientSettings, LLMUnavailable
from model_server.llm_prompt import build_messages
from model_server.locate import locate
from tests.llm_standin import Reply, errors, standin

REPO = Path(__file__).resolve().parent.parent
EXTEVAL = load_taxonomy(REPO / "taxonomies" / "exteval.yaml")
SEGMENTS = [
    "The minister spoke first. The deputy answered him at length.",
    "However, he resigned. He said he was tired.",
]
GOOD = {
    "category": "IncorCoref",
    "span": "he",
    "context": "However, he resigned",
    "reason": "'he' now reads as the minister, not the deputy.",
}


def detector(url: str, tmp_path: Path, **overrides) -> LLMDetector:
    settings = ClientSettings(
        model="stand-in",
        base_url=url,
        timeout=overrides.pop("timeout", 2.0),
        max_retries=overrides.pop("max_retries", 3),
        backoff=0.01,
        cache_dir=overrides.pop("cache_dir", tmp_path / "cache"),
    )
    return LLMDetector(settings, concurrency=overrides.pop("concurrency", 4))


def only_second(reply: Reply):
    """Answer ``reply`` for segment 2 and no errors for segment 1."""
    return lambda segment, n: reply if segment == SEGMENTS[1] else errors()


def test_load_detector_reads_openai_prefix(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    found = load_detector("openai:my-model")
    assert isinstance(found, LLMDetector)
    assert (found.name, found.version) == ("openai", "my-model")
    assert found.settings.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="model name"):
        load_detector("openai:")


def test_prompt_is_built_from_the_taxonomy():
    system, user = build_messages(EXTEVAL, SEGMENTS[0], SEGMENTS[1])
    for category in EXTEVAL["categories"]:
        assert category["id"] in system["content"]
        assert category["definition"] in system["content"]
    assert "Paired:" in system["content"] and "earlier_span" in system["content"]
    assert "Mark the whole sentence." in system["content"]  # Misleading has scope: sentence
    assert SEGMENTS[0] in user["content"] and SEGMENTS[1] in user["content"]


def test_good_answer_gives_located_spans_with_reasons(tmp_path):
    paired = {
        "category": "IncorDisco",
        "span": "However",
        "reason": "The contrast no longer attaches to anything.",
        "earlier_span": "The deputy answered him at length.",
    }
    sentence = {"category": "Misleading", "span": "tired", "reason": "Out of context."}
    with standin(only_second(errors(GOOD, paired, sentence))) as server:
        rows, stats = detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
    by_category = {r.category: r for r in rows}
    coref = by_category["IncorCoref"]
    assert (coref.segment, SEGMENTS[1][coref.start : coref.end]) == (1, "he")
    assert coref.start == SEGMENTS[1].index("he resigned")  # not the "he" inside "He said"
    assert coref.reason == GOOD["reason"]
    disco = by_category["IncorDisco"]
    assert (disco.paired_segment, disco.paired_text) == (0, "The deputy answered him at length.")
    assert SEGMENTS[0][disco.paired_start : disco.paired_end] == disco.paired_text
    assert by_category["Misleading"].text == "He said he was tired."  # the whole sentence
    assert stats.suggestions == 3 and stats.dropped == 0 and stats.requests == 2
    assert stats.tokens > 0 and stats.seconds > 0


@pytest.mark.parametrize(
    ("reply", "counter"),
    [
        (Reply(content='{"errors": [{"category": "IncorCoref", "span": '), "malformed"),
        (Reply(content="Sure! Here are the errors: none."), "malformed"),
        (Reply(content='{"errors": [{"category": "Inc', finish_reason="length"), "truncated"),
        (Reply(content=None, refusal="I can't help with that."), "refused"),
        (Reply(content=""), "refused"),
        (Reply(body="<html>not json</html>"), "malformed"),
        (errors({**GOOD, "category": "Hallucination"}), "unknown_category"),
        (errors({**GOOD, "span": "resignation letter"}), "unlocatable"),
        (errors({**GOOD, "span": "resign"}), "unlocatable"),  # not at a word boundary
        (Reply(content='{"errors": [42, {"category": "IncorCoref"}]}'), "bad_items"),
    ],
)
def test_every_bad_answer_is_dropped_and_counted(tmp_path, reply, counter):
    with standin(only_second(reply)) as server:
        rows, stats = detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
    assert rows == []
    expected = 2 if counter == "bad_items" else 1
    assert getattr(stats, counter) == expected
    assert stats.dropped == expected


@pytest.mark.parametrize(
    "failure",
    [
        Reply(status=429, headers={"Retry-After": "0"}),
        Reply(status=500),
        Reply(status=503),
        Reply(delay=1.5, content=json.dumps({"errors": []})),  # past the 0.5 s timeout
    ],
)
def test_transient_failures_are_retried_with_backoff(tmp_path, failure):
    def script(segment: str, number: int) -> Reply:
        return failure if number <= 2 else errors(GOOD)

    with standin(script) as server:
        found = detector(server.url, tmp_path, timeout=0.5, concurrency=1)
        rows, stats = found.detect_segments(SEGMENTS[1:], EXTEVAL)
    assert [r.text for r in rows] == ["he"]
    assert stats.retries == 2 and len(server.requests) == 3
    assert stats.timeouts == (2 if failure.delay else 0)


def test_an_endpoint_that_stays_down_raises_after_the_last_retry(tmp_path):
    with standin(lambda segment, n: Reply(status=500)) as server:
        found = detector(server.url, tmp_path, max_retries=2, concurrency=1)
        with pytest.raises(LLMUnavailable, match="HTTP 500"):
            found.detect_segments(SEGMENTS[1:], EXTEVAL)
    assert len(server.requests) == 3


def test_a_refused_request_is_not_retried(tmp_path):
    refusing = standin(lambda segment, n: Reply(status=401, body='{"error": "bad key"}'))
    with refusing as server, pytest.raises(LLMUnavailable, match="HTTP 401"):
        detector(server.url, tmp_path).detect_segments(SEGMENTS[1:], EXTEVAL)
    assert len(server.requests) == 1


def test_answers_are_cached_by_model_and_prompt(tmp_path):
    with standin(only_second(errors(GOOD))) as server:
        first = detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
        again = detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
        assert len(server.requests) == 2
        other = detector(server.url, tmp_path)
        other.settings.model = "another-model"
        other.detect_segments(SEGMENTS, EXTEVAL)
    assert again[0] == first[0]
    assert again[1].cache_hits == 2 and again[1].requests == 0 and again[1].tokens == 0
    assert len(server.requests) == 4  # a new model is a new key
    assert len(list((tmp_path / "cache").glob("*.json"))) == 4


def test_bad_answers_are_not_cached(tmp_path):
    with standin(lambda segment, n: Reply(content="{not json")) as server:
        detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
        detector(server.url, tmp_path).detect_segments(SEGMENTS, EXTEVAL)
    assert len(server.requests) == 4


def test_concurrency_is_bounded(tmp_path):
    segments = [f"Segment number {k} says he left." for k in range(8)]
    with standin(lambda segment, n: Reply(delay=0.2, content='{"errors": []}')) as server:
        detector(server.url, tmp_path, concurrency=3).detect_segments(segments, EXTEVAL)
    assert len(server.requests) == 8
    assert 2 <= server.max_in_flight <= 3


def test_locate_prefers_the_occurrence_named_by_context():
    text = "He left. Then he came back, and he stayed."
    assert locate(text, "he") == (14, 16)  # "He" is a different case; "the" is not a word
    assert locate(text, "he", "and he stayed") == (32, 34)
    assert locate(text, "he", "and he stay") == (32, 34)  # by similarity, not containment
    assert locate(text, "HE LEFT") == (0, 7)
    assert locate(text, "came  back") == (17, 26)
    assert locate(text, "e c") is None


@given(
    st.lists(st.sampled_from(["anna", "bob", "the", "cat", "sat", "ran", "."]), min_size=1),
    st.data(),
)
def test_locate_finds_any_quoted_word_run(words, data):
    text = " ".join(words)
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i + 1, len(words)))
    quote = " ".join(words[i:j])
    found = locate(text, quote)
    assert found is not None and text[found[0] : found[1]] == quote
