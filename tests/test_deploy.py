"""Deployment files: the Procfile's processes start for real (web, release, worker) against a
``postgres://`` DATABASE_URL, the web server's settings (app/cli/webserver.py, gunicorn.conf.py)
follow the environment, and the Docker
files agree with each other and validate."""

from __future__ import annotations

import os
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from app.cli.webserver import settings as web_settings
from app.config import Settings, normalise_database_url
from tests import pg_cluster

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def procfile() -> dict[str, str]:
    processes = {}
    for line in (REPO / "Procfile").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            processes[name.strip()] = command.strip()
    return processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_env(**extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "SECRET_KEY": "deploy-test",
        **extra,
    }
    env.pop("FLASK_APP", None)
    return env


def test_procfile_has_web_release_and_worker():
    processes = procfile()
    assert set(processes) == {"web", "release", "worker"}
    assert processes["web"] == "marginalia web"
    assert processes["release"] == "marginalia db upgrade"
    assert processes["worker"] == "marginalia worker"


def test_web_server_settings_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PORT", "4321")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    monkeypatch.setenv("GUNICORN_THREADS", "6")
    monkeypatch.delenv("WEB_THREADS", raising=False)
    monkeypatch.delenv("WEB_ACCESS_LOG", raising=False)
    settings = web_settings()
    assert (settings["address"], settings["port"]) == ("0.0.0.0", 4321)
    assert settings["workers"] == 3
    # the front (app/web/front.py, RSGI) reads bodies bounded, then the app runs in a thread
    assert settings["interface"].value == "rsgi" and settings["factory"] is True
    assert settings["task_impl"].value == "asyncio"  # the body deadlines cancel its tasks
    assert settings["target"] == "app.web.front:create"
    assert settings["respawn_failed_workers"] is True  # a killed worker comes back
    assert settings["workers_kill_timeout"] < 30  # graceful stop, under Heroku's 30 s
    assert settings["http1_settings"].header_read_timeout == 60_000  # keep-alive
    assert settings["log_access"] is False
    log = tmp_path / "access.log"
    monkeypatch.setenv("WEB_ACCESS_LOG", str(log))
    monkeypatch.setenv("WEB_THREADS", "2")
    monkeypatch.setenv("WEB_FRONT", "0")  # granian's WSGI interface, behind a buffering proxy
    settings = web_settings()
    assert settings["interface"].value == "wsgi" and settings["blocking_threads"] == 2
    monkeypatch.setenv("GUNICORN_THREADS", "6")
    monkeypatch.delenv("WEB_THREADS")
    assert web_settings()["blocking_threads"] == 6  # gunicorn's variable still works
    assert settings["log_access"] is True
    handler = settings["log_dictconfig"]["handlers"]["access"]
    assert handler["filename"] == str(log)


def test_the_front_takes_its_threads_and_limits_from_the_environment(monkeypatch):
    from app.web import front

    monkeypatch.setenv("WEB_APP", "app:create_app")
    monkeypatch.setenv("WEB_THREADS", "3")
    monkeypatch.setenv("WEB_BODY_TIMEOUT", "4")
    monkeypatch.setenv("WEB_BODY_MIN_RATE", "1000")
    monkeypatch.setenv("WEB_BODY_MAX_SECONDS", "30")
    monkeypatch.setenv("WEB_BODY_BUFFER_MB", "8")
    monkeypatch.setenv("MAX_UPLOAD_LENGTH", str(2**20))
    built = front.create()
    rules = built.rules
    assert built.thread_count == 3 and built.budget.limit == 8 * 2**20
    assert (rules.timeout, rules.min_rate, rules.max_seconds) == (4, 1000, 30)
    assert rules.max_upload == 2**20 and rules.max_content == 64 * 1024
    # a small body: the timeout; an upload: a second more per 1000 bytes, at most 30 s
    assert rules.deadline(100.0, 0) == 104.0 and rules.deadline(100.0, 10_000) == 114.0
    assert rules.deadline(100.0, 10**9) == 130.0
    # the route decides: a worker's route never takes more than 64 KB
    assert rules.check("POST", "/api/assignments", 2**20, {}).status == 413
    assert rules.check("POST", "/api/assignments", 64 * 1024, {}) is None
    assert rules.check("POST", "/admin/studies/new", 2**20, {}).status == 403  # no session
    assert rules.check("POST", "/admin/studies/new", 2**20 + 1, {}).status == 413


def test_a_bad_body_setting_is_refused(monkeypatch):
    from app.web.body_rules import BodyRules

    monkeypatch.setenv("WEB_BODY_MAX_SECONDS", "0")
    with pytest.raises(ValueError, match="WEB_BODY_MAX_SECONDS must be a number above 0"):
        BodyRules.of(object())


def test_a_bad_web_server_setting_is_one_clear_line(monkeypatch):
    import click

    monkeypatch.setenv("WEB_CONCURRENCY", "two")
    with pytest.raises(click.UsageError, match="WEB_CONCURRENCY must be a whole number, not 'two'"):
        web_settings()


def test_gunicorn_settings_follow_the_environment(monkeypatch):
    monkeypatch.setenv("PORT", "4321")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    settings = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert settings["bind"] == "0.0.0.0:4321"
    assert settings["workers"] == 3
    assert settings["worker_class"] == "gthread"
    assert settings["threads"] >= 2
    assert 0 < settings["timeout"] < 30  # Heroku's router gives up at 30 s
    assert settings["graceful_timeout"] < 30


def test_postgres_scheme_is_accepted(monkeypatch):
    assert normalise_database_url("postgres://u:p@h:5432/d") == "postgresql+psycopg2://u:p@h:5432/d"
    assert normalise_database_url("postgresql://h/d") == "postgresql+psycopg2://h/d"
    assert normalise_database_url("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.setenv("DATABASE_URL", "postgres://u@db.example:5432/prod")
    assert Settings().database_url == "postgresql+psycopg2://u@db.example:5432/prod"


@pytest.fixture
def heroku_url(postgres_cluster) -> str:
    """A fresh, empty database named the way Heroku names it: postgres://..."""
    url = pg_cluster.create_database(postgres_cluster, f"deploy_{os.getpid()}")
    return url.replace("postgresql+psycopg2://", "postgres://", 1)


@pytest.mark.postgres
@pytest.mark.slow
def test_procfile_processes_start_on_a_postgres_url(heroku_url, tmp_path):
    processes = procfile()
    env = process_env(DATABASE_URL=heroku_url)
    # release: migrates, and is safe to run again on every deploy
    for expected in ("database created", "database is up to date"):
        done = subprocess.run(
            processes["release"],
            shell=True,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert expected in done.stdout

    # web: the web server on $PORT answers /healthz from the database
    port = free_port()
    with (tmp_path / "web.log").open("w") as log:
        web = subprocess.Popen(
            "exec " + processes["web"],
            shell=True,
            cwd=REPO,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**env, "PORT": str(port), "WEB_CONCURRENCY": "1"},
        )
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    assert r.status == 200
                    assert b'"ok"' in r.read()
                    break
            except OSError:
                assert web.poll() is None, (tmp_path / "web.log").read_text()
                assert time.time() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.3)
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)

    # worker: starts, waits on the queue, stops cleanly on SIGTERM (what a dyno restart sends)
    worker = subprocess.Popen(
        "exec " + processes["worker"],
        shell=True,
        cwd=REPO,
        start_new_session=True,
        env={**env, "DETECTOR_MODEL": "rules"},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        started = worker.stderr.readline()
        assert "worker started" in started, started
        time.sleep(1)
        assert worker.poll() is None
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
    _, stderr = worker.communicate(timeout=30)
    assert worker.returncode == 0, stderr
    assert "worker stopped" in stderr


def test_python_version_matches_the_image():
    version = (REPO / ".python-version").read_text().strip()
    assert version == "3.11"
    dockerfile = (REPO / "Dockerfile").read_text()
    assert f"FROM python:{version}-slim" in dockerfile


def test_dockerfile_pins_cpu_torch_from_a_build_argument():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "ARG TORCH_VERSION=2.13.0" in dockerfile
    assert "ARG TORCH_INDEX_URL=" in dockerfile
    assert '--index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"' in dockerfile
    assert 'CMD ["marginalia", "web"]' in dockerfile
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored and "instance" in ignored


def check_compose(config: dict) -> None:
    services = config["services"]
    assert set(services) >= {"web", "worker", "postgres", "release"}
    volume = services["postgres"]["volumes"][0]
    volume = volume if isinstance(volume, str) else f"{volume['source']}:{volume['target']}"
    assert volume.removesuffix(":rw") == "pgdata:/var/lib/postgresql/data"
    assert "pgdata" in config["volumes"]
    for name in ("web", "worker", "release"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://"), name
        assert "@postgres:5432/" in env["DATABASE_URL"]
    commands = {name: services[name]["command"] for name in ("web", "worker", "release")}
    assert commands["release"] == ["marginalia", "db", "upgrade"]
    assert commands["worker"] == ["marginalia", "worker"]
    assert commands["web"] == ["marginalia", "web"]
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["release"]["condition"] == (
            "service_completed_successfully"
        )
    assert services["release"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    check_scale_profile(services)


def check_scale_profile(services: dict) -> None:
    """Profile ``scale``: web nodes behind a round-robin router, through a
    transaction-pooling PgBouncer, counting rate limits in Redis; the rig of
    tests/multinode/ has the same shape."""
    scale = {"nodes", "router", "pgbouncer", "redis"}
    for name in scale:
        assert services[name]["profiles"] == ["scale"], name
    for name in set(services) - scale:
        assert "profiles" not in services[name], name  # `docker compose up` is unchanged
    nodes = services["nodes"]
    env = nodes["environment"]
    assert nodes["command"] == ["marginalia", "web"]
    assert "@pgbouncer:5432/" in env["DATABASE_URL"]
    assert env["PREPARED_STATEMENTS"] == "0"
    assert env["RATELIMIT_STORAGE_URI"].startswith("redis://redis:6379")
    assert env["BEHIND_PROXY"] == "1"
    replicas = str(nodes["deploy"]["replicas"])  # the file's ${WEB_NODES:-2}, or its value
    assert int(replicas.removeprefix("${WEB_NODES:-").removesuffix("}")) >= 2
    assert "ports" not in nodes  # reached through the router only
    assert nodes["depends_on"]["release"]["condition"] == "service_completed_successfully"
    assert services["pgbouncer"]["environment"]["POOL_MODE"] == "transaction"
    assert "@postgres:5432/" in services["pgbouncer"]["environment"]["DATABASE_URL"]
    router = "\n".join(services["router"]["command"])
    for line in (
        "balance roundrobin",
        "option httpchk GET /healthz",
        "nodes:8000 check",
        "option http-buffer-request",  # a node sees a request once its body has come
        "timeout http-request 10s",  # ... or the router answers 408 itself
    ):
        assert line in router
    assert services["redis"]["image"].startswith("redis:")


def test_compose_file_structure():
    check_compose(yaml.safe_load((REPO / "docker-compose.yml").read_text()))


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_config_validates():
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor docker-compose is installed")
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL")}
    done = subprocess.run(
        [*command, "-f", str(REPO / "docker-compose.yml"), "--profile", "scale", "config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    check_compose(yaml.safe_load(done.stdout))


def test_the_rate_limits_store_follows_the_environment(monkeypatch):
    """RATELIMIT_STORAGE_URI reaches flask-limiter (it was documented, but the
    limiter's own ``memory://`` overrode it, so several nodes each counted alone)."""
    from app import create_app
    from app.web.limits import limiter

    monkeypatch.setenv("RATELIMIT_STORAGE_URI", "redis://127.0.0.1:1/0")
    assert Settings().as_flask_config()["RATELIMIT_STORAGE_URI"] == "redis://127.0.0.1:1/0"
    monkeypatch.delenv("RATELIMIT_STORAGE_URI")
    assert Settings().as_flask_config()["RATELIMIT_STORAGE_URI"] == "memory://"
    app = create_app(
        {"DATABASE_URL": "sqlite://", "RATELIMIT_STORAGE_URI": "redis://127.0.0.1:1/0"}
    )
    with app.app_context():
        assert type(limiter.storage).__name__ == "RedisStorage"
    create_app({"DATABASE_URL": "sqlite://"})  # the suite's other apps count in memory
    assert type(limiter.storage).__name__ == "MemoryStorage"
