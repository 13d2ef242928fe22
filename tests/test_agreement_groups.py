"""A group's (and ``all``'s) value of a unit is the OR over its categories (docs/METRICS.md,
"Agreement"): two workers marking the same word with different categories of one group
disagree per category and agree for the group.

"Anna sings. Bob dances." has 6 tokens (Anna, sings, ., Bob, dances, .). w1 marks "Anna" as
CharE, w2 as RefE (one group, "coherence", in this example). Per category: one marked
token, one of the two workers → two-agree 0 of 1. Group and all: "Anna" is 1 for both
workers, every other token 0 for both → two-agree 1 of 1 and α = 1.0 (perfect agreement)."""

from __future__ import annotations

from app.quality.agreement import CategoryScheme, WorkBatch, agreement_report
from app.rules.spans import Span

TEXT = "Anna sings. Bob dances."


def test_group_and_all_are_the_or_of_their_categories():
    spans = [Span("d", 0, 0, 4, "CharE", "w1"), Span("d", 0, 0, 4, "RefE", "w2")]
    report = agreement_report(
        WorkBatch(spans, {("d", 0): TEXT}, {"w1": ["d"], "w2": ["d"]}),
        CategoryScheme(["CharE", "RefE"], groups={"coherence": ["CharE", "RefE"]}),
    )
    assert report["units"]["token"] == 6
    for cat in ("CharE", "RefE"):
        token = report["per_category"][cat]["token"]
        assert (token["two_agree"], token["marked_units"]) == (0.0, 1)
    for stat in (report["per_group"]["coherence"]["token"], report["all"]["token"]):
        assert (stat["two_agree"], stat["marked_units"], stat["alpha"]) == (1.0, 1, 1.0)
