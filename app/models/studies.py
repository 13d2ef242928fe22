"""Studies and their documents: segments, gold errors and attention checks, entity cues."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.models.base import Base, utcnow


class Study(Base):
    """A taxonomy snapshot plus documents plus the settings workers are given them under."""

    __tablename__ = "studies"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    taxonomy_name: Mapped[str] = mapped_column(String(200))
    taxonomy: Mapped[dict[str, Any]] = mapped_column(JSON)
    taxonomy_hash: Mapped[str] = mapped_column(String(64))
    annotators_per_doc: Mapped[int] = mapped_column(Integer, default=3)
    suggestions: Mapped[str] = mapped_column(String(10), default="hidden")
    entity_labels: Mapped[list[Any]] = mapped_column(JSON, default=lambda: ["PERSON"])
    platform: Mapped[str] = mapped_column(String(20), default="generic")
    completion_url: Mapped[str | None] = mapped_column(String(2000))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # NULL: made by the CLI without --owner (or before owners existed); only admins see it.
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("researchers.id", ondelete="RESTRICT"), index=True
    )
    # open, paused, closed or archived (app/documents/lifecycle.py): only an open study
    # gives arriving workers new work.
    status: Mapped[str] = mapped_column(String(20), default="open", server_default="open")

    documents: Mapped[list[Document]] = relationship(back_populates="study")


class Document(Base):
    """One text to annotate, split into ordered segments."""

    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(300))
    source: Mapped[str] = mapped_column(String(100), default="")
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False)
    # a gold document that teaches (answer key shown per segment), never graded: only in a
    # study with a pass mark (app/annotation/practice.py)
    is_practice: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    position: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    study: Mapped[Study] = relationship(back_populates="documents")
    segments: Mapped[list[Segment]] = relationship(
        back_populates="document", order_by="Segment.index", cascade="all, delete-orphan"
    )


class Segment(Base):
    """The unit a worker annotates at a time; earlier segments are its context."""

    __tablename__ = "segments"
    __table_args__ = (UniqueConstraint("document_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)

    document: Mapped[Document] = relationship(back_populates="segments")


class GoldError(Base):
    """A reference error span from a ``--gold`` import, used only to score workers."""

    __tablename__ = "gold_errors"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int | None] = mapped_column("start_offset", Integer)
    end: Mapped[int | None] = mapped_column("end_offset", Integer)
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str] = mapped_column(String(100))
    votes: Mapped[int] = mapped_column(Integer, default=1)
    antecedents: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # An attention check (``marginalia import --checks``): planted in a real document, counted
    # in each worker's catch rate (app/quality/attention.py), never in gold scores.
    is_check: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class Entity(Base):
    """A group of mentions a reader would take for one character (or place, organisation)."""

    __tablename__ = "entities"
    __table_args__ = (UniqueConstraint("document_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(300))
    label: Mapped[str] = mapped_column(String(30))
    first_segment: Mapped[int] = mapped_column(Integer)


class EntityMention(Base):
    """Where an entity is named: (document, segment, start, end)."""

    __tablename__ = "entity_mentions"

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), index=True
    )
    entity_id: Mapped[int] = mapped_column(ForeignKey("entities.id", ondelete="CASCADE"))
    segment: Mapped[int] = mapped_column(Integer)
    start: Mapped[int] = mapped_column("start_offset", Integer)
    end: Mapped[int] = mapped_column("end_offset", Integer)
    label: Mapped[str] = mapped_column(String(30))
