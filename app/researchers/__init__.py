"""Researchers: accounts and roles (``accounts``), who may reach a study (``access``), API keys
(``keys``), the session cookie (``sessions``) and the login throttle (``throttle``)."""
