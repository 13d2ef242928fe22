"""The maintained figures' recomputation of one study, as the worker runs it (issue 34):
``python -m bench.scale_job SLUG`` under ``DATABASE_URL``; bench/scale.py times it."""

from __future__ import annotations

import sys
import time


def main(slug: str) -> int:
    from app import create_app
    from app.db import session_scope
    from app.documents.studies import get_study
    from app.quality import figures

    app = create_app()
    with app.app_context(), session_scope() as session:
        started = time.perf_counter()
        job = figures.refresh(session, get_study(session, slug))
        print(
            f"figures of {slug}: {time.perf_counter() - started:.1f} s, "
            f"status {job.status}, {len(job.figures or '')} bytes"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
