"""CI runs with MARGINALIA_REQUIRE_DATA=1 (.ci/run): a test that needs ../shared/data then
fails when the data is missing instead of skipping silently; locally it still skips."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DATA_TEST = "tests/test_segmenting.py::test_sentence_spans_cover_real_segments"


def run_without_data(**env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "MARGINALIA_SHARED_DATA": "/nonexistent/shared/data"}
    environment.pop("MARGINALIA_REQUIRE_DATA", None)
    # the test needs no plugin (schemathesis, playwright, hypothesis load in seconds)
    environment["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", DATA_TEST],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_missing_data_fails_under_require_data_and_skips_otherwise():
    required = run_without_data(MARGINALIA_REQUIRE_DATA="1")
    assert required.returncode == 1, required.stdout
    assert "MARGINALIA_REQUIRE_DATA is set" in required.stdout
    relaxed = run_without_data()
    assert relaxed.returncode == 0 and "1 skipped" in relaxed.stdout, relaxed.stdout


def test_ci_entry_point_requires_the_data():
    assert "export MARGINALIA_REQUIRE_DATA=1" in (REPO / ".ci" / "run").read_text()


def test_tests_reach_the_shared_data_only_through_shared_file():
    """A fresh clone has no ../shared: a test that builds its own path to the data, or asks
    model_server for one (``snac_path``, ``shared_data_dir``), fails there instead of
    skipping (``snac_path("dev")`` read directly failed `make test` on a clone).
    Only ``tests/conftest.py::shared_file`` may, and it skips (or fails in CI)."""
    direct = re.compile(r"snac_path\(|shared_data_dir\(|MARGINALIA_SHARED_DATA|[\"']shared[\"']")
    allowed = {REPO / "tests" / "conftest.py", Path(__file__).resolve()}
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        if path not in allowed
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if direct.search(line)
    ]
    assert found == [], "\n".join(found)
