"""The SNaC T5 grammar: inputs, targets and the tolerant output parser."""

import pytest

from model_server.grammar import (
    LABELS,
    SENTINEL,
    ParsedError,
    build_input,
    find_span,
    format_target,
    parse_output,
)


def test_build_input_keeps_last_words_and_sentinel():
    context = "one two three four five"
    assert (
        build_input(context, "The end.", max_context_words=2) == "four five <extra_id_0> The end."
    )
    assert build_input("", "Hi  there.") == f" {SENTINEL} Hi there."


def test_format_target_true_and_false():
    assert format_target([]) == "true"
    assert format_target([("GramE", "x")]) == "true"  # only detector labels count
    target = format_target(
        [
            ("scene", "Whole sentence."),
            ("character", "Claudio"),
            ("character", "Benedick"),
            ("event", "the  party"),
            ("character", "Claudio"),
        ]
    )
    assert target == "false character Claudio character Benedick event the party scene"


@pytest.mark.parametrize("label", LABELS)
def test_round_trip_every_label(label):
    span = "" if label == "scene" else "the letter"
    parsed = parse_output(format_target([(label, span)]))
    assert parsed.coherent is False
    assert parsed.errors == [ParsedError(label, span)]


def test_parse_true_ignores_trailing_junk():
    parsed = parse_output("true character Bob </s>")
    assert parsed.coherent is True and parsed.errors == []


def test_parse_grouped_spans_brackets_and_odd_spacing():
    parsed = parse_output(
        "<pad> false   <character> Claudio |  Benedick [event] the duel ; the ring"
    )
    assert parsed.coherent is False
    assert [(e.label, e.span) for e in parsed.errors] == [
        ("character", "Claudio"),
        ("character", "Benedick"),
        ("event", "the duel"),
        ("event", "the ring"),
    ]
    assert all(e.known for e in parsed.errors)


def test_parse_colon_labels_and_case():
    parsed = parse_output("False character: Hero scene: At the party")
    assert parsed.coherent is False
    assert parsed.errors == [ParsedError("character", "Hero"), ParsedError("scene", "")]


def test_parse_unknown_bracket_label_is_marked_unknown():
    parsed = parse_output("false <grammar> the the <character> Ann")
    assert ParsedError("grammar", "the the", known=False) in parsed.errors
    assert parsed.known_errors == [ParsedError("character", "Ann")]


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "</s>",
        "<pad><pad>",
        "banana split",
        "fals",
        "false",
        "false character",
        "false event the",
        "true false",
        "<extra_id_0> false <",
        "false <> []",
        42,
    ],
)
def test_parse_malformed_never_raises(text):
    parsed = parse_output(text)
    assert parsed.coherent in (True, False, None)
    for err in parsed.errors:
        assert isinstance(err.label, str) and isinstance(err.span, str)


def test_parse_truncated_and_missing_verdict():
    assert parse_output("false character").errors == [ParsedError("character", "")]
    assert parse_output("false").errors == [] and parse_output("false").coherent is False
    missing = parse_output("character Anna")
    assert missing.coherent is False and missing.errors == [ParsedError("character", "Anna")]
    assert parse_output("banana").coherent is None


def test_find_span_exact_case_and_spacing():
    sentence = "Leonato's daughter Hero meets Don Pedro."
    assert find_span("Hero", sentence) == (19, 23)
    assert find_span("don pedro", sentence) == (30, 39)
    start, end = find_span("Leonato 's daughter", sentence)
    assert sentence[start:end] == "Leonato's daughter"
    assert find_span("Claudio", sentence) is None
    assert find_span("", sentence) is None
