"""Marginalia: fine-grained span annotation of long machine-generated text."""

from __future__ import annotations

from typing import Any

from flask import Flask

from app.config import PROJECT_ROOT, Settings


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Build the Flask app from the environment, with optional config overrides (tests)."""
    app = Flask(
        __name__,
        static_folder=str(PROJECT_ROOT / "static"),
        template_folder=str(PROJECT_ROOT / "templates"),
        instance_path=str(PROJECT_ROOT / "instance"),
    )
    app.config.update(Settings().as_flask_config())
    if overrides:
        app.config.update(overrides)

    from app import db

    db.init_app(app)

    from app.web import register

    register(app)
    return app
