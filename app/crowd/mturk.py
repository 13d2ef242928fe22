"""Posting a study to Mechanical Turk as ExternalQuestion HITs (boto3).

AWS closed Mechanical Turk on 2026-09-30; this stays for archives of the protocol and for
compatible stand-ins. Each HIT frames ``<base>/s/<slug>``; MTurk appends ``assignmentId``,
``hitId``, ``workerId`` and ``turkSubmitTo`` (see :mod:`app.crowd.platforms`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from app.errors import InvalidInput
from app.models import Study

ENDPOINTS = {
    "sandbox": "https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    "production": "https://mturk-requester.us-east-1.amazonaws.com",
}
REGION = "us-east-1"
EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/"
    "ExternalQuestion.xsd"
)


@dataclass
class HitBatch:
    """What :func:`create_hits` did: HIT ids created, request tokens already used."""

    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    group_id: str | None = None


def external_question(url: str, frame_height: int = 0) -> str:
    """The ExternalQuestion XML for ``url`` (height 0: MTurk sizes the frame to the page)."""
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>"
        "</ExternalQuestion>"
    )


def task_url(base_url: str, study: Study) -> str:
    """``<base_url>/s/<slug>``; MTurk frames only HTTPS pages."""
    base = base_url.rstrip("/")
    parts = urlsplit(base)
    if parts.scheme != "https" or not parts.netloc:
        raise InvalidInput(f"--base-url {base_url!r} must be the site's public https:// address")
    return f"{base}/s/{study.slug}"


def reward_text(reward: str | float) -> str:
    """MTurk's reward string in US dollars with two decimals ("1.50")."""
    try:
        amount = Decimal(str(reward)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise InvalidInput(f"reward {reward!r} is not an amount in US dollars") from None
    if amount < Decimal("0.01"):
        raise InvalidInput("the reward must be at least 0.01 US dollars")
    return str(amount)


def request_token(slug: str, batch: str, index: int) -> str:
    """A UniqueRequestToken (at most 64 characters) stable for (study, batch, HIT number)."""
    raw = f"marginalia:{slug}:{batch}:{index}"
    if len(raw) <= 64:
        return raw
    return "marginalia:" + hashlib.sha256(raw.encode()).hexdigest()[:52]


def make_client(*, sandbox: bool = True, **kwargs: Any) -> Any:
    """A boto3 MTurk client for the sandbox (default) or production endpoint."""
    import boto3

    return boto3.client(
        "mturk",
        region_name=REGION,
        endpoint_url=ENDPOINTS["sandbox" if sandbox else "production"],
        **kwargs,
    )


def create_hits(
    client: Any,
    study: Study,
    *,
    count: int,
    reward: str | float,
    base_url: str,
    batch: str = "1",
    max_assignments: int | None = None,
    title: str | None = None,
    description: str | None = None,
    keywords: str = "annotation, text, errors, summaries",
    lifetime_seconds: int = 7 * 24 * 3600,
    assignment_seconds: int = 2 * 3600,
    auto_approve_seconds: int = 3 * 24 * 3600,
) -> HitBatch:
    """Create ``count`` ExternalQuestion HITs pointing at the study's start page.

    Each HIT takes ``max_assignments`` workers (default: the study's annotators per
    document). Re-running with the same ``batch`` creates nothing new: MTurk refuses a
    UniqueRequestToken it has seen, and those HITs are reported as skipped.
    """
    from botocore.exceptions import ClientError

    if count < 1:
        raise InvalidInput("--count must be at least 1")
    question = external_question(task_url(base_url, study))
    params = {
        "Title": (title or study.title or study.slug)[:128],
        "Description": (
            description or "Read a text one part at a time and mark the errors you find in it."
        )[:2000],
        "Keywords": keywords,
        "Reward": reward_text(reward),
        "MaxAssignments": int(max_assignments or study.annotators_per_doc),
        "LifetimeInSeconds": int(lifetime_seconds),
        "AssignmentDurationInSeconds": int(assignment_seconds),
        "AutoApprovalDelayInSeconds": int(auto_approve_seconds),
        "Question": question,
        "RequesterAnnotation": f"marginalia:{study.slug}"[:255],
    }
    result = HitBatch()
    for index in range(count):
        token = request_token(study.slug, batch, index)
        try:
            answer = client.create_hit(UniqueRequestToken=token, **params)
        except ClientError as exc:
            message = str(exc)
            if "UniqueRequestToken" in message or "already exists" in message.lower():
                result.skipped.append(token)
                continue
            raise InvalidInput(f"Mechanical Turk refused HIT {index + 1}: {message}") from None
        hit = answer["HIT"]
        result.created.append(hit["HITId"])
        result.group_id = hit.get("HITGroupId", result.group_id)
    return result
