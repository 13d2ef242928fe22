"""``python -m app.cli``: the same command as ``marginalia``."""

from app.cli import main

main()
