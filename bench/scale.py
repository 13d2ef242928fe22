"""Big studies (issue 34): 10k / 100k / 1M stored annotations on Postgres, each operation
that grows with a study timed with its peak memory, output size and the load average.

    .venv/bin/python bench/scale.py build 10k        # the Thresh file, then marginalia import
    .venv/bin/python bench/scale.py measure 10k      # every operation; bench/out/scale-10k.json
    .venv/bin/python bench/scale.py measure 1m --only report,http
    .venv/bin/python bench/scale.py table            # the Markdown table of PERFORMANCE.md

The study is built once (``build``: the Thresh file of :mod:`scale_data`, imported with
``marginalia import --format thresh --no-ner``, timed) into a Postgres cluster kept under the
git-ignored bench/out/scale/, so later runs measure without rebuilding. Commands run as child
processes under ``/usr/bin/time -v`` (wall seconds, maximum resident set size); the web
server is ``marginalia web`` (granian, 2 processes x 8 threads), its peak memory sampled
every 50 ms. The machine may be shared: every figure carries the 1-minute load average
taken when it was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_big import PeakRss  # noqa: E402
from load_harness import BIN, OUT, REPO, Gunicorn  # noqa: E402
from scale_data import SCALE_OUT, SIZES, Cluster, write_thresh  # noqa: E402

SLUG = "scale"
EXPORTS = ("csv", "jsonl", "assignments-csv", "snac", "thresh", "labelstudio", "brat", "parquet")
HTTP_REPEAT = 5
EMAIL, PASSWORD = "bench@example.org", "bench-password-123"


def load() -> float:
    return round(os.getloadavg()[0], 2)


def timed(command: list[str], url: str, stdout: Path | None = None) -> dict[str, Any]:
    """Run ``command`` under /usr/bin/time -v: seconds, peak RSS (MB), load, exit status."""
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench", "PYTHONUNBUFFERED": "1"}
    before = load()
    started = time.perf_counter()
    with open(stdout or os.devnull, "w") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-v", *command], env=env, cwd=REPO, stdout=out, stderr=subprocess.PIPE
        )
    seconds = time.perf_counter() - started
    err = done.stderr.decode(errors="replace")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    result = {
        "seconds": round(seconds, 2),
        "peak_mb": round(int(peak.group(1)) / 1024, 1) if peak else None,
        "load": max(before, load()),
        "ok": done.returncode == 0,
    }
    if done.returncode != 0:
        result["error"] = err.strip().splitlines()[-25:]
    return result


def marginalia(*args: str) -> list[str]:
    return [str(BIN / "marginalia"), *args]


def build(size: str) -> dict[str, Any]:
    cluster = Cluster().start()
    try:
        path = SCALE_OUT / f"thresh-{size}.json"
        if not path.exists():
            print(f"writing {path} ...", flush=True)
            write_thresh(path, SIZES[size])
        url = cluster.create(f"scale_{size}")
        env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "bench"}
        for command in (
            marginalia("db", "upgrade"),
            marginalia("study", "create", SLUG, "--taxonomy", "taxonomies/snac.yaml"),
            marginalia("researcher", "create", EMAIL, "--admin", "--password", PASSWORD),
        ):
            subprocess.run(command, env=env, cwd=REPO, check=True, capture_output=True)
        print(f"importing {path.name} ...", flush=True)
        imported = timed(
            marginalia("import", SLUG, str(path), "--format", "thresh", "--no-ner"), url
        )
        imported["file_mb"] = round(path.stat().st_size / 2**20, 1)
        print(f"thresh import: {imported}", flush=True)
        cluster.vacuum(f"scale_{size}")
        result = {"thresh_import": imported}
        save(size, result)
        return result
    finally:
        cluster.stop()


def measure_cli(url: str, size: str, only: set[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    out = SCALE_OUT / "out"
    out.mkdir(parents=True, exist_ok=True)
    if "report" in only:
        target = out / f"report-{size}.json"
        results["report_cli"] = timed(marginalia("report", SLUG, "--json"), url, stdout=target)
        results["report_cli"]["bytes"] = target.stat().st_size
        print(f"report --json: {results['report_cli']}", flush=True)
        job = [sys.executable, "-m", "bench.scale_job", SLUG]
        if (REPO / "app" / "quality" / "figures.py").exists():
            results["recompute_job"] = timed(job, url)
            print(f"recompute job: {results['recompute_job']}", flush=True)
    if "exports" in only:
        for fmt in EXPORTS:
            target = out / f"export-{size}.{fmt}"
            if target.is_dir():
                import shutil

                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            found = timed(marginalia("export", SLUG, "--format", fmt, "--out", str(target)), url)
            found["bytes"] = (
                sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
                if target.is_dir()
                else (target.stat().st_size if target.exists() else 0)
            )
            results[f"export_{fmt}"] = found
            print(f"export {fmt}: {found}", flush=True)
    return results


def _login(client: Any) -> None:
    form = client.get("/admin/login").text
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form)
    answer = client.post(
        "/admin/login",
        data={"email": EMAIL, "password": PASSWORD, "csrf_token": token.group(1) if token else ""},
    )
    answer.raise_for_status()


def _timed_get(client: Any, path: str, repeat: int = HTTP_REPEAT) -> dict[str, Any]:
    times, size, status = [], 0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        answer = client.get(path)
        times.append(time.perf_counter() - started)
        size, status = len(answer.content), answer.status_code
    return {
        "median_ms": round(1000 * statistics.median(times), 1),
        "max_ms": round(1000 * max(times), 1),
        "bytes": size,
        "status": status,
        "load": load(),
    }


def _download(client: Any, path: str) -> dict[str, Any]:
    """A download as a researcher's browser takes it: streamed, or (a background export)
    asked for, waited on, then fetched from its link."""
    started = time.perf_counter()
    size, status = 0, 0
    try:
        with client.stream("GET", path) as answer:
            status = answer.status_code
            for chunk in answer.iter_bytes():
                size += len(chunk)
            kind = answer.headers.get("content-type", "")
        if status == 202 or kind.startswith("text/html"):
            size, status = _await_prepared(client, path)
    except Exception as exc:  # noqa: BLE001 - a killed worker is a figure, not a crash
        return {"ok": False, "error": repr(exc)[:300], "seconds": time.perf_counter() - started}
    return {
        "ok": status == 200,
        "status": status,
        "seconds": round(time.perf_counter() - started, 2),
        "bytes": size,
        "load": load(),
    }


def _await_prepared(client: Any, path: str) -> tuple[int, int]:
    """Poll a background export's status until its file is ready, then download it."""
    status_url = path + ("&" if "?" in path else "?") + "status=1"
    for _ in range(1200):
        state = client.get(status_url).json()
        if state.get("status") == "done":
            size = 0
            with client.stream("GET", state["download_url"]) as answer:
                for chunk in answer.iter_bytes():
                    size += len(chunk)
                return size, answer.status_code
        if state.get("status") == "failed":
            return 0, 500
        time.sleep(0.5)
    return 0, 504


def measure_http(url: str) -> dict[str, Any]:
    import httpx

    server = Gunicorn("app:create_app()", url, workers=2, threads=8).start()
    results: dict[str, Any] = {}
    try:
        sampler = PeakRss([server.process.pid, *server.worker_pids()])
        with httpx.Client(base_url=server.url, timeout=600, follow_redirects=True) as client:
            _login(client)
            for name, path in (
                ("dashboard", f"/admin/studies/{SLUG}"),
                ("report_json", f"/admin/studies/{SLUG}/report.json"),
                ("progress_json", f"/admin/studies/{SLUG}/progress.json"),
                ("review_page", f"/admin/studies/{SLUG}/review"),
            ):
                results[f"http_{name}"] = _timed_get(client, path)
                print(f"GET {name}: {results[f'http_{name}']}", flush=True)
            for fmt in ("parquet", "snac"):
                results[f"http_export_{fmt}"] = _download(
                    client, f"/admin/studies/{SLUG}/export.{fmt}"
                )
                print(f"download {fmt}: {results[f'http_export_{fmt}']}", flush=True)
        results["http_server_peak"] = {"peak_mb": round(sampler.stop(), 1), "load": load()}
        print(f"web server peak RSS: {results['http_server_peak']}", flush=True)
    finally:
        server.stop()
    return results


def measure(size: str, only: set[str]) -> dict[str, Any]:
    cluster = Cluster().start()
    try:
        url = cluster.url(f"scale_{size}")
        if not cluster.has(f"scale_{size}"):
            raise SystemExit(f"no study of size {size}: run `bench/scale.py build {size}` first")
        results = measure_cli(url, size, only)
        if "http" in only:
            results.update(measure_http(url))
    finally:
        cluster.stop()
    save(size, results)
    return results


def save(size: str, results: dict[str, Any]) -> None:
    path = OUT / f"scale-{size}.json"
    found = json.loads(path.read_text()) if path.exists() else {}
    for key, value in results.items():
        value = value if isinstance(value, dict) else {"value": value}
        found[key] = {**value, "measured": time.strftime("%Y-%m-%d %H:%M")}
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found, indent=1))


def table() -> str:
    """One row per operation: time / peak memory at each size (and the load average)."""
    found = {s: json.loads(p.read_text()) for s in SIZES if (p := OUT / f"scale-{s}.json").exists()}
    names = sorted({k for r in found.values() for k in r})
    lines = ["| operation | " + " | ".join(found) + " |", "|---" * (len(found) + 1) + "|"]
    for name in names:
        cells = []
        for results in found.values():
            r = results.get(name)
            if r is None:
                cells.append("")
                continue
            took = f"{r['median_ms']:.0f} ms" if "median_ms" in r else f"{r.get('seconds')} s"
            peak = f" / {r['peak_mb']:.0f} MB" if r.get("peak_mb") else ""
            fail = "" if r.get("ok", True) else " **failed**"
            cells.append(f"{took}{peak}{fail} (load {r.get('load')})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "measure", "table"))
    parser.add_argument("size", nargs="?", choices=tuple(SIZES), default="10k")
    parser.add_argument("--only", default="report,exports,http")
    args = parser.parse_args(argv)
    if args.action == "build":
        build(args.size)
    elif args.action == "measure":
        measure(args.size, set(args.only.split(",")))
    else:
        print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
