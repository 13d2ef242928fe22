"""A book-length document on the annotate page, in headless Chromium.

One document of 2,000 segments (SNaC's summaries one after another, ~58k words, entity cues
from spaCy), served over real HTTP from a SQLite file kept under bench/out/ (built once).
Two workers: one at segment 1, one at segment 1,500. For each: the first paint (navigation
to the current segment drawn), the DOM's element count, and, 15 times each, the time from
the key to the next painted frame of a move to the next segment (``n``), a selection in
the current segment (mouse up) and an add (a category, then Ctrl+Enter), plus the handler's
own synchronous time. The first paint is measured on the page's own clock, from the
navigation's start to the frame the current segment is drawn in: once with an empty browser
cache (cold) and five times again (warm: the modules cached, as on a worker's next document;
the median). Acceptance: a move or an add at segment 1,500 within 1.5 times its time at
segment 1; the first paint warm under 200 ms.

    .venv/bin/python bench/long_document.py [--segments 2000] [--at 1500] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from page_weight import CHROMIUM_ARGS, Server  # noqa: E402
from scale_data import long_document  # noqa: E402

OUT = ROOT / "bench" / "out"
REPEAT = 15

STEP = """
async ([kind]) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const text = () => document.querySelector(".cur-text .seg-text");
  let t0 = 0, sync = 0;
  if (kind === "move") {
    t0 = performance.now();
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "n", bubbles: true }));
    sync = performance.now() - t0;
  } else {
    // a word of the current segment selected as a mouse would (the selection, then mouseup)
    const node = [...text().childNodes].find((n) => n.nodeType === 3 && /\\w{4}/.test(n.data))
      || text().firstChild;
    const found = /\\w{4,}/.exec(node.textContent);
    const range = document.createRange();
    const at = node.nodeType === 3 ? node : node.firstChild;
    range.setStart(at, found ? found.index : 0);
    range.setEnd(at, found ? found.index + found[0].length : 1);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    if (kind === "select") {
      t0 = performance.now();
      document.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
      await new Promise((r) => setTimeout(r, 0));
      sync = performance.now() - t0;
    } else {
      document.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
      await new Promise((r) => setTimeout(r, 0));
      document.querySelector('.cat-btn[data-category="GramE"]').click();
      await frame();
      t0 = performance.now();
      document.dispatchEvent(
        new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true, bubbles: true }),
      );
      sync = performance.now() - t0;
    }
  }
  await frame();
  return [sync, performance.now() - t0];
}
"""


def make_site(database: Path, segments: int):
    """The study "long" with its one document, from a cached SQLite file when present."""
    from app import create_app
    from app.migrate import upgrade

    url = f"sqlite:///{database}"
    fresh = not database.exists()
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "TESTING": False})
    if fresh:
        from app.db import session_scope
        from app.documents.studies import create_study, import_documents
        from app.entities import load_pipeline
        from app.formats import DocumentInput

        texts = long_document(segments)
        print(f"building: {len(texts)} segments, {sum(len(t.split()) for t in texts)} words")
        with app.app_context(), session_scope() as session:
            study, _ = create_study(
                session, "long", ROOT / "taxonomies" / "snac.yaml", suggestions="off"
            )
            import_documents(session, study, [DocumentInput("book", texts)], nlp=load_pipeline())
    from sqlalchemy import update

    from app.db import session_scope
    from app.models import Study

    with app.app_context(), session_scope() as session:  # every run brings new workers
        session.execute(update(Study).values(annotators_per_doc=1_000_000))
    return app


def place(app, server_url: str, worker: str, segment: int) -> str:
    """Open the worker's assignment and put them at ``segment`` (0-based)."""
    import httpx
    from sqlalchemy import update

    from app.db import session_scope
    from app.models import Assignment

    answer = httpx.post(
        f"{server_url}/api/assignments",
        json={"study": "long", "document": "book", "worker_id": worker},
    )
    assert answer.status_code in (200, 201), answer.text
    token = answer.json()["token"]
    with app.app_context(), session_scope() as session:
        session.execute(
            update(Assignment).where(Assignment.token == token).values(current_segment=segment)
        )
    return token


PAINTED = """
(() => {
  // installed before the page's own scripts: the frame after the current segment's text is
  // in the page (its paint), on the page's clock
  const seen = () => document.querySelector("#annotate:not(.is-loading) .cur-text .seg-text");
  const observer = new MutationObserver(() => {
    if (!seen()) return;
    observer.disconnect();
    requestAnimationFrame(() => { window.__painted = performance.now(); });
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
})();
"""


def first_paint(page, url: str) -> tuple[float, float]:
    """From the navigation's start to the frame the current segment is painted in (the
    page's own clock, so the test's round trips do not count), and DOMContentLoaded."""
    page.goto(url)
    page.wait_for_function("() => window.__painted !== undefined")
    painted = page.evaluate("() => window.__painted")
    nav = page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {start: n.startTime, dcl: n.domContentLoadedEventEnd}; }"
    )
    return painted - nav["start"], nav["dcl"]


def measure(page, url: str) -> dict:
    cold, dcl = first_paint(page, url)  # the browser's cache empty: every module fetched
    warm = sorted(
        first_paint(page, url)[0] for _ in range(5)
    )  # modules cached, as a worker's next page
    found: dict = {
        "first_paint_ms": round(cold, 1),
        "first_paint_warm_ms": round(statistics.median(warm), 1),
        "first_paint_warm_all_ms": [round(x, 1) for x in warm],
        "dom_content_loaded_ms": round(dcl, 1),
        "elements": page.evaluate("() => document.getElementsByTagName('*').length"),
        "context_segments_drawn": page.evaluate(
            "() => document.querySelectorAll('#context .ctx-seg').length"
        ),
    }
    for kind in ("select", "add", "move"):
        frames, syncs = [], []
        for _ in range(REPEAT):
            sync, total = page.evaluate(STEP, [kind])
            syncs.append(sync)
            frames.append(total)
            if kind != "move":
                page.keyboard.press("Escape")
        found[kind] = {
            "median_ms": round(statistics.median(frames), 1),
            "max_ms": round(max(frames), 1),
            "handler_median_ms": round(statistics.median(syncs), 1),
        }
    found["elements_after"] = page.evaluate("() => document.getElementsByTagName('*').length")
    return found


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=2000)
    parser.add_argument("--at", type=int, default=1500, help="the far segment (1-based)")
    parser.add_argument(
        "--chromium",
        default=os.environ.get("MARGINALIA_CHROMIUM")
        or shutil.which("chromium")
        or "/usr/bin/chromium",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    app = make_site(OUT / f"long-{args.segments}.db", args.segments)
    server = Server(app)
    results: dict = {"segments": args.segments, "load": round(os.getloadavg()[0], 2)}
    try:
        stamp = int(time.time())
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS
            )
            for label, segment in (("segment_1", 0), (f"segment_{args.at}", args.at - 1)):
                token = place(app, server.url, f"bench-{stamp}-{segment}", segment)
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.add_init_script(PAINTED)
                results[label] = measure(page, f"{server.url}/a/{token}")
                print(label, json.dumps(results[label]))
                page.close()
            browser.close()
    finally:
        server.stop()
        app.extensions["db_engine"].dispose()
    near, far = results["segment_1"], results[f"segment_{args.at}"]
    for kind in ("move", "add", "select"):
        ratio = far[kind]["median_ms"] / max(near[kind]["median_ms"], 0.1)
        results[f"{kind}_ratio"] = round(ratio, 2)
        print(f"{kind}: {ratio:.2f} x at segment {args.at} (target <= 1.5)")
    results["load_after"] = round(os.getloadavg()[0], 2)
    path = OUT / f"long-document-{stamp}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"figures written to {path} (load {results['load']} -> {results['load_after']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
