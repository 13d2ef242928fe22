"""Errors that carry an HTTP status and a message a person can act on."""

from __future__ import annotations


class MarginaliaError(Exception):
    """Base class: ``status`` is the HTTP status, ``str(self)`` the message, ``details``
    extra fields for the JSON answer (e.g. ``existing_id``)."""

    status = 400
    # A message a worker page shows in the worker's language: ``template % params``, the
    # template marked for the interface catalogue (see :func:`translatable`).
    template: str | None = None
    params: dict[str, object] | None = None

    def __init__(self, message: str, status: int | None = None, **details: object):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.details = details


class InvalidInput(MarginaliaError):
    """The request or file is malformed or breaks a rule; nothing was changed."""

    status = 400


def translatable(template: str, **params: object) -> InvalidInput:
    """An :class:`InvalidInput` saying ``template % params``, which a page can translate."""
    error = InvalidInput(template % params)
    error.template, error.params = template, params
    return error


class NotFound(MarginaliaError):
    status = 404


class Conflict(MarginaliaError):
    """The request is well-formed but the state forbids it (e.g. a submitted assignment)."""

    status = 409
