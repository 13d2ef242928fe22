"""Every process (web worker, CLI export, the figure job) starts from ``create_app``: what it
imports is paid in memory by all of them. SciPy and matplotlib (~110 MB together) are for
comparing systems only and are loaded by the first comparison (they
were most of the parquet export's and the report job's memory peaks)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("scipy", "matplotlib", "torch", "transformers", "spacy", "pandas", "numba")


def test_the_app_loads_no_heavy_library_until_a_feature_needs_it(tmp_path):
    code = (
        "import sys\n"
        "from app import create_app\n"
        f"app = create_app({{'DATABASE_URL': 'sqlite:///{tmp_path}/x.db', 'SECRET_KEY': 'x'}})\n"
        "client = app.test_client()\n"
        "assert client.get('/').status_code in (200, 302)\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"loaded at start: {done.stdout.strip()}"
