"""Slow and held request bodies against ``marginalia web``: while N clients send
``POST /api/assignments`` with ``Content-Length: 60000`` one byte a second, and H more hold
large bodies open one byte short, how long does an ordinary GET take, and what happens to
the server's memory and disk?

    PYTHONPATH=$PWD .venv/bin/python bench/slow_clients.py --clients 0 24 200 --held 100

The server is the deployed one with its defaults (``marginalia web``: 2 processes x 8
threads; ``BENCH_SERVER=gunicorn`` for gunicorn.conf.py) on an SQLite file (``--postgres``:
the suite's throw-away cluster), its temporary files in a folder of its own. For each N the
slow clients connect, the H holders each declare ``--held-size`` bytes (32 MB: the upload
limit, to a worker's route) and send all but the last byte as fast as the server reads
them, then a prober sends an ordinary GET one after another (alternating ``/healthz``, the
worker API's ``GET /api/assignments/<token>`` and the login page, each on a fresh
connection, 10 s timeout) for ``--seconds``; a client the server closes connects again at
once, as an attacker would. Printed per round: the GETs' p50 / p99 / max, how many timed
out, what the slow clients and holders saw (answers, closes), the server's memory (its
process tree's RSS: idle before the round, the most during it) and the disk its temporary
folder gained (deleted-but-open files included). Goals: p99 < 500 ms, RSS within 100 MB of
idle, no disk growth. Loopback only; every loop is bounded by a deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_harness import (  # noqa: E402
    Gunicorn,
    fresh_database,
    load_documents,
    percentile,
    prepare_study,
    start_postgres,
)

HOST = "127.0.0.1"
BODY_LENGTH = 60_000
GET_TIMEOUT = 10.0


async def slow_client(port: int, stop: float, seen: dict[str, int]) -> None:
    """Hold a POST open, one body byte a second; connect again whenever the server closes."""
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            seen["connect failed"] += 1
            await asyncio.sleep(0.5)
            continue
        writer.write(
            (
                f"POST /api/assignments HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {BODY_LENGTH}\r\n\r\n"
            ).encode()
        )
        answer = asyncio.ensure_future(reader.read(1))
        try:
            while time.monotonic() < stop:
                writer.write(b" ")
                await writer.drain()
                done, _ = await asyncio.wait({answer}, timeout=1.0)
                if done:
                    seen["answered" if answer.result() else "closed"] += 1
                    break
        except (ConnectionError, OSError):
            seen["reset"] += 1
        finally:
            answer.cancel()
            writer.close()


async def held_body(port: int, size: int, stop: float, seen: dict[str, int]) -> None:
    """Declare ``size`` bytes, send all but the last as fast as the server reads them, hold
    the connection; connect again whenever the server answers or closes."""
    chunk = b" " * 65536
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            seen["connect failed"] += 1
            await asyncio.sleep(0.5)
            continue
        writer.write(
            (
                f"POST /api/assignments HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
            ).encode()
        )
        answer = asyncio.ensure_future(reader.read(1))
        sent = 0
        try:
            while time.monotonic() < stop:
                if sent < size - 1:
                    part = chunk[: size - 1 - sent]
                    writer.write(part)
                    sent += len(part)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(writer.drain(), 1.0)
                done, _ = await asyncio.wait({answer}, timeout=0 if sent < size - 1 else 1.0)
                if done:
                    seen["answered" if answer.result() else "closed"] += 1
                    break
        except (ConnectionError, OSError):
            seen["reset"] += 1
        finally:
            answer.cancel()
            writer.close()


def server_rss(pid: int) -> int:
    """RSS of the server's process tree, bytes."""
    root = psutil.Process(pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total


def disk_used(pid: int, folder: Path) -> int:
    """Bytes of the files under ``folder``, and of the server's open files there (a spooled
    temporary file is deleted at once: only its descriptor shows it)."""
    total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        fds = Path(f"/proc/{process.pid}/fd")
        for fd in fds.iterdir() if fds.exists() else []:
            with contextlib.suppress(OSError):
                if os.readlink(fd).startswith(str(folder)) and "(deleted)" in os.readlink(fd):
                    total += fd.stat().st_size
    return total


async def probe(port: int, paths: list[str], stop: float) -> tuple[list[float], int, dict]:
    """Ordinary GETs one after another until ``stop``: latencies, timeouts, statuses."""
    latencies: list[float] = []
    timeouts = 0
    statuses: dict[int, int] = {}
    turn = 0
    while time.monotonic() < stop:
        path = paths[turn % len(paths)]
        turn += 1
        started = time.perf_counter()
        try:
            status = await asyncio.wait_for(get(port, path), GET_TIMEOUT)
        except (TimeoutError, OSError):
            timeouts += 1
            latencies.append(GET_TIMEOUT)
            continue
        latencies.append(time.perf_counter() - started)
        statuses[status] = statuses.get(status, 0) + 1
        await asyncio.sleep(0.05)
    return latencies, timeouts, statuses


async def get(port: int, path: str) -> int:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.read()
        return int(head.split(b" ", 2)[1])
    finally:
        writer.close()


async def one_round(
    server, clients: int, held: int, size: int, seconds: float, paths: list[str], tmp: Path
) -> dict:
    port, pid = server.port, server.process.pid
    rss_idle, disk_before = server_rss(pid), disk_used(pid, tmp)
    stop = time.monotonic() + seconds
    seen: dict[str, int] = {"answered": 0, "closed": 0, "reset": 0, "connect failed": 0}
    holding: dict[str, int] = {"answered": 0, "closed": 0, "reset": 0, "connect failed": 0}
    attackers = [asyncio.ensure_future(slow_client(port, stop, seen)) for _ in range(clients)]
    attackers += [asyncio.ensure_future(held_body(port, size, stop, holding)) for _ in range(held)]
    await asyncio.sleep(1.0 if clients or held else 0)  # every attacker has sent its headers
    rss_max, disk_max = server_rss(pid), disk_used(pid, tmp)

    async def watch() -> None:
        nonlocal rss_max, disk_max
        while time.monotonic() < stop:
            rss_max = max(rss_max, server_rss(pid))
            disk_max = max(disk_max, disk_used(pid, tmp))
            await asyncio.sleep(0.5)

    watcher = asyncio.ensure_future(watch())
    latencies, timeouts, statuses = await probe(port, paths, stop)
    await asyncio.gather(*attackers, watcher, return_exceptions=True)
    return {
        "slow_clients": clients,
        "held_bodies": held,
        "rss_idle_mb": round(rss_idle / 2**20, 1),
        "rss_max_mb": round(rss_max / 2**20, 1),
        "disk_growth_bytes": disk_max - disk_before,
        "held_outcomes": holding,
        "gets": len(latencies),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1) if latencies else None,
        "timeouts": timeouts,
        "statuses": statuses,
        "slow_client_outcomes": seen,
    }


def create_token(port: int) -> str:
    import urllib.request

    request = urllib.request.Request(
        f"http://{HOST}:{port}/api/assignments",
        data=json.dumps({"study": "slow", "worker_id": "prober"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())["token"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[0, 24, 200])
    parser.add_argument("--held", type=int, default=100, help="bodies held one byte short")
    parser.add_argument("--held-size", type=int, default=32 * 2**20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args(argv)
    if max(args.clients) > 1000 or args.held > 1000 or args.seconds > 120:
        parser.error("bounded: at most 1000 clients, 1000 held bodies and 120 seconds a round")
    cluster = None
    folder = tempfile.TemporaryDirectory()
    if args.postgres:
        cluster = start_postgres()
        url = fresh_database(cluster, "slow_clients")
    else:
        url = f"sqlite:///{folder.name}/slow.db"
    prepare_study(url, "slow", load_documents(20, 6))
    tmp = Path(folder.name) / "tmp"
    tmp.mkdir()
    server = Gunicorn("app:create_app()", url, extra_env={"TMPDIR": str(tmp)}).start()
    try:
        token = create_token(server.port)
        paths = ["/healthz", f"/api/assignments/{token}", "/admin/login"]
        for clients in args.clients:
            for held in sorted({0, args.held}):
                result = asyncio.run(
                    one_round(server, clients, held, args.held_size, args.seconds, paths, tmp)
                )
                print(
                    json.dumps({"server": server.kind, "load": os.getloadavg()[0], **result}),
                    flush=True,
                )
    finally:
        server.stop()
        if cluster is not None:
            cluster.stop()
        folder.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
