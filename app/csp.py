"""Security headers every response carries, in one place: the HTTP layer sets them and the
crowd platforms vary ``frame-ancestors`` for pages a platform must frame."""

from __future__ import annotations

CSP_TEMPLATE = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors {ancestors}"
)
DEFAULT_CSP = CSP_TEMPLATE.format(ancestors="'none'")
HSTS = "max-age=31536000; includeSubDomains"


FRAMING_HEADERS = ("Content-Security-Policy", "X-Frame-Options")


def security_headers(secure: bool) -> list[tuple[str, str]]:
    """The headers every answer carries unless it set its own (a framed page sets its
    ``FRAMING_HEADERS``): the Flask hook and the worker API's entry (app/web/worker_api.py) both send these."""
    headers = [
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Content-Security-Policy", DEFAULT_CSP),
        ("X-Frame-Options", "DENY"),
    ]
    if secure:
        headers.append(("Strict-Transport-Security", HSTS))
    return headers


def content_security_policy(ancestors: str) -> str:
    """The app-wide policy with only frame-ancestors varying."""
    return CSP_TEMPLATE.format(ancestors=ancestors)


# Researcher pages: no framing, and forms may only post back to the site itself.
ADMIN_CSP = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
