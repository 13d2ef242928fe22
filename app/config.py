"""Settings read from the environment, with the embedded SQLite database as the default."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
INSTANCE_DIR = PROJECT_ROOT / "instance"
DEFAULT_SQLITE_URL = f"sqlite:///{INSTANCE_DIR / 'marginalia.db'}"


def normalise_database_url(url: str) -> str:
    """Accept Heroku-style ``postgres://`` URLs and pin the psycopg2 driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg2://" + url[len("postgresql://") :]
    return url


def database_url() -> str:
    """The database named by ``DATABASE_URL``, or the embedded SQLite file."""
    return normalise_database_url(os.environ.get("DATABASE_URL") or DEFAULT_SQLITE_URL)


def local_secret_key() -> str:
    """A key kept in ``instance/secret_key`` for laptops; production sets SECRET_KEY."""
    path = INSTANCE_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
        key = os.urandom(32).hex()
        # Write under a private name, then link into place: two processes starting at once
        # (gunicorn workers) both end up with the one key that won, never a half-written one.
        partial = path.with_name(f"secret_key.{os.getpid()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        try:
            os.link(partial, path)
        except FileExistsError:
            key = path.read_text().strip()
        finally:
            partial.unlink(missing_ok=True)
        return key


def session_lifetime_hours() -> float:
    """``SESSION_LIFETIME_HOURS``: how long a researcher's login lasts without a request."""
    raw = os.environ.get("SESSION_LIFETIME_HOURS", "8")
    try:
        hours = float(raw)
    except ValueError:
        hours = 0.0
    if not 0 < hours <= 24 * 31:
        from app.errors import InvalidInput

        raise InvalidInput(
            f"SESSION_LIFETIME_HOURS must be a number of hours above 0 (at most 744), not {raw!r}"
        )
    return hours


@dataclass
class Settings:
    """Everything the app reads from its environment, in one place."""

    database_url: str = field(default_factory=database_url)
    secret_key: str = field(default_factory=lambda: os.environ.get("SECRET_KEY", ""))
    max_content_length: int = field(
        default_factory=lambda: int(os.environ.get("MAX_CONTENT_LENGTH", 64 * 1024))
    )
    # 0: don't prepare the worker actions' statements on Postgres (app/annotation/handle.py:
    # a PgBouncer in transaction mode cannot keep them)
    prepared_statements: bool = field(
        default_factory=lambda: os.environ.get("PREPARED_STATEMENTS", "1") != "0"
    )
    max_upload_length: int = field(
        default_factory=lambda: int(os.environ.get("MAX_UPLOAD_LENGTH", 32 * 1024 * 1024))
    )
    spacy_model: str = field(
        default_factory=lambda: os.environ.get("SPACY_MODEL", "en_core_web_sm")
    )
    detector_model: str = field(default_factory=lambda: os.environ.get("DETECTOR_MODEL", ""))
    behind_proxy: int = field(default_factory=lambda: int(os.environ.get("BEHIND_PROXY", "0")))
    # flask-limiter's store (app/web/limits.py): a Redis URL when there are several processes
    ratelimit_storage_uri: str = field(
        default_factory=lambda: os.environ.get("RATELIMIT_STORAGE_URI") or "memory://"
    )
    session_lifetime_hours: float = field(default_factory=lambda: session_lifetime_hours())
    # The served report (app/quality/served.py): a study with at most this many counted
    # annotations is computed in the request as before; a bigger one is served from the store.
    report_inline_annotations: int = field(
        default_factory=lambda: int(os.environ.get("REPORT_INLINE_ANNOTATIONS", "5000"))
    )
    # at least this long between two recomputations of a study's stored report
    report_refresh_seconds: float = field(
        default_factory=lambda: float(os.environ.get("REPORT_REFRESH_SECONDS", "30"))
    )

    def as_flask_config(self) -> dict:
        return {
            "DATABASE_URL": self.database_url,
            "SECRET_KEY": self.secret_key or local_secret_key(),
            "MAX_CONTENT_LENGTH": self.max_content_length,
            "MAX_UPLOAD_LENGTH": self.max_upload_length,
            "PREPARED_STATEMENTS": self.prepared_statements,
            "SPACY_MODEL": self.spacy_model,
            "DETECTOR_MODEL": self.detector_model,
            "BEHIND_PROXY": self.behind_proxy,
            "RATELIMIT_STORAGE_URI": self.ratelimit_storage_uri,
            "REPORT_INLINE_ANNOTATIONS": self.report_inline_annotations,
            "REPORT_REFRESH_SECONDS": self.report_refresh_seconds,
            # A researcher's login ends after this long without a request.
            "PERMANENT_SESSION_LIFETIME": timedelta(hours=self.session_lifetime_hours),
        }


def size_text(limit: int) -> str:
    """A byte count as people say it: 32 MB, 64 KB (the body limits' refusals)."""
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if limit >= factor and limit % factor == 0:
            return f"{limit // factor} {unit}"
    return f"{limit} bytes"
