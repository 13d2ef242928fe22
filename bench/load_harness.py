"""Shared pieces of the load benchmarks: Postgres + gunicorn started here, simulated crowd
workers with human-like think time, latency statistics.

Used by bench/load.py (Marginalia's API) and bench/falte_baseline.py (FALTE's design).
Traffic goes to 127.0.0.1 only; every loop is bounded by a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
SHARED_DATA = Path(os.environ.get("MARGINALIA_SHARED_DATA", REPO.parent / "shared" / "data"))
BIN = Path(sys.executable).parent
OUT = REPO / "bench" / "out"
ACCESS_FORMAT = "%(m)s %(U)s %(s)s %(D)s"  # gunicorn's: method, path, status, microseconds
GRANIAN_ACCESS = "%(method)s %(path)s %(status)d %(dt_ms).3f"  # granian's: milliseconds


# --- documents ------------------------------------------------------------------------------

FALLBACK_SENTENCES = [
    "Anna grows up in a small fishing town on the northern coast.",
    "Her brother Pedro leaves for the capital to study medicine.",
    "Years later, Anna receives a letter saying that he has vanished.",
    "She travels to the city and questions his landlady, Mrs. Hale.",
    "Mrs. Hale claims that Pedro never paid the rent and left in the night.",
    "At the hospital, a doctor tells Anna that Pedro was his best student.",
    "Anna finds a train ticket to the mountains in her brother's coat.",
    "In the village she meets a priest who hid Pedro from the police.",
    "The priest explains that Pedro witnessed a crime by a powerful man.",
    "Anna and Pedro return home together, and the town celebrates.",
]


def load_documents(count: int, max_segments: int) -> list[tuple[str, list[str]]]:
    """SNaC summaries (sentence per segment) if the shared data is here, else a fixed story."""
    documents: list[tuple[str, list[str]]] = []
    for name in ("dev.json", "train.json"):
        path = SHARED_DATA / "snac" / name
        if not path.exists():
            continue
        for doc_id, segments in json.loads(path.read_text()).items():
            texts = [segments[k]["text"] for k in sorted(segments, key=int)][:max_segments]
            if len(texts) >= 2 and all(t.strip() for t in texts):
                documents.append((doc_id, texts))
            if len(documents) >= count:
                return documents
    while len(documents) < count:
        n = len(documents)
        rotated = FALLBACK_SENTENCES[n % 10 :] + FALLBACK_SENTENCES[: n % 10]
        documents.append((f"story-{n}", rotated[:max_segments]))
    return documents


# --- servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_postgres(durable: bool = True):
    """The test suite's throw-away cluster; ``durable`` starts it with fsync,
    synchronous_commit and full_page_writes on (the suite runs with them off), so a commit
    costs what a real server pays. (They are the server's command-line options: an
    ``ALTER SYSTEM`` cannot turn them on, which is how the benches ran before 28 Nov.)"""
    from tests import pg_cluster

    cluster = pg_cluster.start_cluster(durable=durable)
    if cluster is None:
        raise SystemExit("no PostgreSQL server binaries (apt-get install postgresql)")
    if cluster.data_dir:
        import psycopg2

        connection = psycopg2.connect(cluster.url)
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == ("on" if durable else "off")
        connection.close()
    return cluster


def fresh_database(cluster, name: str) -> str:
    from tests import pg_cluster

    return pg_cluster.create_database(cluster, name)


def prepare_study(
    url: str,
    slug: str,
    documents: list[tuple[str, list[str]]],
    annotators_per_doc: int = 1000,
    suggestions: str = "hidden",
) -> None:
    """Migrate ``url`` and create study ``slug`` holding ``documents`` (no entity cues).

    Each document takes ``annotators_per_doc`` workers: a closed loop without think time
    goes through a hundred documents many times, and should measure the server, not the
    study running out of work."""
    from app import create_app
    from app.db import session_scope
    from app.documents.studies import create_study, import_documents
    from app.formats import DocumentInput
    from app.migrate import upgrade

    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"})
    with app.app_context(), session_scope() as session:
        study, _ = create_study(
            session,
            slug,
            REPO / "taxonomies" / "snac.yaml",
            suggestions=suggestions,
            annotators_per_doc=annotators_per_doc,
        )
        import_documents(session, study, [DocumentInput(d, list(s)) for d, s in documents])
    app.extensions["db_engine"].dispose()


@dataclass
class Gunicorn:
    """The web server as a child process (its own process group): by default the deployed
    one (marginalia web, granian); ``BENCH_SERVER=gunicorn`` runs gunicorn with
    gunicorn.conf.py instead."""

    app_spec: str
    database_url: str
    workers: int = 2
    threads: int = 8
    port: int = field(default_factory=free_port)
    access_log: Path | None = None
    process: subprocess.Popen | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    kind: str = field(default_factory=lambda: os.environ.get("BENCH_SERVER", "granian"))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, health_path: str = "/healthz", timeout: float = 60) -> Gunicorn:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "PORT": str(self.port),
            "WEB_CONCURRENCY": str(self.workers),
            "GUNICORN_THREADS": str(self.threads),
            "SECRET_KEY": "bench",
            "GUNICORN_LOG_LEVEL": "warning",
            # Every simulated worker arrives from 127.0.0.1: one address's arrival limit
            # would refuse most of them.
            "ARRIVAL_RATE_LIMIT": "1000000 per minute",
            **self.extra_env,
        }
        command = [
            str(BIN / "gunicorn"),
            "--config",
            "gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{self.port}",
        ]
        if self.access_log:
            command += [
                "--access-logfile",
                str(self.access_log),
                "--access-logformat",
                ACCESS_FORMAT,
            ]
        command.append(self.app_spec)
        if self.kind == "granian":
            # The deployed web process (marginalia web: granian, same processes and threads).
            env.update(WEB_HOST="127.0.0.1", WEB_THREADS=str(self.threads), WEB_LOG_LEVEL="warning")
            if self.access_log:
                env.update(
                    WEB_ACCESS_LOG=str(self.access_log), WEB_ACCESS_LOG_FORMAT=GRANIAN_ACCESS
                )
            module, _, factory = self.app_spec.removesuffix("()").partition(":")
            command = [sys.executable, "-m", "app.cli", "web"]
            env["WEB_APP"] = f"{module}:{factory}"
        OUT.mkdir(parents=True, exist_ok=True)
        self.log = open(OUT / f"gunicorn-{self.port}.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            start_new_session=True,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + health_path, timeout=5):
                    return self
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "gunicorn did not start: " + (OUT / f"gunicorn-{self.port}.log").read_text()
                    ) from None
                time.sleep(0.2)

    def worker_pids(self) -> list[int]:
        """The gunicorn worker processes (children of the arbiter)."""
        assert self.process is not None
        import psutil

        return [c.pid for c in psutil.Process(self.process.pid).children()]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if getattr(self, "log", None):
            self.log.close()


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process, its live children and its reaped children (user + system)."""
    import psutil

    try:
        root = psutil.Process(pid)
        times = root.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in root.children(recursive=True):
            try:
                child_times = child.cpu_times()
                total += child_times.user + child_times.system
            except psutil.NoSuchProcess:
                pass
        return total
    except psutil.NoSuchProcess:
        return 0.0


def server_cpu_split(server: Gunicorn, cluster) -> tuple[float, float]:
    """CPU seconds used so far by gunicorn (all workers) and by Postgres (all backends)."""
    web = process_cpu_seconds(server.process.pid) if server.process else 0.0
    database = 0.0
    if cluster.data_dir:
        pid_file = Path(cluster.data_dir) / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError):
            database = process_cpu_seconds(int(pid_file.read_text().split()[0]))
    return web, database


BACKGROUND = (
    "checkpointer",
    "background writer",
    "walwriter",
    "autovacuum",
    "logical replication",
    "io worker",
    "archiver",
)


def postgres_cpu_by_role(cluster) -> dict[str, float]:
    """Postgres's CPU seconds so far by process role, from the process titles: ``backend``
    (the sessions), one of :data:`BACKGROUND`, ``postmaster``, and ``exited`` (children
    already reaped: mostly autovacuum workers)."""
    import psutil

    roles: dict[str, float] = defaultdict(float)
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        pid = int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0])
        root = psutil.Process(pid)
        times = root.cpu_times()
        roles["postmaster"] += times.user + times.system
        roles["exited"] += times.children_user + times.children_system
        for child in root.children():
            with contextlib.suppress(psutil.Error):
                title = " ".join(child.cmdline()).removeprefix("postgres: ")
                role = next((r for r in BACKGROUND if title.startswith(r)), "backend")
                child_times = child.cpu_times()
                roles[role] += child_times.user + child_times.system
    return dict(roles)


def server_cpu_seconds(server: Gunicorn, cluster) -> float:
    """CPU used so far by gunicorn (all workers) plus Postgres (all backends)."""
    return sum(server_cpu_split(server, cluster))


def renice_servers(server: Gunicorn, cluster, niceness: int) -> None:
    """Give gunicorn and Postgres (and the processes they fork later) ``niceness``.

    On a machine shared with other CPU-heavy work this approximates a dedicated server; the
    figures are reported with the setting used."""
    import psutil

    roots = [server.process.pid] if server.process else []
    if cluster.data_dir:
        with contextlib.suppress(OSError, ValueError):
            roots.append(int((Path(cluster.data_dir) / "postmaster.pid").read_text().split()[0]))
    for pid in roots:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    process.nice(niceness)


# --- a light HTTP/1.1 client -----------------------------------------------------------------


class HttpResponse:
    """Status code and body of one answer (``json()`` like httpx's)."""

    def __init__(self, status_code: int, content: bytes, headers: dict[str, str] | None = None):
        self.status_code = status_code
        self.content = content
        self.headers = headers or {}  # lower-case names

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class MiniHttp:
    """One keep-alive HTTP/1.1 connection, as one browser tab holds: asyncio streams, no
    pooling machinery, so 300 simulated workers cost the client process little CPU (its
    latency figures are then the server's, not the client's own queueing).

    An idle connection older than ``idle_s`` (below gunicorn's keep-alive) is replaced
    before use; a request that finds its reused connection closed before any answer byte is
    sent once more on a fresh one, as browsers do. Anything else raises ``ConnectionError``.
    """

    def __init__(self, host: str, port: int, idle_s: float | None = None):
        if idle_s is None:  # reuse it while gunicorn keeps it open (browsers keep theirs longer)
            idle_s = float(os.environ.get("GUNICORN_KEEPALIVE", "75")) - 1
        self.host, self.port, self.idle_s = host, port, idle_s
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.last_used = 0.0

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(
        self, method: str, path: str, body: Any = None, form: dict[str, str] | None = None
    ) -> HttpResponse:
        """``body`` goes as JSON, ``form`` as an HTML form would send it."""
        if form is not None:
            payload = urllib.parse.urlencode(form).encode()
        else:
            payload = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Length: {len(payload)}\r\n"
        )
        if form is not None:
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
        elif body is not None:
            head += "Content-Type: application/json\r\n"
        message = (head + "\r\n").encode() + payload
        for attempt in range(2):
            fresh = self.writer is None or time.monotonic() - self.last_used > self.idle_s
            if fresh:
                await self.close()
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None and self.writer is not None
            try:
                self.writer.write(message)
                status_line = await self.reader.readline()
                if not status_line:
                    raise ConnectionResetError("connection closed before an answer")
                return await self._read_answer(status_line)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                await self.close()
                if fresh or attempt or not isinstance(exc, ConnectionResetError):
                    raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    async def _read_answer(self, status_line: bytes) -> HttpResponse:
        assert self.reader is not None
        status = int(status_line.split(b" ", 2)[1])
        length, close = None, False
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            headers[name.decode("latin-1")] = value.strip().decode("latin-1")
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
            elif name == b"transfer-encoding":
                raise ConnectionError("chunked answers are not expected from the API")
        if length is None:
            content = b"" if status in (204, 304) else await self.reader.read()
            close = close or status not in (204, 304)
        else:
            content = await self.reader.readexactly(length)
        self.last_used = time.monotonic()
        if close:
            await self.close()
        return HttpResponse(status, content, headers)


# --- behaviour ------------------------------------------------------------------------------


@dataclass
class Pace:
    """Human-like think times in seconds (uniform ranges), scaled by ``scale``."""

    read_segment: tuple[float, float] = (2.0, 6.0)  # reading one segment before acting
    mark: tuple[float, float] = (1.0, 4.0)  # selecting a span and choosing a category
    scale: float = 1.0

    async def think(self, rng: random.Random, kind: tuple[float, float]) -> float:
        """Wait a think time; return it in seconds (the page's timer counts it as active)."""
        if self.scale <= 0:
            return 0.0
        seconds = rng.uniform(*kind) * self.scale
        await asyncio.sleep(seconds)
        return seconds


ANNOTATIONS_PER_SEGMENT = ((0, 0.45), (1, 0.30), (2, 0.17), (3, 0.08))
REMOVE_PROBABILITY = 0.15  # a worker takes back one of their marks
PAIRED_PROBABILITY = 0.25
WORD = re.compile(r"\S+")


def choose_count(rng: random.Random) -> int:
    roll, total = rng.random(), 0.0
    for count, probability in ANNOTATIONS_PER_SEGMENT:
        total += probability
        if roll < total:
            return count
    return 0


def random_span(
    rng: random.Random, texts: list[str], segment: int, before: int | None = None
) -> dict[str, Any] | None:
    """A span of 1-4 whole words in ``texts[segment]`` (starting before ``before``, if given)."""
    words = [m.span() for m in WORD.finditer(texts[segment])]
    if before is not None:
        words = [w for w in words if w[0] < before]
    if not words:
        return None
    first = rng.randrange(len(words))
    last = min(len(words) - 1, first + rng.randrange(4))
    start, end = words[first][0], words[last][1]
    return {"segment": segment, "start": start, "end": end, "text": texts[segment][start:end]}


def random_annotation(
    rng: random.Random, texts: list[str], segment: int, categories: list[dict]
) -> dict[str, Any] | None:
    """An annotation body like the annotate page sends (code-point offsets, exact text)."""
    span = random_span(rng, texts, segment)
    if span is None:
        return None
    paired_cats = [c for c in categories if c["kind"] == "paired"]
    single_cats = [c for c in categories if c["kind"] != "paired"]
    if paired_cats and rng.random() < PAIRED_PROBABILITY:
        earlier = rng.randrange(segment + 1)
        paired = random_span(rng, texts, earlier, span["start"] if earlier == segment else None)
        if paired is not None:
            return {
                **span,
                "category": rng.choice(paired_cats)["id"],
                "paired": paired,
                "comment": "",
            }
    return {**span, "category": rng.choice(single_cats)["id"], "paired": None, "comment": ""}


# --- statistics ----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


@dataclass
class Stats:
    """Client-side latencies per endpoint, errors, retries and finished documents."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    moments: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)
    retries: int = 0
    documents: int = 0
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None

    def record(self, endpoint: str, seconds: float) -> None:
        self.latencies[endpoint].append(seconds)
        self.moments[endpoint].append(time.perf_counter() - self.started)

    def steady(self, after: float) -> dict[str, dict[str, float]]:
        """p50/p99 per endpoint of the requests sent ``after`` seconds into the run (once
        every simulated worker has arrived)."""
        table = {}
        for name, values in sorted(self.latencies.items()):
            kept = [v for v, t in zip(values, self.moments[name], strict=True) if t >= after]
            if kept:
                table[name] = {
                    "n": len(kept),
                    "p50_ms": round(percentile(kept, 50) * 1000, 2),
                    "p99_ms": round(percentile(kept, 99) * 1000, 2),
                }
        return table

    def error(self, endpoint: str, what: str) -> None:
        self.errors[endpoint] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{endpoint}: {what}")

    @property
    def elapsed(self) -> float:
        return (self.finished or time.perf_counter()) - self.started

    def summary(self) -> dict[str, Any]:
        total = sum(len(v) for v in self.latencies.values())
        return {
            "seconds": round(self.elapsed, 2),
            "requests": total,
            "requests_per_s": round(total / self.elapsed, 1),
            "documents": self.documents,
            "documents_per_s": round(self.documents / self.elapsed, 3),
            "errors": sum(self.errors.values()),
            "retries": self.retries,
            "endpoints": {
                name: {
                    "n": len(v),
                    "p50_ms": round(percentile(v, 50) * 1000, 2),
                    "p99_ms": round(percentile(v, 99) * 1000, 2),
                    "max_ms": round(max(v) * 1000, 2),
                    "errors": self.errors.get(name, 0),
                }
                for name, v in sorted(self.latencies.items())
            },
            "error_samples": self.error_samples,
        }


def server_latencies(access_log: Path, since_line: int = 0) -> tuple[dict[str, dict], int]:
    """p50/p99 per endpoint as the web server measured them (request in to response out)."""
    patterns = [(re.compile(p), n) for p, n in SERVER_ENDPOINTS]
    seen: dict[str, list[float]] = defaultdict(list)
    lines = access_log.read_text().splitlines() if access_log.exists() else []
    for line in lines[since_line:]:
        parts = line.split()
        if len(parts) != 4:
            continue
        method, path, _status, duration = parts
        seconds = float(duration) / 1e3 if "." in duration else int(duration) / 1e6
        for pattern, name in patterns:
            if pattern.fullmatch(f"{method} {path}"):
                seen[name].append(seconds)
                break
    return (
        {
            name: {
                "n": len(v),
                "p50_ms": round(percentile(v, 50) * 1000, 2),
                "p99_ms": round(percentile(v, 99) * 1000, 2),
            }
            for name, v in sorted(seen.items())
        },
        len(lines),
    )


SERVER_ENDPOINTS = [
    (r"POST /api/assignments", "open"),
    (r"GET /api/assignments/[^/]+", "get"),
    (r"POST /api/assignments/[^/]+/annotations", "add"),
    (r"DELETE /api/assignments/[^/]+/annotations/\d+", "remove"),
    (r"POST /api/assignments/[^/]+/position", "position"),
    (r"POST /api/assignments/[^/]+/heartbeat", "heartbeat"),
    (r"POST /api/assignments/[^/]+/suggestions/events", "events"),
    (r"POST /api/assignments/[^/]+/suggestions/\d+/events", "event"),
    (r"POST /api/assignments/[^/]+/submit", "submit"),
    (r"GET /falte/[^/]+/segment/\d+", "falte_segment"),
    (r"GET /falte/[^/]+", "falte_page"),
    (r"POST /falte/submit", "falte_submit"),
]


def print_summary(
    title: str, summary: dict[str, Any], server: dict[str, dict] | None = None, file=None
) -> None:
    file = file or sys.stdout
    print(f"\n== {title}", file=file)
    print(
        f"   {summary['requests']} requests in {summary['seconds']} s = "
        f"{summary['requests_per_s']} req/s; {summary['documents']} documents submitted = "
        f"{summary['documents_per_s']} docs/s; errors {summary['errors']}, "
        f"retries {summary['retries']}",
        file=file,
    )
    header = f"   {'endpoint':<14}{'n':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
    if server:
        header += f"{'srv p50':>9}{'srv p99':>9}"
    print(header, file=file)
    for name, row in summary["endpoints"].items():
        line = (
            f"   {name:<14}{row['n']:>8}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}"
            f"{row['max_ms']:>9.2f}"
        )
        if server and name in server:
            line += f"{server[name]['p50_ms']:>9.2f}{server[name]['p99_ms']:>9.2f}"
        print(line, file=file)
    for sample in summary["error_samples"]:
        print(f"   ! {sample}", file=file)
