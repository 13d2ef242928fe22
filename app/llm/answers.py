"""The endpoint's answers cached in the database (``llm_answers``), by request: the cache
behind an annotator's chat client (model_server/llm_client.py's ``AnswerCache``).

A request's key is sha256 of the model, the exact messages (they carry the document's text)
and the request's options, so the same question is never paid for twice, by any worker
process, and an answer keeps what it cost when it was made (a report or a re-run reads the
cost without asking again). The client's threads each read and write through a short
session of their own: no transaction is held while a request waits for the endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.db import begin_write
from app.models import LlmAnswer, utcnow

INSERT = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


class DatabaseCache:
    """Answers about one document asked of one model."""

    def __init__(self, sessions: Callable[[], Session], document_id: int, model: str) -> None:
        self.sessions = sessions
        self.document_id = document_id
        self.model = model

    def get(self, key: str) -> dict[str, Any] | None:
        with self.sessions() as session:
            row = session.execute(
                select(
                    LlmAnswer.choice,
                    LlmAnswer.prompt_tokens,
                    LlmAnswer.completion_tokens,
                    LlmAnswer.seconds,
                ).where(LlmAnswer.key == key)
            ).first()
        if row is None:
            return None
        return {
            "choice": row.choice,
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
            "seconds": row.seconds,
        }

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Keep the answer (the first one kept for a key stays)."""
        with self.sessions() as session:
            begin_write(session)
            dialect = session.get_bind().dialect.name
            insert = INSERT[dialect](LlmAnswer).values(
                key=key,
                model=self.model[:200],
                document_id=self.document_id,
                choice=record["choice"],
                prompt_tokens=int(record.get("prompt_tokens") or 0),
                completion_tokens=int(record.get("completion_tokens") or 0),
                seconds=float(record.get("seconds") or 0.0),
                created_at=utcnow(),
            )
            session.execute(insert.on_conflict_do_nothing(index_elements=["key"]))
            session.commit()
