"""A study's LLM annotators and prices, kept in its settings (``llm_annotators``,
``llm_costs``), set by ``marginalia llm annotator`` / ``marginalia llm price``.

An annotator names an OpenAI-compatible chat endpoint (``base_url``: OpenAI, vLLM, Ollama,
llama.cpp's server), a ``model``, the **name** of the environment variable holding its key
(``api_key_env``: the key itself is read by the worker from its own environment, never
stored, never logged), a ``temperature``, a ``preset`` (``taxonomy``: a segment at a time
with the study's categories; ``booookscore``: BooookScore's per-sentence protocol),
``structured`` output (``json_schema``, or ``json_object`` for a server without schemas),
and its limits (requests in flight, requests per minute, timeout, retries, answer tokens).

What makes its marks what they are (endpoint, model, temperature, preset, structure,
batch, context) cannot change once it has submitted work: its marks would mix two
annotators; a new name is a new annotator. Limits, key variable and prices can change.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.errors import InvalidInput
from app.models import Assignment, Study
from app.rules.work import LLM_NAME, LLM_PREFIX
from model_server.llm_client import ClientSettings

SETTING, COSTS = "llm_annotators", "llm_costs"
PRESETS = ("taxonomy", "booookscore")
STRUCTURED = ("json_schema", "json_object")
NAME = LLM_NAME  # the part of its worker ID after llm: (app/rules/work.py)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
IDENTITY = ("base_url", "model", "temperature", "preset", "structured", "batch", "max_context")


@dataclass(frozen=True)
class Annotator:
    """One LLM annotator's settings (checked by :func:`check`)."""

    name: str
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    preset: str = "taxonomy"
    structured: str = "json_schema"
    concurrency: int = 4
    per_minute: float = 0.0  # requests started per minute; 0: no limit
    timeout: float = 120.0
    max_retries: int = 4
    max_tokens: int = 2048
    batch: int = 10  # booookscore: sentences judged per request
    max_context: int = 50_000  # taxonomy: characters of earlier text sent as context

    @property
    def worker_id(self) -> str:
        return f"{LLM_PREFIX}{self.name}"

    def setting(self) -> dict[str, Any]:
        """What the study's settings keep (no key: its variable's name)."""
        return {k: v for k, v in asdict(self).items() if k != "name"}

    def client_settings(self, response_format: dict[str, Any]) -> ClientSettings:
        """The client's settings, the key read from the worker's environment now."""
        return ClientSettings(
            model=self.model,
            base_url=self.base_url,
            api_key=os.environ.get(self.api_key_env, ""),
            timeout=self.timeout,
            max_retries=self.max_retries,
            max_tokens=self.max_tokens,
            cache_dir=None,
            temperature=self.temperature,
            response_format=response_format,
        )


def _number(value: Any, name: str, low: float, high: float, whole: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{name} must be a number")
    if whole and value != int(value):
        raise InvalidInput(f"{name} must be a whole number")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low:g} to {high:g}")
    return int(value) if whole else float(value)


def check(annotator: Annotator) -> Annotator:
    """The settings checked and normalised, or :class:`InvalidInput` naming the field."""
    if not NAME.match(annotator.name):
        raise InvalidInput("an annotator's name is 1-64 letters, digits, '_', '.' or '-'")
    url = annotator.base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or "@" in url:
        raise InvalidInput(f"--base-url {url!r} must be an http(s) URL without credentials")
    if not annotator.model.strip() or len(annotator.model) > 200:
        raise InvalidInput("--model must name the model (at most 200 characters)")
    if not ENV_NAME.match(annotator.api_key_env):
        raise InvalidInput("--api-key-env must be the name of an environment variable")
    if annotator.preset not in PRESETS:
        raise InvalidInput(f"unknown preset {annotator.preset!r} (use {' or '.join(PRESETS)})")
    if annotator.structured not in STRUCTURED:
        raise InvalidInput(f"--structured must be {' or '.join(STRUCTURED)}")
    return replace(
        annotator,
        base_url=url,
        model=annotator.model.strip(),
        temperature=_number(annotator.temperature, "--temperature", 0, 2),
        concurrency=_number(annotator.concurrency, "--concurrency", 1, 64, whole=True),
        per_minute=_number(annotator.per_minute, "--per-minute", 0, 100_000),
        timeout=_number(annotator.timeout, "--timeout", 1, 3600),
        max_retries=_number(annotator.max_retries, "--max-retries", 0, 20, whole=True),
        max_tokens=_number(annotator.max_tokens, "--max-tokens", 16, 200_000, whole=True),
        batch=_number(annotator.batch, "--batch", 1, 200, whole=True),
        max_context=_number(annotator.max_context, "--max-context", 0, 10_000_000, whole=True),
    )


def from_setting(name: str, stored: dict[str, Any]) -> Annotator:
    known = {f.name for f in fields(Annotator)} - {"name"}
    return Annotator(name=name, **{k: v for k, v in stored.items() if k in known})


def annotators(study: Study) -> dict[str, Annotator]:
    """The study's annotators by name, in name order."""
    stored = (study.settings or {}).get(SETTING) or {}
    return {name: from_setting(name, stored[name]) for name in sorted(stored)}


def annotator(study: Study, name: str) -> Annotator:
    found = annotators(study).get(name)
    if found is None:
        known = ", ".join(annotators(study)) or "none yet: marginalia llm annotator add"
        raise InvalidInput(f"study {study.slug} has no LLM annotator {name!r} ({known})")
    return found


def submitted_work(session: Session, study: Study, name: str) -> int:
    """How many documents the annotator has submitted in the study."""
    return session.scalar(
        select(func.count()).where(
            Assignment.study_id == study.id,
            Assignment.worker_id == f"{LLM_PREFIX}{name}",
            Assignment.status == "submitted",
        )
    )


def _store(study: Study, key: str, value: dict[str, Any]) -> None:
    settings = dict(study.settings or {})
    settings[key] = value
    study.settings = settings


def save(session: Session, study: Study, new: Annotator) -> Annotator:
    """Add or change an annotator; what makes its marks cannot change once it has work."""
    new = check(new)
    old = annotators(study).get(new.name)
    if old is not None:
        changed = [f for f in IDENTITY if getattr(old, f) != getattr(new, f)]
        done = submitted_work(session, study, new.name) if changed else 0
        if done:
            raise InvalidInput(
                f"annotator {new.name} has annotated {done} documents: its {changed[0]} cannot "
                "change (its marks would mix two annotators); add one under a new name"
            )
    stored = dict((study.settings or {}).get(SETTING) or {})
    stored[new.name] = new.setting()
    _store(study, SETTING, stored)
    return new


def remove(session: Session, study: Study, name: str) -> None:
    """Forget an annotator that has no submitted work (its marks are never dropped)."""
    annotator(study, name)
    if done := submitted_work(session, study, name):
        raise InvalidInput(f"annotator {name} has annotated {done} documents: it stays")
    stored = dict((study.settings or {}).get(SETTING) or {})
    stored.pop(name, None)
    _store(study, SETTING, stored)


def costs(study: Study) -> dict[str, Any]:
    """``{"models": {model: {"input", "output"}}, "human_per_hour", "currency"}``: prices per
    million tokens in and out, and the humans' pay per hour, as the researcher set them."""
    stored = (study.settings or {}).get(COSTS) or {}
    return {
        "models": dict(stored.get("models") or {}),
        "human_per_hour": stored.get("human_per_hour"),
        "currency": stored.get("currency") or "USD",
    }


def set_costs(
    study: Study,
    *,
    model: str | None = None,
    input_price: float | None = None,
    output_price: float | None = None,
    human_per_hour: float | None = None,
    currency: str | None = None,
) -> dict[str, Any]:
    """Set a model's prices per million tokens (both), the humans' pay per hour, the
    currency's code."""
    table = costs(study)
    if model is not None:
        if input_price is None or output_price is None:
            raise InvalidInput("a model's price needs --input and --output (per million tokens)")
        table["models"][model.strip()[:200]] = {
            "input": _number(input_price, "--input", 0, 1e6),
            "output": _number(output_price, "--output", 0, 1e6),
        }
    if human_per_hour is not None:
        table["human_per_hour"] = _number(human_per_hour, "--human-per-hour", 0, 1e5)
    if currency is not None:
        if not re.fullmatch(r"[A-Z]{3}", currency):
            raise InvalidInput("--currency must be a three-letter code such as USD")
        table["currency"] = currency
    _store(study, COSTS, table)
    return table
