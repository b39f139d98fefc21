"""Cross-site rules over raw HTTP: foreign Host names, foreign origins, non-JSON writes.

Each refusal is checked against a real `wop serve`, with and without tokens, and nothing a
refused request asked for happens (no run, no appended event).
"""

from __future__ import annotations

import http.client
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.server.conftest import ALICE, Served

SEC = Path(__file__).resolve().parent / "sec_councils"


def raw(served: Served, method: str, path: str, body: bytes | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """Send exactly these headers (a ``Host`` given here replaces the real one)."""
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=20)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        text = resp.read().decode()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(text)
    except json.JSONDecodeError:
        return resp.status, text


def runs(served: Served) -> int:
    with sqlite3.connect(served.store) as db:
        return int(db.execute("SELECT count(DISTINCT run_id) FROM events").fetchone()[0])


def port_of(served: Served) -> str:
    return served.url.rsplit(":", 1)[1]


def test_a_foreign_host_name_reads_and_writes_nothing(serve: Any) -> None:
    served = serve(SEC)
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    last = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    evil = {"Host": f"rebind.attacker.test:{port_of(served)}"}
    turn = json.dumps({"resumeValue": {"content": {"text": "pwned", "mentions": []}}}).encode()
    for method, path, body in [("GET", "/", None), ("GET", "/v1/workflows", None),
                               ("GET", "/v1/whoami", None),
                               ("GET", f"/v1/runs/{run_id}", None),
                               ("GET", f"/v1/runs/{run_id}/events", None),
                               ("GET", "/.well-known/openwop", None),
                               ("POST", f"/v1/runs/{run_id}/interrupts/room:hall", turn),
                               ("POST", "/v1/runs", b'{"workflowId": "guestbook"}')]:
        headers = {**evil, "Content-Type": "application/json"} if body else evil
        status, answer = raw(served, method, path, body, headers)
        assert (status, answer["error"]) == (400, "host_not_allowed"), (method, path, answer)
        assert answer["details"]["host"] == evil["Host"] and "--allowed-hosts" in \
            answer["details"]["hint"]
    # An empty or malformed Host: refused too.
    for bad in ({"Host": ""}, {"Host": "127.0.0.1:1:2"}, {"Host": "[::1"}):
        assert raw(served, "GET", "/v1/workflows", headers=bad)[0] == 400, bad
    assert served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"] == last
    assert runs(served) == 1
    # Every loopback name is served, on any port the client names.
    for name in ("127.0.0.1", "localhost", "[::1]", "127.0.0.2", "LOCALHOST."):
        status, _ = raw(served, "GET", "/v1/workflows",
                        headers={"Host": f"{name}:{port_of(served)}"})
        assert status == 200, name
    served.stop()
    assert "Traceback" not in served.logs()


def test_allowed_hosts_adds_names(serve: Any) -> None:
    served = serve(SEC, args=("--allowed-hosts", "council.test,*.corp.test",
                              "--allowed-hosts", "other.test"))
    for name, status in [("council.test", 200), ("other.test:9", 200), ("a.corp.test", 200),
                         ("corp.test", 400), ("evil.test", 400), ("127.0.0.1", 200)]:
        assert raw(served, "GET", "/v1/workflows", headers={"Host": name})[0] == status, name


def test_writes_must_be_json(serve: Any) -> None:
    served = serve(SEC)
    body = b'{"workflowId": "guestbook"}'
    for media in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x", "application/jsonp", None):
        headers = {} if media is None else {"Content-Type": media}
        status, answer = raw(served, "POST", "/v1/runs", body, headers)
        assert (status, answer["error"]) == (415, "unsupported_media_type"), (media, answer)
        assert answer["details"]["contentType"] == media
    assert runs(served) == 0
    for media in ("application/json", "application/json; charset=utf-8",
                  "Application/JSON", "application/merge-patch+json"):
        status, answer = raw(served, "POST", "/v1/runs", body, {"Content-Type": media})
        assert status == 201, (media, answer)
    # A body-less POST without a Content-Type (curl -X POST) still cancels; with a form
    # type it does not.
    run_id = answer["runId"]
    status, answer = raw(served, "POST", f"/v1/runs/{run_id}/cancel",
                         headers={"Content-Type": "application/x-www-form-urlencoded",
                                  "Content-Length": "0"})
    assert (status, answer["error"]) == (415, "unsupported_media_type")
    status, answer = raw(served, "POST", f"/v1/runs/{run_id}/cancel")
    assert status == 200 and answer["status"] == "cancelled", answer


def test_writes_from_another_origin_are_refused(serve: Any, tokens_file: Path,
                                                tmp_path: Path) -> None:
    for args, token in [((), None), (("--tokens", str(tokens_file)), ALICE)]:
        served = serve(SEC, args=args, store=tmp_path / f"runs-{bool(token)}.db")
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        body = b'{"workflowId": "guestbook"}'
        json_type = {"Content-Type": "application/json", **auth}
        port = port_of(served)
        for origin in (f"http://127.0.0.1:{int(port) + 1}", f"http://localhost:{port}",
                       "https://attacker.test", "null", f"http://127.0.0.1.attacker.test:{port}",
                       "not a url"):
            status, answer = raw(served, "POST", "/v1/runs", body,
                                 {**json_type, "Origin": origin})
            assert (status, answer["error"]) == (403, "origin_not_allowed"), (origin, answer)
        assert runs(served) == 0
        # The host's own page (same origin) and programs that send no Origin may write.
        status, answer = raw(served, "POST", "/v1/runs", body,
                             {**json_type, "Origin": f"http://127.0.0.1:{port}"})
        assert status == 201, answer
        # Reads from another origin are no write: the browser keeps their answers from a
        # foreign page (no CORS headers are sent).
        status, answer = raw(served, "GET", "/v1/workflows",
                             headers={**auth, "Origin": "https://attacker.test"})
        assert status == 200 and "access-control-allow-origin" not in str(answer)
        # A foreign origin's text/plain write is refused in token mode too.
        status, answer = raw(served, "POST", "/v1/runs", body,
                             {**auth, "Content-Type": "text/plain",
                              "Origin": "https://attacker.test"})
        assert status in (403, 415) and runs(served) == 1
        served.stop()
