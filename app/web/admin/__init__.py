"""Researcher pages: login, account (password, API keys), studies, the per-study dashboard, uploads, settings, exports.

Every page here needs a researcher login (anonymous visitors are sent to the login page,
JSON callers get 401); none may be framed by any site (CSP ``frame-ancestors 'none'``).
Forms carry flask-wtf CSRF tokens; logins are throttled. One module per page group; importing
them attaches their routes to ``bp``.
"""

from app.web.admin import (
    account,
    compare,
    dashboard,
    downloads,
    lifecycle,
    llm,
    progress,
    review,
    session_pages,
    settings,
    sharing,
    studies,
    uploads,
    workers,
)
from app.web.admin.blueprint import bp

__all__ = [
    "account",
    "bp",
    "compare",
    "dashboard",
    "downloads",
    "lifecycle",
    "llm",
    "progress",
    "review",
    "session_pages",
    "settings",
    "sharing",
    "studies",
    "uploads",
    "workers",
]
