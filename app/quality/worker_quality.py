"""A worker's estimated precision, recall and F1 and the over-marking flag (report
``workers[i].quality``; docs/METRICS.md, "Estimated precision, recall and F1"). They are
shown beside the ranking figure, never as a ranking (:mod:`app.quality.ranking`).

A recall estimate alone rewards marking everything: a worker who marks every word catches
every confident suggestion (recall 1.000) and every gold error a word can match. So recall
is paired with precision, from the best evidence there is:

* **gold documents** (the worker submitted some): the strict P and R against gold, exactly the
  report's ``gold.overall`` (and the qualification's F1, document by document);
* elsewhere **precision from the other workers' consensus**: of the worker's marks on the
  documents that at least one other worker submitted, the share whose candidate error
  (:func:`app.quality.candidates.group_candidates` over all the document's submitted
  workers) holds another worker's mark too (``consensus.precision``);
* and **recall** from the detector's confident suggestions where the report has that figure
  (``confident_recall``), else from the consensus: of the candidates at least two *other*
  workers marked, the share the worker marked too (``consensus.recall``).

F1 off gold (:func:`estimated_f1`) = 2PR / (P + R) when both are defined (0 when both are 0);
a worker without a mark has no precision and F1 0 (they found nothing); otherwise an
undefined P or R leaves F1 undefined: a precision with no evidence is not a precision of 0.
**Over-marking**: the worker's marks per 100 words of the documents they submitted exceed
:data:`OVER_MARKING` times the median of the other workers' figures (with at least one
other worker).

The detector's confident *negatives* are not used for precision: suggestions are stored only
above the hint threshold, so a sentence without one is not known to be error-free.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from app.quality.candidates import Mark, group_candidates
from app.rules.scoring import Span, TextKey

OVER_MARKING = 3.0
GOLD, CONSENSUS, CONFIDENT = "gold documents", "other workers", "confident suggestions"


def consensus(
    worker_spans: Mapping[str, Sequence[Span]],
    order: Mapping[str, Sequence[str]],
    texts: Mapping[TextKey, str],
    scopes: Mapping[str, str],
) -> dict[str, dict[str, int]]:
    """Per worker ``confirmed`` / ``marks`` (their marks on documents another worker did,
    and how many share a candidate with another worker) and ``caught`` / ``agreed`` (the
    candidates at least two other workers marked, and how many of them they marked too).
    ``order``: document -> its submitted workers in assignment order."""
    by_document: dict[str, list[Mark]] = defaultdict(list)
    for worker, spans in worker_spans.items():
        for s in spans:
            by_document[s.document].append(
                Mark(
                    s.ref or 0,
                    worker,
                    s.segment,
                    s.start,
                    s.end,
                    s.text,
                    s.category,
                    (None,) * 5,
                    "",
                )  # type: ignore[arg-type]
            )
    out: dict[str, dict[str, int]] = defaultdict(
        lambda: {"confirmed": 0, "marks": 0, "caught": 0, "agreed": 0}
    )
    for document, workers in order.items():
        if len(workers) < 2:
            continue
        for candidate in group_candidates(
            document, workers, by_document.get(document, []), texts, scopes, ordered=False
        ):
            voters = {m.worker for m in candidate.marks}
            for mark in candidate.marks:
                out[mark.worker]["marks"] += 1
                out[mark.worker]["confirmed"] += len(voters) >= 2
            for worker in workers:
                if len(voters - {worker}) >= 2:
                    out[worker]["agreed"] += 1
                    out[worker]["caught"] += worker in voters
    return dict(out)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def estimated_f1(precision: float | None, recall: float | None, marks: int) -> float | None:
    """F1 from estimates: 2PR / (P + R) when both are defined (0 when both are 0); a worker
    with no ``marks`` has no precision and scores 0 once R is defined (they found nothing);
    else None: an estimate without evidence is unknown, not 0 ("– · 0.67 · –", not
    "– · 0.67 · 0.00")."""
    if recall is None or (precision is None and marks):
        return None
    p = precision or 0.0
    return 2 * p * recall / (p + recall) if p + recall else 0.0


def marks_rate(marks: int, words: int) -> float | None:
    """100 × marks / words (None without words)."""
    return _ratio(100 * marks, words)


def over_marking(rates: Mapping[str, float | None]) -> dict[str, bool]:
    """Whether each worker's rate exceeds OVER_MARKING × the median of the others' rates."""
    out = {}
    for worker, rate in rates.items():
        others = [r for w, r in rates.items() if w != worker and r is not None]
        out[worker] = bool(
            rate is not None and others and rate > OVER_MARKING * statistics.median(others)
        )
    return out


def set_quality(
    rows: list[dict[str, Any]],
    agreed: Mapping[str, Mapping[str, int]],
    rates: Mapping[str, float | None],
    marks: Mapping[str, int] | None = None,
) -> None:
    """Set ``quality`` on each report worker row (``gold`` and ``confident_recall`` already
    there): precision, recall, f1 with their bases, consensus counts, marks per 100 words and
    over_marking, from each worker's :func:`consensus` counts, marks per 100 words
    (:func:`marks_rate`) and ``marks`` (their marks on the documents they submitted; by
    default each row's ``annotations``): the report sums them document batch by document
    batch. Not a ranking (:mod:`app.quality.ranking`)."""
    flags = over_marking(rates)
    for row in rows:
        worker = row["worker_id"]
        counts = agreed.get(worker, {"confirmed": 0, "marks": 0, "caught": 0, "agreed": 0})
        together = {
            "confirmed": counts["confirmed"],
            "marks": counts["marks"],
            "precision": _ratio(counts["confirmed"], counts["marks"]),
            "caught": counts["caught"],
            "agreed": counts["agreed"],
            "recall": _ratio(counts["caught"], counts["agreed"]),
        }
        gold = (row.get("gold") or {}).get("overall")
        sure = (row.get("confident_recall") or {}).get("recall")
        if gold is not None:
            precision, recall, f1 = gold["precision"], gold["recall"], gold["f1"]
            bases = (GOLD, GOLD)
        else:
            precision = together["precision"]
            recall, recall_basis = (
                (sure, CONFIDENT) if sure is not None else (together["recall"], CONSENSUS)
            )
            made = row["annotations"] if marks is None else marks.get(worker, 0)
            f1, bases = estimated_f1(precision, recall, made), (CONSENSUS, recall_basis)
        row["quality"] = {
            "precision": precision,
            "precision_basis": bases[0] if precision is not None else None,
            "recall": recall,
            "recall_basis": bases[1] if recall is not None else None,
            "f1": f1,
            "consensus": together,
            "marks_per_100_words": rates.get(worker),
            "over_marking": flags.get(worker, False),
        }
