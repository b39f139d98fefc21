"""The cross-site attacks, in a real headless Chromium against a real `wop serve` (no tokens).

1. A page on another origin (a second server on loopback, another port) starts a run with a
   ``text/plain`` fetch and with a form post: the host refuses both (the browser did send
   them: the host's access log shows the refusals) and no run exists.
2. A DNS-rebinding page (a foreign name that resolves to the host) reads workflows and
   events and posts as the human: every request is refused, nothing is appended.

The host's own page keeps working in the same browser.
"""

from __future__ import annotations

import http.server
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Served, free_port
from tests.server.web_browser import wait_for

SEC = Path(__file__).resolve().parent / "sec_councils"

ATTACK = """<!doctype html><title>cute cats</title>
<form id="f" method="POST" enctype="text/plain" action="{host}/v1/runs" target="sink">
<input name='{{"workflowId": "guestbook", "metadata": {{"x": "' value='"}}}}'></form>
<iframe name="sink"></iframe>
<script>
fetch("{host}/v1/runs", {{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": "text/plain"}},
  body: JSON.stringify({{workflowId: "guestbook"}})}})
  .finally(() => {{ document.title = "fetched"; document.getElementById("f").submit(); }});
</script>"""

FETCH = """const done = arguments[arguments.length - 1];
const [method, path, body] = arguments;
const init = {method, headers: {"Content-Type": "application/json"}};
if (body !== null) init.body = JSON.stringify(body);
fetch(path, init).then(r => r.text().then(t => done([r.status, t])),
                       e => done([0, String(e)]));"""


def _runs(served: Served) -> list[str]:
    with sqlite3.connect(served.store) as db:
        return [r[0] for r in db.execute("SELECT DISTINCT run_id FROM events")]


@pytest.fixture
def attacker() -> Iterator[Callable[[str], str]]:
    """Serve an attack page from a second loopback server; return its URL."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def go(html: str) -> str:
        body = html.encode()

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield go
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_origin_cannot_start_runs(serve: Any, browser: Any,
                                                    attacker: Any) -> None:
    served = serve(SEC)
    driver = browser()
    driver.get(attacker(ATTACK.format(host=served.url)))
    wait_for("the attack page's fetch", lambda: driver.title == "fetched")
    # Both requests reached the host and were refused there.
    wait_for("two refused posts in the host's log",
             lambda: served.logs().count('"POST /v1/runs HTTP/1.1" 403') >= 2)
    assert _runs(served) == []
    # The host's own page, in the same browser, still starts a run.
    driver.get(served.url + "/")
    status, text = driver.execute_async_script(FETCH, "POST", "/v1/runs",
                                               {"workflowId": "guestbook"})
    assert status == 201, text
    assert len(_runs(served)) == 1


def test_a_rebinding_page_reads_and_posts_nothing(serve: Any, browser: Any) -> None:
    served = serve(SEC)
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    before = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    port = served.url.rsplit(":", 1)[1]
    # The attacker's name now resolves to the host (what a rebinding DNS server does).
    driver = browser("--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1")
    driver.get(f"http://rebind.attacker.test:{port}/")
    assert "host_not_allowed" in driver.page_source  # Not the chat page.
    # The page's script, same-origin with the host as far as the browser knows:
    turn = {"resumeValue": {"content": {"text": "transfer the funds", "mentions": []}}}
    for method, path, body in [("GET", "/v1/workflows", None),
                               ("GET", f"/v1/runs/{run_id}/events", None),
                               ("GET", f"/v1/runs/{run_id}", None),
                               ("POST", f"/v1/runs/{run_id}/interrupts/room:hall", turn),
                               ("POST", "/v1/runs", {"workflowId": "guestbook"})]:
        status, text = driver.execute_async_script(FETCH, method, path, body)
        assert status == 400 and "host_not_allowed" in text, (method, path, text)
        assert run_id not in text and "guestbook" not in text
    page = served.request("GET", f"/v1/runs/{run_id}/events")[1]
    assert page["lastEventSeq"] == before and page["runStatus"] == "waiting-input"
    assert _runs(served) == [run_id]
    # The same browser on the host's own name: the chat page and its API work.
    driver.get(served.url + "/")
    status, text = driver.execute_async_script(FETCH, "GET", "/v1/workflows", None)
    assert status == 200 and "guestbook" in text
