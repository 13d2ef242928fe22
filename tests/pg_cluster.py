"""A throw-away PostgreSQL cluster for the test suite (real server, loopback only).

Postgres refuses to run as root, so as root the cluster runs as the ``postgres`` user.
``MARGINALIA_TEST_POSTGRES_URL`` points the suite at an existing server instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bin_dir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


@dataclass
class Cluster:
    url: str  # postgresql://... of the maintenance database
    data_dir: str | None
    bin_dir: str | None
    as_user: list[str]

    def stop(self) -> None:
        if self.data_dir and self.bin_dir:
            subprocess.run(
                [
                    *self.as_user,
                    f"{self.bin_dir}/pg_ctl",
                    "-D",
                    self.data_dir,
                    "-m",
                    "immediate",
                    "stop",
                ],
                capture_output=True,
                check=False,
            )
            shutil.rmtree(os.path.dirname(self.data_dir), ignore_errors=True)

    def restart(self) -> None:
        """Stop and start the server (fault tests); every connection is dropped."""
        if self.data_dir is None or self.bin_dir is None:
            raise RuntimeError(
                "an external Postgres (MARGINALIA_TEST_POSTGRES_URL) cannot be restarted"
            )
        # The restarted server inherits no pipe of ours (it would hold them open forever).
        subprocess.run(
            [
                *self.as_user,
                f"{self.bin_dir}/pg_ctl",
                "-D",
                self.data_dir,
                "-m",
                "fast",
                "-w",
                "-t",
                "60",
                "-l",
                os.path.join(os.path.dirname(self.data_dir), "log"),
                "restart",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            timeout=90,
        )


def start_cluster(*, durable: bool = False) -> Cluster | None:
    """Start a cluster, or return None if no Postgres binaries are installed. The suite's
    runs with ``fsync``, ``synchronous_commit`` and ``full_page_writes`` off; ``durable``
    (the benches) turns them on as a deployed server has them. They are set on the server's
    command line, which no ``ALTER SYSTEM`` overrides."""
    existing = os.environ.get("MARGINALIA_TEST_POSTGRES_URL")
    if existing:
        return Cluster(existing, None, None, [])
    bin_dir = _bin_dir()
    if bin_dir is None:
        return None
    as_user: list[str] = []
    root = tempfile.mkdtemp(prefix="marginalia-pg-")
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres", "postgres")
        os.chmod(root, 0o700)
    data_dir = os.path.join(root, "data")
    port = _free_port()
    subprocess.run(
        [
            *as_user,
            f"{bin_dir}/initdb",
            "-D",
            data_dir,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        capture_output=True,
        check=True,
    )
    switch = "on" if durable else "off"
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync={switch} "
        f"-c synchronous_commit={switch} -c full_page_writes={switch} -c max_connections=300"
    )
    subprocess.run(
        [
            *as_user,
            f"{bin_dir}/pg_ctl",
            "-D",
            data_dir,
            "-o",
            options,
            "-l",
            os.path.join(root, "log"),
            "-w",
            "start",
        ],
        capture_output=True,
        check=True,
    )
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    deadline = time.time() + 20
    import psycopg2

    while True:
        try:
            psycopg2.connect(url).close()
            break
        except psycopg2.OperationalError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    return Cluster(url, data_dir, bin_dir, as_user)


def create_database(cluster: Cluster, name: str, template: str | None = None) -> str:
    """Create an empty (or templated) database and return its SQLAlchemy URL."""
    import psycopg2

    connection = psycopg2.connect(cluster.url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        suffix = f' TEMPLATE "{template}"' if template else ""
        cursor.execute(f'CREATE DATABASE "{name}"{suffix}')
    connection.close()
    base = cluster.url.rsplit("/", 1)[0]
    return f"{base}/{name}".replace("postgresql://", "postgresql+psycopg2://", 1)


def drop_database(cluster: Cluster, name: str) -> None:
    """Drop a test's database, closing its connections (keeps the cluster small and its
    shutdown quick)."""
    import psycopg2

    connection = psycopg2.connect(cluster.url)
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        connection.close()
