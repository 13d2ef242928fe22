"""Rate limiting (flask-limiter); in-process memory unless RATELIMIT_STORAGE_URI is set."""

from __future__ import annotations

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

limiter = Limiter(key_func=get_remote_address, default_limits=[], storage_uri="memory://")
