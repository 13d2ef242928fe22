"""Several web nodes on one Postgres, with real parts (issue 31): PgBouncer in transaction
mode in front of the suite's Postgres cluster, Redis for the rate limits, two ``marginalia
web`` processes (one granian worker each: separate caches, as separate machines would have)
and HAProxy round-robin in front of them, all on loopback ports chosen free.

Every process runs in its own process group and :meth:`Rig.stop` kills the groups, also when
a test failed; a node can be killed (SIGKILL, a machine lost) and started again on its port.
The router names the node that answered in ``X-Node`` (``a`` or ``b``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests import pg_cluster

REPO = Path(__file__).resolve().parents[2]
BINARIES = ("haproxy", "pgbouncer", "redis-server")
SECRET_KEY = "multinode"
START_TIMEOUT_S = 60.0


def binary(name: str) -> str | None:
    """The path of a Debian package's program (``/usr/sbin`` is not on every user's PATH)."""
    return shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/bin:/sbin")


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if binary(name) is None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(ready, what: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}): {_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start in {START_TIMEOUT_S:.0f} s: {_tail(log)}")
        time.sleep(0.1)


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no log)"


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as answer:
        return answer.status == 200


def _spawn(command: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with log.open("a") as handle:
        return subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: killed whole, children included
        )


def _kill(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@dataclass
class Node:
    """One ``marginalia web`` process (a machine of its own)."""

    name: str
    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self) -> None:
        command = [sys.executable, "-m", "app.cli", "web"]
        self.process = _spawn(command, self.log, {**self.env, "PORT": str(self.port)})

    def wait(self) -> None:
        assert self.process is not None
        _wait(lambda: _http_ok(self.url + "/healthz"), f"node {self.name}", self.process, self.log)

    def start(self) -> None:
        self.spawn()
        self.wait()

    def kill(self) -> None:
        """SIGKILL the node's whole process group: requests in flight are cut off."""
        _kill(self.process)


@dataclass
class Rig:
    root: Path
    database_url: str  # direct to Postgres, for the tests' own reads and set-up
    bouncer_port: int = 0
    redis_port: int = 0
    router_port: int = 0
    nodes: list[Node] = field(default_factory=list)
    processes: list[subprocess.Popen] = field(default_factory=list)
    redis: subprocess.Popen | None = None

    @property
    def router(self) -> str:
        return f"http://127.0.0.1:{self.router_port}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()
        for process in reversed(self.processes):
            _kill(process)
        shutil.rmtree(self.root, ignore_errors=True)

    def stop_redis(self) -> None:
        _kill(self.redis)

    def bouncer_transactions(self) -> int:
        """How many transactions PgBouncer has passed on to Postgres (its admin console)."""
        import psycopg2

        console = psycopg2.connect(
            host="127.0.0.1", port=self.bouncer_port, user="postgres", dbname="pgbouncer"
        )
        console.autocommit = True
        try:
            with console.cursor() as cursor:
                cursor.execute("SHOW STATS")
                names = [column.name for column in cursor.description]
                rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            console.close()
        return sum(row["total_xact_count"] for row in rows if row["database"] != "pgbouncer")

    def flush_limits(self) -> None:
        """Forget every rate-limit count in Redis (each test starts with none)."""
        with socket.create_connection(("127.0.0.1", self.redis_port), timeout=5) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            assert sock.recv(64).startswith(b"+OK")


def _start_bouncer(rig: Rig, cluster: pg_cluster.Cluster, database: str) -> None:
    """PgBouncer, transaction pooling, in front of the cluster (as ``postgres`` when root:
    PgBouncer refuses to run as root)."""
    host, port = cluster.url.rsplit("@", 1)[1].split("/", 1)[0].split(":")
    folder = rig.root / "pgbouncer"
    folder.mkdir()
    rig.bouncer_port = free_port()
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"{database} = host={host} port={port} user=postgres dbname={database}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {rig.bouncer_port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {folder}/users.txt\n"
        "pool_mode = transaction\nadmin_users = postgres\nmax_client_conn = 400\ndefault_pool_size = 20\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"pidfile = {folder}/pgbouncer.pid\n"
    )
    as_user = cluster.as_user
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(rig.root, 0o711)  # mkdtemp's 0700 would keep the postgres user out
        shutil.chown(folder, "postgres", "postgres")
        for item in folder.iterdir():
            shutil.chown(item, "postgres", "postgres")
    log = rig.root / "pgbouncer.out"
    process = _spawn([*as_user, binary("pgbouncer"), str(folder / "pgbouncer.ini")], log)
    rig.processes.append(process)

    def ready() -> bool:
        import psycopg2

        try:
            psycopg2.connect(
                host="127.0.0.1", port=rig.bouncer_port, user="postgres", dbname=database
            ).close()
        except psycopg2.OperationalError:
            return False
        return True

    _wait(ready, "pgbouncer", process, log)


def start_redis(rig: Rig) -> None:
    """Redis on ``rig.redis_port`` (chosen on the first start; a restart keeps it)."""
    rig.redis_port = rig.redis_port or free_port()
    log = rig.root / "redis.out"
    command = [
        binary("redis-server"),
        "--port",
        str(rig.redis_port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(rig.root),
    ]
    process = _spawn(command, log)
    rig.processes.append(process)
    rig.redis = process

    def ready() -> bool:
        with socket.create_connection(("127.0.0.1", rig.redis_port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    _wait(ready, "redis", process, log)


def _start_router(rig: Rig, check_ms: int) -> None:
    """HAProxy, round-robin over the nodes; a node that stops answering its health check
    (every ``check_ms``) is out until it answers again; a request whose connection failed is
    sent to the other node (never one a node may have received: only the client may retry
    that)."""
    rig.router_port = free_port()
    servers = "".join(f"  server {node.name} 127.0.0.1:{node.port} check\n" for node in rig.nodes)
    config = rig.root / "haproxy.cfg"
    config.write_text(
        "global\n  maxconn 1000\n"
        "defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n"
        "  timeout server 30s\n  retries 3\n  option redispatch 1\n"
        "  option http-buffer-request\n  timeout http-request 10s\n"
        "  retry-on conn-failure\n  option forwardfor\n"
        f"frontend web\n  bind 127.0.0.1:{rig.router_port}\n  default_backend nodes\n"
        "backend nodes\n  balance roundrobin\n  option httpchk GET /healthz\n"
        f"  default-server inter {check_ms}ms fall 1 rise 1\n"
        "  http-response set-header X-Node %s\n" + servers
    )
    log = rig.root / "haproxy.out"
    process = _spawn([binary("haproxy"), "-f", str(config), "-db"], log)
    rig.processes.append(process)
    _wait(lambda: _http_ok(rig.router + "/healthz"), "haproxy", process, log)


def start(
    cluster: pg_cluster.Cluster,
    template: str,
    names: tuple[str, ...] = ("a", "b"),
    env: dict[str, str] | None = None,
    check_ms: int = 250,
) -> Rig:
    """The whole rig on a fresh copy of the migrated template database; stopped again (every
    process killed) if any part fails to start. ``env``: more settings for the nodes (the
    benches' processes, threads and arrival limit); ``check_ms``: the router's health checks'
    interval (short for the tests, which kill nodes)."""
    database = f"multinode_{os.getpid()}"
    url = pg_cluster.create_database(cluster, database, template)
    rig = Rig(Path(tempfile.mkdtemp(prefix="marginalia-nodes-")), url)
    try:
        _start_bouncer(rig, cluster, database)
        start_redis(rig)
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{rig.bouncer_port}/{database}",
            # PgBouncer 1.18 in transaction mode cannot keep SQL-level prepared statements.
            "PREPARED_STATEMENTS": "0",
            "RATELIMIT_STORAGE_URI": rig.redis_url,
            "BEHIND_PROXY": "1",  # the client's address from HAProxy's X-Forwarded-For
            "SECRET_KEY": SECRET_KEY,
            "WEB_CONCURRENCY": "1",
            "WEB_THREADS": "4",
            "WEB_HOST": "127.0.0.1",
            "WEB_LOG_LEVEL": "warning",
            **(env or {}),
        }
        for name in names:
            rig.nodes.append(Node(name, free_port(), env, rig.root / f"node-{name}.log"))
        for node in rig.nodes:
            node.spawn()  # the nodes start side by side
        for node in rig.nodes:
            node.wait()
        _start_router(rig, check_ms)
    except BaseException:
        rig.stop()
        pg_cluster.drop_database(cluster, database)
        raise
    return rig
