"""Researchers: accounts, shared studies, API keys, failed logins."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, utcnow


class Researcher(Base):
    """A person who runs studies; the only kind of account with a login session."""

    __tablename__ = "researchers"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    role: Mapped[str] = mapped_column(String(20), default="researcher", server_default="researcher")
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Stored in the session cookie too; bumped by logout, a password change and disabling,
    # which ends every session issued before.
    session_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StudyCollaborator(Base):
    """A researcher a study's owner shared it with: may see and change it, not share it."""

    __tablename__ = "study_collaborators"
    __table_args__ = (UniqueConstraint("study_id", "researcher_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    researcher_id: Mapped[int] = mapped_column(
        ForeignKey("researchers.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    """A researcher's key for scripts: only the SHA-256 of the secret is kept."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    researcher_id: Mapped[int] = mapped_column(
        ForeignKey("researchers.id", ondelete="CASCADE"), index=True
    )
    prefix: Mapped[str] = mapped_column(String(20), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LoginFailure(Base):
    """One failed login, counted per account and per client by every process alike."""

    __tablename__ = "login_failures"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), index=True)
    client: Mapped[str] = mapped_column(String(100), index=True)
    failed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
