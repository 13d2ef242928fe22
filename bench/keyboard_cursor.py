"""How long one keyboard-cursor key takes on the annotate page, in Chromium.

The 26-segment SNaC summary of bench/page_weight.py (entity cues, hints), the worker at its
last segment (25 segments of context on screen, where a redraw costs most): each arrow press
moves the cursor and redraws the text (annotate/keyboard.js). Reports the milliseconds from
the keydown to the end of its handler (the redraw is synchronous), median, 95th percentile
and worst, for word moves, Shift-extends and sentence moves.

    .venv/bin/python bench/keyboard_cursor.py [--presses 200] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.page_weight import CHROMIUM_ARGS, Server, make_site  # noqa: E402

TIME_KEYS = """
([key, shift, presses]) => {
  const area = document.getElementById("text-area");
  const times = [];
  for (let i = 0; i < presses; i++) {
    const k = i % 40 < 20 ? key : (key === "ArrowRight" ? "ArrowLeft" : key === "ArrowLeft" ? "ArrowRight" : key === "ArrowDown" ? "ArrowUp" : "ArrowDown");
    const event = new KeyboardEvent("keydown", { key: k, shiftKey: shift, bubbles: true, cancelable: true });
    const start = performance.now();
    area.dispatchEvent(event);
    times.push(performance.now() - start);
  }
  return times;
}
"""


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return (
        f"median {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms, worst {ordered[-1]:.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument(
        "--chromium",
        default=os.environ.get("MARGINALIA_CHROMIUM")
        or shutil.which("chromium")
        or "/usr/bin/chromium",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        app, segments = make_site(Path(folder) / "bench.db")
        server = Server(app)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.goto(f"{server.url}/s/weight?worker_id=bench")
                page.wait_for_selector("#annotate:not(.is-loading)")
                for n in range(2, segments + 1):
                    page.keyboard.press("n")
                    page.wait_for_function(
                        "n => document.getElementById('progress-text').textContent"
                        ".startsWith('Segment ' + n + ' ')",
                        arg=n,
                    )
                page.focus("#text-area")
                page.keyboard.press("Home")
                print(f"{segments} segments, at the last; {args.presses} presses each")
                for label, key, shift in (
                    ("word (ArrowRight/Left)", "ArrowRight", False),
                    ("extend (Shift+ArrowRight/Left)", "ArrowRight", True),
                    ("sentence (ArrowDown/Up)", "ArrowDown", False),
                ):
                    times = page.evaluate(TIME_KEYS, [key, shift, args.presses])
                    print(f"{label:32} {summary(times)}")
                browser.close()
        finally:
            server.stop()
            app.extensions["db_engine"].dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
