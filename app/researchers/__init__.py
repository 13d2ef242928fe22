"""Researchers: accounts (hashed passwords) and login sessions."""
