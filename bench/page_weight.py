"""Page weight and timings of the annotate page on a 26-segment SNaC summary, in Chromium.

Serves the app on a throwaway SQLite over real HTTP, opens the worker's page for SNaC dev's
26-segment summary (with entity cues and a few hints), and reports for a first visit (empty
cache) and a second one (same browser, cache kept): requests, bytes transferred on the wire
(compressed bodies plus headers, from the DevTools protocol), bytes of the bodies once
decoded, and the times to DOMContentLoaded, load, and the first segment drawn. Then it moves
to segment 15 and reports how long the move took to draw.

    .venv/bin/python bench/page_weight.py [--runs 3] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = Path(os.environ.get("MARGINALIA_SHARED_DATA", ROOT / ".." / "shared" / "data"))
DOCUMENT = "book_175b13"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]


def make_site(database: Path):
    """A migrated database with the study "weight": the 26-segment summary, hints shown."""
    from sqlalchemy import select

    from app import create_app
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.entities import load_pipeline
    from app.formats import DocumentInput
    from app.migrate import upgrade
    from app.models import Document, Suggestion

    url = f"sqlite:///{database}"
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "TESTING": False})
    body = json.loads((DATA / "snac" / "dev.json").read_text("utf-8"))[DOCUMENT]
    segments = [body[k]["text"] for k in sorted(body, key=int)]
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session, "weight", ROOT / "taxonomies" / "snac.yaml", suggestions="shown"
        )
        import_documents(session, study, [DocumentInput(DOCUMENT, segments)], nlp=load_pipeline())
        doc = session.scalar(select(Document))
        for index, text in enumerate(segments):
            word = text.split()[0]
            session.add(
                Suggestion(
                    document_id=doc.id,
                    segment=index,
                    start=0,
                    end=len(word),
                    text=word,
                    category="CharE",
                    score=0.7,
                    detector="bench",
                    detector_version="1",
                )
            )
    return app, len(segments)


class Server:
    def __init__(self, app):
        from werkzeug.serving import make_server

        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()


def visit(page, cdp, url: str) -> dict:
    """Load ``url`` and measure what crossed the wire and how long the page took."""
    sizes: dict[str, float] = {}
    decoded: dict[str, int] = {}
    urls: dict[str, str] = {}
    cdp.on(
        "Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"])
    )
    cdp.on(
        "Network.dataReceived",
        lambda e: decoded.__setitem__(
            e["requestId"], decoded.get(e["requestId"], 0) + e["dataLength"]
        ),
    )
    cdp.on(
        "Network.loadingFinished",
        lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]),
    )
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("#annotate:not(.is-loading)")
    page.wait_for_selector(".cur-text .seg-text")
    drawn_ms = (time.perf_counter() - started) * 1000
    page.wait_for_load_state("networkidle")
    timing = page.evaluate(
        """() => { const n = performance.getEntriesByType('navigation')[0];
            return { dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd }; }"""
    )
    return {
        "requests": sum(1 for v in sizes.values() if v > 0),  # not served from the cache
        "transferred_bytes": int(sum(sizes.values())),
        "decoded_bytes": sum(decoded.values()),
        "dom_content_loaded_ms": round(timing["dcl"], 1),
        "load_ms": round(timing["load"], 1),
        "first_segment_drawn_ms": round(drawn_ms, 1),
        "by_url": {urls.get(k, k).split("/", 3)[-1][:60]: int(v) for k, v in sizes.items()},
    }


def main() -> int:
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--chromium",
        default=os.environ.get("MARGINALIA_CHROMIUM")
        or shutil.which("chromium")
        or "/usr/bin/chromium",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (DATA / "snac" / "dev.json").exists():
        print(f"SNaC dev not found under {DATA}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        app, n = make_site(Path(tmp) / "bench.db")
        server = Server(app)
        first, second, moves = [], [], []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS
                )
                for run in range(args.runs):
                    context = browser.new_context(viewport={"width": 1440, "height": 900})
                    page = context.new_page()
                    cdp = context.new_cdp_session(page)
                    cdp.send("Network.enable")
                    page.goto(f"{server.url}/s/weight?worker_id=bench-{run}")
                    page.wait_for_url("**/a/*")
                    url = page.url
                    page.goto("about:blank")
                    # the arrival above loaded the page once: start the first visit cold
                    cdp.send("Network.clearBrowserCache")
                    first.append(visit(page, cdp, url))
                    cdp2 = context.new_cdp_session(page)
                    cdp2.send("Network.enable")
                    page.goto("about:blank")
                    second.append(visit(page, cdp2, url))
                    started = time.perf_counter()
                    for _ in range(14):
                        page.keyboard.press("n")
                    page.wait_for_function(
                        "() => document.getElementById('progress-text').textContent.startsWith('Segment 15 ')"
                    )
                    moves.append((time.perf_counter() - started) * 1000 / 14)
                    context.close()
                browser.close()
        finally:
            server.stop()

    def summary(visits: list[dict]) -> dict:
        keys = [k for k in visits[0] if k != "by_url"]
        out = {k: statistics.median(v[k] for v in visits) for k in keys}
        out["by_url"] = visits[-1]["by_url"]
        return out

    report = {
        "document": f"{DOCUMENT} ({n} segments)",
        "first_visit": summary(first),
        "next_visit": summary(second),
        "segment_move_ms": round(statistics.median(moves), 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"annotate page, SNaC dev {report['document']}, median of {args.runs} runs, 1440x900")
    for name in ("first_visit", "next_visit"):
        v = report[name]
        print(
            f"  {name.replace('_', ' ')}: {v['requests']:.0f} requests over the network, "
            f"{v['transferred_bytes'] / 1024:.1f} KB transferred "
            f"({v['decoded_bytes'] / 1024:.1f} KB decoded); DOMContentLoaded "
            f"{v['dom_content_loaded_ms']:.0f} ms, load {v['load_ms']:.0f} ms, first segment "
            f"drawn {v['first_segment_drawn_ms']:.0f} ms"
        )
        for path, size in sorted(v["by_url"].items(), key=lambda kv: -kv[1]):
            print(f"      {size / 1024:6.1f} KB  {path}")
    print(
        f"  moving one segment (n key, 14 moves to segment 15): {report['segment_move_ms']:.0f} ms each"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
