"""``marginalia import --format thresh`` of a big crowd study (bench/scale_data.py's
synthetic Thresh file), wall time and the process's peak memory, this code and (``--code``)
an older checkout's, on a throw-away Postgres (bench/scale_data.py's cluster).

    .venv/bin/python bench/import_big.py --sizes 100000 [--code /tmp/main-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_data import REPO, SCALE_OUT, Cluster, write_thresh  # noqa: E402

BIN = REPO / ".venv" / "bin"


def run(url: str, *args: str, code: Path | None = None) -> tuple[float, float, str]:
    """Seconds, peak RSS (MB) and output of one ``marginalia`` command."""
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench"}
    command = [str(BIN / "marginalia"), *args]
    cwd = REPO
    if code is not None:  # run from there: ``-m`` puts the working folder first on the path
        env["PYTHONPATH"], cwd = str(code), code
        command = [str(BIN / "python"), "-m", "app.cli", *args]
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], env=env, cwd=cwd, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr[-2000:])
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return seconds, int(peak.group(1)) / 1024 if peak else 0.0, done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--code", type=Path, help="also import with this older checkout")
    args = parser.parse_args(argv)
    cluster = Cluster().start()
    results = []
    try:
        for size in [int(n) for n in args.sizes.split(",")]:
            path = SCALE_OUT / f"thresh-{size}.json"
            counts = write_thresh(path, size)
            for code in (None, args.code) if args.code else (None,):
                url = cluster.create("bench_import")
                run(url, "db", "upgrade", code=code)
                run(url, "study", "create", "big", "--taxonomy", "taxonomies/snac.yaml", code=code)
                load = os.getloadavg()[0]
                seconds, peak, said = run(
                    url, "import", "big", str(path), "--format", "thresh", "--no-ner", code=code
                )
                row = {
                    "size": size,
                    "code": "before" if code else "this",
                    "load": round(load, 1),
                    "seconds": round(seconds, 1),
                    "peak_rss_mb": round(peak, 1),
                    "file_mb": round(counts["bytes"] / 2**20, 1),
                    "annotations": counts["annotations"],
                    "said": said[:160],
                }
                results.append(row)
                print(json.dumps(row), flush=True)
    finally:
        cluster.stop()
    out = REPO / "bench" / "out" / f"import-{int(time.time())}.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
