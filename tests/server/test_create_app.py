"""``create_app`` in your own process: a decorator council with python handlers, on uvicorn."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn

from tests.server.conftest import free_port
from wopdsl import Council, Reply, Turn
from wopdsl.server import Limits, create_app


def test_create_app_serves_decorator_councils(tmp_path: Path) -> None:
    council = Council("echo", task="Say it back.")
    council.room("all", members=["echo"])

    @council.member(role="echo")
    async def echo(turn: Turn) -> Reply:
        return Reply(summary=f"heard: {turn.task}")

    app = create_app(tmp_path / "runs.db", [council], limits=Limits(keepalive_s=1))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        body = json.dumps({"workflowId": "echo", "inputs": {"task": "hello"}}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/runs", data=body,
                                     method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            created = json.loads(resp.read())
        assert resp.status == 201
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/v1/runs/{created['runId']}", timeout=10) as resp:
                snap = json.loads(resp.read())
            if snap["status"] == "completed" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert snap["status"] == "completed"
        assert snap["nodeStates"]["echo"]["turns"] == 1
        assert app.state.host.councils["echo"] is council
    finally:
        server.should_exit = True
        thread.join(10)
