"""Marginalia side by side with FALTE's real app: server CPU per finished document.

FALTE (Goyal, Li and Durrett, "FALTE: A Toolkit for Fine-grained Annotation for Long Text
Evaluation", EMNLP 2022 demos) publishes its Flask app (github.com/tagoyal/falte-tool). This
bench runs that code, not a reproduction (bench/falte_baseline.py is one, on our stack):

    git clone https://github.com/tagoyal/falte-tool ../falte-tool
    PYTHONPATH=$PWD .venv/bin/python bench/falte_real.py --falte-repo ../falte-tool --pairs 22

- FALTE runs in its own environment (its ``requirements.txt``: Flask 2.0, Flask-SQLAlchemy
  2.5, SQLAlchemy 1.4, psycopg2; plus our granian), made once in ``bench/out/falte-venv``
  (``--falte-python`` names another), under granian's WSGI interface, 2 processes x 8
  threads, with only the database URL taken from the environment (bench/falte_wsgi.py);
  ours is ``marginalia web`` with its defaults (2 x 8, the front on). One Postgres (the
  suite's cluster, fsync on), a fresh database each; the same documents (SNaC summaries, a
  sentence per segment: FALTE reads them from a ``stories.json`` written here).
- Clients: closed loop (``--think-scale 0``) simulated annotators. FALTE's real request
  pattern, as its page (static/js/annotation.js) sends it: ``GET /id=<story>``, one
  ``GET /next?story_id=…&sentence_id=N`` per further sentence, marks kept in the page as
  ``<ADD> {json} <END>`` / ``<DEL> i <END>`` actions, one ``POST /submitform`` at the end
  (FALTE stores the rows, a commit each) and the ``GET /feedback/<code>`` its redirect
  leads to; ours: bench/load.py's simulated worker (the annotate page's requests: every
  add, remove and move committed as it happens). Neither fetches static files.
- ``--pairs`` interleaved pairs per client count (FALTE first in odd pairs, ours first in
  even ones), each run ``--seconds`` long. Per run: finished documents, documents/s, web
  and Postgres CPU per document (from /proc: the server's process tree, the cluster's), the
  load average. Then the sums per side and the ratios, and the rows check: FALTE's table
  holds exactly the rows its submits should have stored, and every add, remove and
  annotation ours acknowledged is in the database as acknowledged (0 lost either side).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    OUT,
    REMOVE_PROBABILITY,
    REPO,
    Gunicorn,
    MiniHttp,
    Pace,
    Stats,
    choose_count,
    free_port,
    fresh_database,
    load_documents,
    prepare_study,
    process_cpu_seconds,
    random_annotation,
    start_postgres,
)

from app.documents.taxonomy import load_taxonomy  # noqa: E402

# --- FALTE's environment and server ---------------------------------------------------------


def falte_python(repo: Path, given: str | None) -> Path:
    """A Python with FALTE's requirements and our granian: ``given``, or a virtualenv made
    once in bench/out/falte-venv (made again when the requirements change)."""
    if given:
        return Path(given)
    import granian

    requirements = (repo / "requirements.txt").read_bytes()
    stamp_name = hashlib.sha1(requirements + granian.__version__.encode()).hexdigest()[:12]
    venv = OUT / "falte-venv"
    stamp = venv / f".installed-{stamp_name}"
    python = venv / "bin" / "python"
    if not stamp.exists():
        print(f"making FALTE's environment in {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "-r", str(repo / "requirements.txt")], check=True)
        # FALTE pins click 8.0.3, which granian's command line refuses; its server does not
        # need it (bench/falte_wsgi.py starts granian's Server directly).
        subprocess.run([*pip, "--no-deps", f"granian=={granian.__version__}"], check=True)
        stamp.touch()
    return python


@dataclass
class FalteServer:
    """FALTE's app under granian (bench/falte_wsgi.py) as a child process."""

    repo: Path
    python: Path
    database_url: str
    documents: list[tuple[str, list[str]]]
    workers: int = 2
    threads: int = 8
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> FalteServer:
        folder = OUT / f"falte-run-{self.port}"
        folder.mkdir(parents=True, exist_ok=True)
        stories = {doc: {"sentences": texts} for doc, texts in self.documents}
        (folder / "stories.json").write_text(json.dumps(stories))
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        }
        env.update(
            DATABASE_URL=self.database_url,
            PORT=str(self.port),
            WEB_CONCURRENCY=str(self.workers),
            WEB_THREADS=str(self.threads),
            PYTHONPATH=f"{self.repo.resolve()}{os.pathsep}{REPO / 'bench'}",
        )
        self.log = open(folder / "server.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(self.python), str(REPO / "bench" / "falte_wsgi.py")],
            cwd=folder,
            env=env,
            start_new_session=True,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "/feedback/ready", timeout=5):
                    return self
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "FALTE did not start: " + (folder / "server.log").read_text()[-3000:]
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        if getattr(self, "log", None):
            self.log.close()


# --- FALTE's request pattern ------------------------------------------------------------------


@dataclass
class FalteLedger:
    """Rows FALTE's submits should have stored: a row per mark kept, or one ``no-error``."""

    expected_rows: int = 0


async def falte_annotator(
    number: int,
    port: int,
    stats: Stats,
    ledger: FalteLedger,
    deadline: float,
    documents: list[tuple[str, list[str]]],
    pace: Pace,
    tag: str,
    start_delay: float,
) -> None:
    rng = random.Random(f"{tag}-{number}")
    categories = load_taxonomy(REPO / "taxonomies" / "snac.yaml")["categories"]
    await asyncio.sleep(start_delay)
    http = MiniHttp("127.0.0.1", port)
    try:
        for index in rng.sample(range(len(documents)), len(documents)):
            if time.monotonic() >= deadline:
                return
            if not await _falte_document(rng, http, stats, ledger, deadline, documents[index],
                                         pace, categories):  # fmt: skip
                return
    except ConnectionError as exc:
        stats.error("connection", str(exc))
    finally:
        await http.close()


async def _falte_document(rng, http, stats, ledger, deadline, document, pace, categories) -> bool:
    """One document as FALTE's page does it; False when the run is over or failed."""
    story, texts = document
    quoted = urllib.parse.quote(story, safe="")

    async def get(endpoint: str, path: str) -> bool:
        started = time.perf_counter()
        answer = await http.request("GET", path)
        stats.record(endpoint, time.perf_counter() - started)
        if answer.status_code != 200:
            stats.error(endpoint, f"HTTP {answer.status_code}")
        return answer.status_code == 200

    if not await get("falte_page", f"/id={quoted}"):
        return False
    actions = f"{story} <END> "
    kept = 0
    for segment in range(len(texts)):
        if segment and not await get(
            "falte_segment", f"/next?story_id={quoted}&sentence_id={segment}"
        ):
            return False
        await pace.think(rng, pace.read_segment)
        for _ in range(choose_count(rng)):
            await pace.think(rng, pace.mark)
            body = random_annotation(rng, texts, segment, categories)
            if body is None:
                continue
            paired = body["paired"] or {"start": 0, "end": 0, "text": ""}
            mark = {
                "segmentId": segment,
                "error": body["category"],
                "span_1": {"start": body["start"], "end": body["end"], "text": body["text"]},
                "span_2": {k: paired[k] for k in ("start", "end", "text")},
                "feedback": "",
            }
            actions += f"<ADD> {json.dumps(mark)} <END> "
            kept += 1
        if kept and rng.random() < REMOVE_PROBABILITY:
            await pace.think(rng, pace.mark)
            actions += f"<DEL> {rng.randrange(kept)} <END> "
            kept -= 1
        if time.monotonic() >= deadline:
            return False  # the marks never left the page
    await pace.think(rng, pace.read_segment)
    started = time.perf_counter()
    answer = await http.request("POST", "/submitform", form={"all-annotations": actions})
    stats.record("falte_submit", time.perf_counter() - started)
    location = answer.headers.get("location", "")
    if answer.status_code != 302 or "feedback/" not in location:
        stats.error("falte_submit", f"HTTP {answer.status_code}")
        return False
    ledger.expected_rows += max(1, kept)
    code = location.rsplit("feedback/", 1)[1]
    if await get("falte_feedback", f"/feedback/{code}"):
        stats.documents += 1
    return True


async def run_falte(port: int, documents, level: int, seconds: float, ramp: float, pace, tag):
    stats, ledger = Stats(), FalteLedger()
    deadline = time.monotonic() + ramp + seconds
    rng = random.Random(tag)
    await asyncio.gather(
        *(
            falte_annotator(
                n, port, stats, ledger, deadline, documents, pace, tag, rng.uniform(0, ramp)
            )
            for n in range(level)
        )
    )
    stats.finished = time.perf_counter()
    return stats, ledger


# --- the pairs ---------------------------------------------------------------------------------


def cluster_cpu(cluster) -> float:
    pid = int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0])
    return process_cpu_seconds(pid)


def one_run(side: str, servers: dict, cluster, documents, level: int, args, pace) -> dict:
    server = servers[side]
    tag = f"{side}-c{level}-{uuid.uuid4().hex[:6]}"
    load_before = os.getloadavg()[0]
    web_before, db_before = process_cpu_seconds(server.process.pid), cluster_cpu(cluster)
    if side == "falte":
        stats, ledger = asyncio.run(
            run_falte(server.port, documents, level, args.seconds, args.ramp, pace, tag)
        )
        acked = ledger.expected_rows
    else:
        from load import run_level

        stats = asyncio.run(
            run_level(server.url, "bench", documents, level, args.seconds, args.ramp, pace, tag)
        )
        acked = stats.caller  # type: ignore[attr-defined]
    web = process_cpu_seconds(server.process.pid) - web_before
    database = cluster_cpu(cluster) - db_before
    documents_done = stats.documents
    requests = sum(len(v) for v in stats.latencies.values())
    row = {
        "side": side,
        "level": level,
        "documents": documents_done,
        "requests": requests,
        "seconds": stats.elapsed,
        "web_s": web,
        "postgres_s": database,
        "errors": sum(stats.errors.values()),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    per = 1000 / documents_done if documents_done else float("nan")
    print(
        f"{side:>10} {level:>4} clients: {documents_done:5d} documents, "
        f"{documents_done / stats.elapsed:6.1f}/s, {requests * per / 1000:5.1f} requests each; "
        f"per document web {web * per:6.2f} ms, "
        f"Postgres {database * per:6.2f} ms; errors {row['errors']}; "
        f"load {load_before:.1f} -> {row['load_after']:.1f}",
        flush=True,
    )
    return row | {"acked": acked}


def check_rows(falte_url: str, ours_url: str, falte_expected: int, callers: list) -> dict:
    """0 lost: FALTE's table against its submits; ours against every acknowledgement."""
    from sqlalchemy import create_engine, text

    engine = create_engine(falte_url)
    with engine.connect() as connection:
        falte_rows = connection.execute(text("SELECT count(*) FROM annotation_v2")).scalar_one()
    engine.dispose()
    adds = {i for c in callers for i in c.acked_adds}
    removes = {i for c in callers for i in c.acked_removes}
    engine = create_engine(ours_url)
    with engine.connect() as connection:
        stored = dict(
            connection.execute(
                text("SELECT id, removed_at IS NOT NULL FROM annotations WHERE id = ANY(:ids)"),
                {"ids": sorted(adds | removes)},
            ).all()
        )
    engine.dispose()
    lost_adds = [i for i in adds if i not in stored]
    undone = [i for i in removes if not stored.get(i)]
    revived = [i for i in adds - removes if stored.get(i)]
    return {
        "falte_rows": falte_rows,
        "falte_expected": falte_expected,
        "falte_lost": falte_expected - falte_rows,
        "ours_acked_adds": len(adds),
        "ours_acked_removes": len(removes),
        "ours_lost": len(lost_adds) + len(undone) + len(revived),
    }


def summarise(rows: list[dict], level: int, skip_first: bool) -> dict[str, dict]:
    sums: dict[str, dict] = {}
    for row in rows:
        if row["level"] != level or (skip_first and row["pair"] == 0):
            continue
        total = sums.setdefault(row["side"], {"documents": 0, "seconds": 0.0, "web_s": 0.0,
                                              "postgres_s": 0.0})  # fmt: skip
        for key in total:
            total[key] += row[key]
    return sums


def print_summary(rows: list[dict], levels: list[int], pairs: int) -> None:
    for skip_first in (False, True) if pairs > 1 else (False,):
        print(f"\n== all {pairs} pairs" if not skip_first else "\n== pairs 2..N (not the first)")
        for level in levels:
            sums = summarise(rows, level, skip_first)
            if set(sums) != {"falte", "ours"} or not all(s["documents"] for s in sums.values()):
                continue
            per = {}
            for side, s in sums.items():
                n = s["documents"]
                per[side] = {
                    "web": 1000 * s["web_s"] / n,
                    "postgres": 1000 * s["postgres_s"] / n,
                    "total": 1000 * (s["web_s"] + s["postgres_s"]) / n,
                    "rate": n / s["seconds"],
                }
                print(
                    f"   {level:>4} clients {side:>6}: {n} documents, {per[side]['rate']:.1f}/s; "
                    f"server CPU per document {per[side]['total']:.2f} ms (web "
                    f"{per[side]['web']:.2f}, Postgres {per[side]['postgres']:.2f})"
                )
            ratio = {k: per["ours"][k] / per["falte"][k] for k in per["ours"]}
            print(
                f"   {level:>4} clients ours / FALTE: server CPU per document x{ratio['total']:.2f}"
                f" (web x{ratio['web']:.2f}, Postgres x{ratio['postgres']:.2f}), "
                f"documents/s x{ratio['rate']:.2f}"
            )
            # What x0.8 would leave for Postgres once our web CPU is paid: a lower bound that
            # needs no guess about what Postgres could be brought to.
            left = 0.8 * per["falte"]["total"] - per["ours"]["web"]
            print(
                f"   {level:>4} clients our web CPU alone: x{per['ours']['web'] / per['falte']['total']:.2f}"
                f" of FALTE's whole; x0.8 would leave Postgres {left:.2f} ms a document"
                f" (ours: {per['ours']['postgres']:.2f}, FALTE's: {per['falte']['postgres']:.2f})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--falte-repo", required=True, type=Path, help="a checkout of FALTE")
    parser.add_argument("--falte-python", help="a Python with FALTE's requirements and granian")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--concurrency", default="32,128")
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--ramp", type=float, default=2)
    parser.add_argument("--think-scale", type=float, default=0.0)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--max-segments", type=int, default=10)
    args = parser.parse_args(argv)
    if not (args.falte_repo / "app.py").exists():
        parser.error(f"{args.falte_repo} holds no app.py: not a checkout of FALTE")
    if args.pairs < 1 or args.pairs > 100 or args.seconds > 600:
        parser.error("bounded: 1 to 100 pairs, at most 600 seconds a run")

    OUT.mkdir(parents=True, exist_ok=True)
    python = falte_python(args.falte_repo, args.falte_python)
    documents = load_documents(args.documents, args.max_segments)
    levels = [int(c) for c in args.concurrency.split(",")]
    pace = Pace(scale=args.think_scale)
    cluster = start_postgres(durable=True)
    servers: dict[str, Any] = {}
    rows: list[dict] = []
    try:
        falte_url = fresh_database(cluster, "falte_real")
        ours_url = fresh_database(cluster, "marginalia_real")
        prepare_study(ours_url, "bench", documents)
        servers["falte"] = FalteServer(args.falte_repo, python, falte_url, documents).start()
        servers["ours"] = Gunicorn("app:create_app()", ours_url).start()
        print(
            f"FALTE ({args.falte_repo}) and marginalia web, each granian 2 x 8; Postgres "
            f"durable; {len(documents)} documents; {args.pairs} pairs of {args.seconds:.0f} s "
            f"at {levels} clients, think scale {args.think_scale}; load average "
            f"{os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for pair in range(args.pairs):
            for level in levels:
                order = ("falte", "ours") if pair % 2 == 0 else ("ours", "falte")
                for side in order:
                    row = one_run(side, servers, cluster, documents, level, args, pace)
                    rows.append(row | {"pair": pair})
        falte_expected = sum(r["acked"] for r in rows if r["side"] == "falte")
        callers = [r["acked"] for r in rows if r["side"] == "ours"]
        check = check_rows(falte_url, ours_url, falte_expected, callers)
    finally:
        for server in servers.values():
            server.stop()
        cluster.stop()
    print_summary(rows, levels, args.pairs)
    print(
        f"\n   rows: FALTE {check['falte_rows']} stored of {check['falte_expected']} submitted "
        f"({check['falte_lost']} lost"
        + (": FALTE's own errors, in bench/out/falte-run-*/server.log)" if check["falte_lost"]
           else ")")
        + f"; ours {check['ours_acked_adds']} adds and {check['ours_acked_removes']} removes "
        f"acknowledged, {check['ours_lost']} lost"
    )  # fmt: skip
    path = OUT / f"falte-real-{int(time.time())}.json"
    for row in rows:
        row.pop("acked")
    path.write_text(json.dumps({"args": vars(args) | {"falte_repo": str(args.falte_repo)},
                                "runs": rows, "rows": check}, indent=1, default=str))  # fmt: skip
    print(f"   figures written to {path}")
    return 0 if check["falte_lost"] == 0 and check["ours_lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
