"""A local stand-in for Prolific's API (the four requests Marginalia sends), speaking the
documented protocol and checking each request: method, path, ``Authorization: Token``,
JSON content type and the exact body fields. It records what it got; a test may queue an
error answer (status, body, headers) for the next request."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TRANSITION = re.compile(r"^/api/v1/submissions/([A-Za-z0-9]+)/transition/$")
PAY = re.compile(r"^/api/v1/bulk-bonus-payments/([A-Za-z0-9]+)/pay/$")
SET_UP = "/api/v1/submissions/bonus-payments/"
SCREEN_OUT = re.compile(r"^/api/v1/studies/([A-Za-z0-9]+)/screen-out-submissions/$")
CATEGORIES = {
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
}
BONUS_LINE = re.compile(r"^[A-Za-z0-9]+,\d+\.\d{2}$")


class ProlificStandIn:
    def __init__(self, token: str = "test-token") -> None:
        self.token = token
        self.requests: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.queued: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ProlificStandIn:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail_next(self, status: int, body: dict[str, Any] | None = None, **headers: str) -> None:
        self.queued.append((status, body or {"error": {"detail": "stand-in error"}}, headers))

    def check(self, method: str, path: str, headers, raw: bytes) -> tuple[int, dict[str, Any]]:
        """The documented rules; (status, answer)."""
        if headers.get("Authorization") != f"Token {self.token}":
            return 401, {"error": {"detail": "Invalid token."}}
        if method != "POST":
            return 405, {"error": {"detail": "method not allowed"}}
        if headers.get("Content-Type") != "application/json":
            self.problems.append(f"{path}: content type {headers.get('Content-Type')!r}")
            return 400, {"error": {"detail": "JSON expected"}}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self.problems.append(f"{path}: body is not JSON")
            return 400, {"error": {"detail": "bad JSON"}}
        self.requests.append({"path": path, "body": body})
        if match := TRANSITION.match(path):
            if body == {"action": "APPROVE"}:
                return 200, {"id": match.group(1), "status": "APPROVED"}
            if set(body) == {"action", "message", "rejection_category"} and (
                body["action"] == "REJECT"
                and len(body["message"]) >= 100
                and body["rejection_category"] in CATEGORIES
            ):
                return 200, {"id": match.group(1), "status": "REJECTED"}
            self.problems.append(f"{path}: bad transition {body!r}")
            return 400, {"error": {"detail": "bad transition"}}
        if path == SET_UP:
            lines = str(body.get("csv_bonuses", "")).splitlines()
            if (
                set(body) != {"study_id", "csv_bonuses"}
                or not lines
                or not all(BONUS_LINE.match(line) for line in lines)
                or not str(body["csv_bonuses"]).endswith("\n")
            ):
                self.problems.append(f"{path}: bad bonus set-up {body!r}")
                return 400, {"error": {"detail": "bad bonuses"}}
            return 201, {"id": f"bulk{len(self.requests)}", "study": body["study_id"]}
        if PAY.match(path):
            return 202, {}
        if SCREEN_OUT.match(path):
            ids = body.get("submission_ids")
            if (
                not set(body) <= {"submission_ids", "increase_places", "bonus_per_submission"}
                or not isinstance(ids, list)
                or not ids
                or not all(isinstance(i, str) and i.isalnum() for i in ids)
                or not isinstance(body.get("increase_places", False), bool)
            ):
                self.problems.append(f"{path}: bad screen-out {body!r}")
                return 400, {"error": {"detail": "bad screen-out"}}
            return 200, {}
        self.problems.append(f"unknown path {path}")
        return 404, {"error": {"detail": "Not found."}}

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self._answer("POST")

            def do_GET(self) -> None:  # noqa: N802
                self._answer("GET")

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if standin.queued:
                    status, answer, headers = standin.queued.pop(0)
                    standin.requests.append({"path": self.path, "failed": status})
                else:
                    status, answer = standin.check(method, self.path, self.headers, raw)
                    headers = {}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: object) -> None:
                pass

        return Handler
