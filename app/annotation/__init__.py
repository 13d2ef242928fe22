"""Annotating: the worker actions, one function each (arrive, read, add, remove, position and
heartbeat, edit, submit, practice check, suggestion events; docs/ARCHITECTURE.md), on one
database handle (handle.py), with the rules they share."""
