"""``marginalia llm`` through the real console script (subprocesses, SQLite): set an
annotator up, price it, queue a run, let ``marginalia worker`` do it against a stand-in,
follow it, read its calibration; the exports and the report leave its marks out unless
asked (``--layer llm:NAME``, ``--include-llm``); bad input is one line."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess

from tests.conftest import make_study
from tests.llm_annotating import answers
from tests.llm_standin import standin
from tests.test_cli import MARGINALIA, REPO, assert_one_line_error, run

DOCS = [("d1", ["Anna met Bob.", "Then Carl left."]), ("d2", ["The cat sat."])]
ITEMS = {"Then Carl left.": [{"category": "CharE", "span": "Carl", "context": "", "reason": "x"}]}


def worker(url: str, key: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url, "MY_KEY": key, "FIGURES_GAMMA_SECONDS": "0"}
    return subprocess.run(
        [MARGINALIA, "worker", "--once", "--queue", "llm"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def rows(result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_the_llm_commands_from_setup_to_calibration(app, client, database_url):
    url = database_url
    make_study(app, documents=DOCS)
    token = client.post(
        "/api/assignments", json={"study": "demo", "document": "d1", "worker_id": "w1"}
    ).get_json()["token"]
    body = {"segment": 0, "start": 0, "end": 4, "text": "Anna", "category": "CharE"}
    assert client.post(f"/api/assignments/{token}/annotations", json=body).status_code == 201
    assert client.post(f"/api/assignments/{token}/submit").status_code == 200
    with standin(answers(ITEMS)) as server:
        added = run(url, "llm", "annotator", "add", "demo", "gpt", "--base-url", server.url + "/",
                    "--model", "stand-in", "--api-key-env", "MY_KEY", "--concurrency", "2")  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert "added annotator llm:gpt: stand-in at " + server.url in added.stdout
        assert_one_line_error(run(url, "llm", "annotator", "add", "demo", "x", "--model", "m"),
                              "needs --base-url and --model")  # fmt: skip
        assert_one_line_error(
            run(
                url, "llm", "annotator", "add", "demo", "x", "--base-url", "ftp://h", "--model", "m"
            ),
            "must be an http(s) URL",
        )
        listed = json.loads(run(url, "llm", "annotator", "list", "demo", "--json").stdout)
        assert listed["gpt"]["api_key_env"] == "MY_KEY" and listed["gpt"]["concurrency"] == 2
        priced = run(url, "llm", "price", "demo", "--model", "stand-in", "--input", "1",
                     "--output", "2", "--human-per-hour", "15")  # fmt: skip
        assert json.loads(priced.stdout)["models"]["stand-in"] == {"input": 1.0, "output": 2.0}
        assert_one_line_error(run(url, "llm", "annotate", "demo", "--annotator", "nobody"),
                              "no LLM annotator 'nobody'")  # fmt: skip
        assert_one_line_error(
            run(url, "llm", "annotate", "demo", "--annotator", "gpt", "--documents", "d9"),
            "no document 'd9'",
        )
        queued = run(url, "llm", "annotate", "demo", "--annotator", "gpt")
        assert queued.stdout.strip() == "run 1 queued: llm:gpt over 2 documents"
        done = worker(url, "sk-from-the-environment")
        assert done.returncode == 0, done.stderr
        assert server.headers[0]["Authorization"] == "Bearer sk-from-the-environment"
        assert "sk-from-the-environment" not in done.stderr
    status = run(url, "llm", "status", "demo")
    assert "run 1 gpt (stand-in): done, 2 of 2 documents (2 annotated, 0 skipped, 0 failed)" in (
        status.stdout
    )
    health = json.loads(run(url, "worker", "--health").stdout)
    assert health["llm"]["done"] == 2 and health["llm"]["queued"] == 0
    text = run(url, "llm", "calibration", "demo", "--annotator", "gpt")
    assert text.returncode == 0, text.stderr
    assert "F1 against gold" in text.stdout and "llm:gpt" in text.stdout and "w1" in text.stdout
    figures = json.loads(
        run(url, "llm", "calibration", "demo", "--annotator", "gpt", "--json").stdout
    )
    assert figures["humans"] == ["w1"] and figures["cost"]["price"] == {"input": 1.0, "output": 2.0}
    # the humans' export, report and comparison leave the model out unless asked
    assert {r["worker_id"] for r in rows(run(url, "export", "demo"))} == {"w1"}
    only = rows(run(url, "export", "demo", "--layer", "llm:gpt"))
    assert {(r["worker_id"], r["span_text"]) for r in only} == {
        ("llm:gpt", "Carl"),
        ("llm:gpt", ""),
    }
    both = rows(run(url, "export", "demo", "--include-llm"))
    assert {r["worker_id"] for r in both} == {"w1", "llm:gpt"}
    assert_one_line_error(run(url, "export", "demo", "--layer", "llm:"), "unknown workers")
    report = json.loads(run(url, "report", "demo", "--json").stdout)
    assert [w["worker_id"] for w in report["workers"]] == ["w1"]
    compared = run(url, "compare", "demo", "--llm", "gpt", "--resamples", "50")
    assert compared.returncode == 0, compared.stderr
    assert "Ranks from llm:gpt's marks: fewer than two systems both cover." in compared.stdout
