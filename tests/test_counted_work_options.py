"""The counted-work options checked on creation (app/rules/work.py, ``Work``): what the
command line's ``--layer``, ``--include-llm``, ``--review-status``, ``--include-in-progress``
and ``--min-posterior`` (and their HTTP twins) may combine, each refusal with the one line the
command prints (docs/CONTRACT.md, ``marginalia export``), and the Python twins of the SQL
rules (which statuses count, which worker IDs are an LLM annotator's). No database: these are
the rules before any query."""

from __future__ import annotations

import pytest

from app.errors import InvalidInput
from app.rules.work import (
    Work,
    in_hand,
    is_counted,
    is_llm,
    statuses,
)


def test_layer_llm_name_is_the_workers_layer_of_that_annotator():
    """``--layer llm:NAME`` (docs/CONTRACT.md) is the workers' layer, that annotator alone."""
    work = Work(layer="llm:gpt-4o_mini.v2")
    assert (work.layer, work.workers) == ("workers", "llm:gpt-4o_mini.v2")
    assert work == Work(workers="llm:gpt-4o_mini.v2")
    assert Work(layer="workers").workers == "humans"
    assert Work(workers="everyone").workers == "everyone"
    # 64 characters after the prefix is the longest name, any letter, digit, '_', '.' or '-'
    # after a letter or digit first
    longest = "llm:" + "a" * 64
    assert Work(layer=longest).workers == longest


UNKNOWN_WORKERS = (
    "unknown workers {!r} (use llm:<name>, a name of 1-64 letters, digits, '_', '.' or '-')"
)


@pytest.mark.parametrize(
    "workers",
    ["llm:", "llm:" + "a" * 65, "llm:-a", "llm:a b", "llm:a\n", "LLM:a", "human", "Humans", ""],
)
def test_an_annotator_id_that_is_not_llm_name_is_refused_by_name(workers):
    with pytest.raises(InvalidInput) as refused:
        Work(workers=workers)
    assert str(refused.value) == UNKNOWN_WORKERS.format(workers)
    assert refused.value.status == 400


def test_a_bad_name_in_the_layer_is_refused_as_workers():
    with pytest.raises(InvalidInput) as refused:
        Work(layer="llm:a b")
    assert str(refused.value) == UNKNOWN_WORKERS.format("llm:a b")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"layer": "adjudicated", "workers": "everyone"},
            "--include-llm applies to the workers' layer only",
        ),
        (
            {"layer": "consensus", "workers": "llm:m"},
            "--include-llm applies to the workers' layer only",
        ),
        (
            {"layer": "human"},
            "unknown layer 'human' (use workers, adjudicated, consensus or llm:<name>)",
        ),
        ({"layer": ""}, "unknown layer '' (use workers, adjudicated, consensus or llm:<name>)"),
        (
            {"layer": "adjudicated", "review_status": "in_review"},
            "unknown review status 'in_review' (use done or any)",
        ),
        ({"review_status": "any"}, "--review-status applies to the adjudicated layer only"),
        (
            {"layer": "consensus", "review_status": "any"},
            "--review-status applies to the adjudicated layer only",
        ),
        (
            {"layer": "adjudicated", "in_progress": True},
            "--include-in-progress applies to the workers' layer only",
        ),
        (
            {"layer": "consensus", "in_progress": True},
            "--include-in-progress applies to the workers' layer only",
        ),
        ({"layer": "adjudicated", "rejected": True}, "rejected work is of the workers' layer only"),
        (
            {"layer": "consensus", "min_posterior": 1.5},
            "the consensus layer's minimum posterior is a number from 0 to 1",
        ),
        (
            {"layer": "consensus", "min_posterior": -0.01},
            "the consensus layer's minimum posterior is a number from 0 to 1",
        ),
        ({"min_posterior": 0.5}, "--min-posterior applies to the consensus layer only"),
        (
            {"layer": "adjudicated", "min_posterior": 0.5},
            "--min-posterior applies to the consensus layer only",
        ),
    ],
)
def test_each_option_outside_its_layer_or_range_is_refused_with_its_line(options, message):
    with pytest.raises(InvalidInput) as refused:
        Work(**options)
    assert str(refused.value) == message
    assert refused.value.status == 400


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"include_practice": True, "in_progress": True, "rejected": True, "workers": "everyone"},
        {"layer": "workers", "workers": "llm:m", "in_progress": True},
        {"layer": "adjudicated", "review_status": "any", "include_practice": True},
        {"layer": "adjudicated", "review_status": "done"},
        {"layer": "consensus", "min_posterior": 0.0},
        {"layer": "consensus", "min_posterior": 1.0},
        {"layer": "consensus", "min_posterior": 0.9},
    ],
)
def test_the_options_each_layer_takes_are_accepted_as_given(options):
    work = Work(**options)
    assert {name: getattr(work, name) for name in options} == options


def test_which_statuses_count_for_each_choice():
    """Submitted work counts; in-progress adds active work, a worker's page adds rejected."""
    assert statuses(Work()) == ("submitted",)
    assert statuses(Work(in_progress=True)) == ("submitted", "active")
    assert statuses(Work(rejected=True)) == ("submitted", "rejected")
    assert statuses(Work(in_progress=True, rejected=True)) == ("submitted", "active", "rejected")
    for status, counted in (("submitted", True), ("active", False), ("rejected", False)):
        assert is_counted(status) is counted, status
        assert is_counted(status, Work()) is counted, status
    assert is_counted(None) is False
    assert is_counted("active", Work(in_progress=True)) is True
    assert is_counted("rejected", Work(rejected=True)) is True
    assert is_counted("abandoned", Work(in_progress=True, rejected=True)) is False
    assert [in_hand(s) for s in ("active", "submitted", "rejected", None)] == [
        True,
        False,
        False,
        False,
    ]


def test_an_llm_annotator_id_starts_with_the_prefix_exactly():
    assert [is_llm(w) for w in ("llm:m", "llm:", "LLM:m", "llm", "xllm:m", "w1")] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]
