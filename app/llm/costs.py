"""What the work cost, model and humans side by side (docs/METRICS.md, "LLM annotators").

* **Model, per document**: the prompt and completion tokens of the answers its marks come
  from, as each answer cost when it was made (a cached answer keeps its cost), and the
  wall time of the job that annotated it; money = tokens in / 10⁶ × the model's input
  price + tokens out / 10⁶ × its output price (``marginalia llm price``). **Paid** adds up
  every request the annotator's jobs sent, malformed answers asked again included, and
  nothing for an answer read from the cache.
* **Human, per assignment**: paid minutes = submitted − opened (the time a platform pays
  for; the study's timing), active minutes = the measured active seconds
  (app/quality/time_on_task.py's ``segment_times``) / 60; money = paid minutes / 60 × the
  researcher's pay per hour.

Money is None where its price is not set.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.llm.annotators import costs as price_table
from app.models import Assignment, Document, LlmJob, LlmRun, Study
from app.quality.time_on_task import segment_seconds
from app.rules.work import Work, assignment_filter


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def token_money(prompt: int, completion: int, price: dict[str, float] | None) -> float | None:
    if price is None:
        return None
    return prompt / 1e6 * price["input"] + completion / 1e6 * price["output"]


def model_costs(
    session: Session, study: Study, annotator: str, model: str, documents: dict[int, str]
) -> dict[str, Any]:
    """The annotator's cost per document (of ``documents``: id → external id) and paid."""
    price = price_table(study)["models"].get(model)
    rows = session.execute(
        select(LlmJob, LlmRun.id)
        .join(LlmRun, LlmRun.id == LlmJob.run_id)
        .where(LlmRun.study_id == study.id, LlmRun.annotator == annotator)
        .order_by(LlmJob.id)
    ).all()
    per_document: dict[str, dict[str, Any]] = {}
    paid = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0, "cache_hits": 0}
    for job, _ in rows:
        for name in paid:
            paid[name] += getattr(job, name)
        if job.outcome == "annotated" and job.document_id in documents:
            per_document[documents[job.document_id]] = {  # the latest annotating job
                "prompt_tokens": job.answer_prompt_tokens,
                "completion_tokens": job.answer_completion_tokens,
                "minutes": job.seconds / 60,
                "cost": token_money(job.answer_prompt_tokens, job.answer_completion_tokens, price),
            }
    paid["cost"] = token_money(paid["prompt_tokens"], paid["completion_tokens"], price)
    return {"price": price, "per_document": per_document, "paid": paid}


def human_costs(
    session: Session, study: Study, documents: dict[int, str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """{human: {document: {"minutes", "active_minutes", "cost"}}} over their submitted
    assignments of ``documents``."""
    rate = price_table(study)["human_per_hour"]
    rows = session.execute(
        select(
            Assignment.id,
            Assignment.worker_id,
            Assignment.document_id,
            Assignment.created_at,
            Assignment.submitted_at,
        )
        .join(Document, Document.id == Assignment.document_id)
        .where(*assignment_filter(study, Work(include_practice=True)))  # the humans' submitted
        .order_by(Assignment.id)
    ).all()
    rows = [row for row in rows if row.document_id in documents]
    active = segment_seconds(session, [r.id for r in rows])
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        opened, done = _aware(row.created_at), _aware(row.submitted_at)
        minutes = (done - opened).total_seconds() / 60 if opened and done else None
        out[row.worker_id][documents[row.document_id]] = {
            "minutes": minutes,
            "active_minutes": sum(active.get(row.id, {}).values()) / 60,
            "cost": minutes / 60 * rate if rate is not None and minutes is not None else None,
        }
    return dict(out)


def summary(per_document: dict[str, dict[str, Any]], found: dict[str, int]) -> dict[str, Any]:
    """Totals of one column's documents and, given the correct errors ``found`` per
    document (gold matches), the cost and minutes per correct error over those documents."""

    def total(name: str, docs: list[str]) -> float | None:
        values = [per_document[d].get(name) for d in docs]
        return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]

    every = sorted(per_document)
    graded = [d for d in every if d in found]
    correct = sum(found[d] for d in graded)
    cost, minutes = total("cost", every), total("minutes", every)
    graded_cost, graded_minutes = total("cost", graded), total("minutes", graded)
    return {
        "documents": len(every),
        "cost": cost,
        "minutes": minutes,
        "cost_per_document": cost / len(every) if every and cost is not None else None,
        "minutes_per_document": minutes / len(every) if every and minutes is not None else None,
        "prompt_tokens": sum(per_document[d].get("prompt_tokens", 0) for d in every),
        "completion_tokens": sum(per_document[d].get("completion_tokens", 0) for d in every),
        "active_minutes": sum(per_document[d].get("active_minutes", 0.0) for d in every),
        "gold_documents": len(graded),
        "correct_errors": correct,
        "cost_per_correct_error": graded_cost / correct
        if correct and graded_cost is not None
        else None,
        "minutes_per_correct_error": graded_minutes / correct
        if correct and graded_minutes is not None
        else None,
    }
