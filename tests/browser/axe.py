"""axe-core, the web's accessibility checker, run inside the pages the browser tests open.

axe-core comes from the npm registry (like Chromium from Debian's, never committed): pinned
here, installed once into the git-ignored ``.venv/axe`` (``make test`` does it up front with
``python -m tests.browser.axe``; the ``axe_source`` fixture does it on first use). Without
npm or the registry the checks skip with the reason, or fail where ``make test`` sets
MARGINALIA_REQUIRE_BROWSER.

:func:`check` injects axe into a page with ``page.evaluate`` (the app's CSP allows no
injected script tag) and runs the WCAG 2.0/2.1/2.2 A and AA rules; a violation of impact
serious or critical fails, and every result (minor ones too) is written to
``tests/.artifacts/axe/<name>.json`` (git-ignored) for reading.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

AXE_VERSION = "4.14.1"
REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".venv" / "axe"
SCRIPT = PREFIX / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
FAILING = ("serious", "critical")
REPORTS = REPO / "tests" / ".artifacts" / "axe"


def installed_version() -> str | None:
    package = SCRIPT.parent / "package.json"
    if not package.exists():
        return None
    return json.loads(package.read_text("utf-8")).get("version")


def install() -> str:
    """Install the pinned axe-core under .venv/axe (nothing when it is there); return the
    path of axe.min.js. Raises RuntimeError with the reason when that cannot be done."""
    if installed_version() == AXE_VERSION:
        return str(SCRIPT)
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed (Debian: apt-get install npm)")
    PREFIX.mkdir(parents=True, exist_ok=True)
    command = [
        npm,
        "install",
        "--prefix",
        str(PREFIX),
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        f"axe-core@{AXE_VERSION}",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise RuntimeError("npm install axe-core took over 5 minutes") from None
    if done.returncode != 0 or installed_version() != AXE_VERSION:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"npm install axe-core@{AXE_VERSION} failed: {' '.join(tail)}")
    return str(SCRIPT)


def run(page, *, include: str | None = None) -> dict:
    """axe's results for the page as it is now (axe injected once per document)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(SOURCE["text"])
    return page.evaluate(
        """async ([tags, include]) => {
             const context = include ? { include: [include] } : document;
             const results = await window.axe.run(context, {
               runOnly: { type: "tag", values: tags },
               resultTypes: ["violations"],
             });
             return { violations: results.violations, url: results.url };
           }""",
        [TAGS, include],
    )


SOURCE: dict[str, str] = {}


def check(page, name: str, *, include: str | None = None) -> list[str]:
    """Run axe on the page; write the report; return the serious and critical violations,
    one line each (rule, what it wants, the elements), [] when there are none."""
    if "text" not in SOURCE:
        raise RuntimeError("axe is not loaded: use the axe_source fixture")
    results = run(page, include=include)
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{name}.json").write_text(json.dumps(results, indent=1), "utf-8")
    problems = []
    for violation in results["violations"]:
        if violation["impact"] not in FAILING:
            continue
        targets = [" ".join(map(str, node["target"])) for node in violation["nodes"][:4]]
        more = len(violation["nodes"]) - len(targets)
        problems.append(
            f"{name}: {violation['id']} ({violation['impact']}): {violation['help']} — "
            + "; ".join(targets)
            + (f" and {more} more" if more > 0 else "")
            + f" [{_summary(violation['nodes'][0])}]"
        )
    return problems


def _summary(node: dict) -> str:
    text = (node.get("failureSummary") or "").replace("\n", " ")
    return text[:300]


def load(path: str) -> None:
    SOURCE["text"] = Path(path).read_text("utf-8")


def required() -> bool:
    return bool(os.environ.get("MARGINALIA_REQUIRE_BROWSER"))


if __name__ == "__main__":  # `make test`: install before the suite runs
    try:
        print(install())
    except RuntimeError as exc:
        print(f"axe-core: {exc}", file=sys.stderr)
        sys.exit(1)
