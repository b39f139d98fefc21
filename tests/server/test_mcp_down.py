"""An MCP server that is down, on a real ``wop serve``: the run fails visibly and lets go.

The council's member needs ``mcp:ops/count``; its server is a stdio command that prints the
secret it was passed and exits, or a streamable HTTP url nothing listens on. The run must end
``failed`` with the reason naming the server (an SSE client sees ``run.failed`` and its
stream ends), the ``--max-runs 1`` host must take the next run, and the secret must appear
nowhere: not in the events over HTTP, not in the host's output, not in the database file.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.server.test_sse import _frames, _open
from tests.tools.conftest import (
    MCP_TOKEN,
    SECRET_FORMS,
    down_council,
    down_environment,
    effects_in,
    free_port,
    mcp_http_server,
)
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow


def _until_the_stream_ends(resp: Any) -> list[dict[str, Any]]:
    """The SSE frames of a run until the host ends the stream (bounded: 60 s)."""
    deadline = time.monotonic() + 60
    frames = []
    for kind, frame in _frames(resp):  # keep-alives come at least every 15 s
        if kind == "event" and "data" in frame:
            frames.append(json.loads(frame["data"]))
        assert time.monotonic() < deadline, f"the stream is still open after {frames}"
    return frames


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_run_whose_mcp_server_is_down_fails_and_frees_its_slot(
        serve: Any, tmp_path: Path, kind: str) -> None:
    port = free_port()
    folder = tmp_path / "council"
    folder.mkdir()
    council = down_council(folder, kind, port)
    effects = tmp_path / "effects.jsonl"
    with ScriptedModelServer() as model:
        served = serve(council, args=("--max-runs", "1"),
                       env=down_environment(model.url, effects))
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "down"})
        assert status == 201, created
        run_id = created["runId"]
        conn, resp = _open(served, run_id)
        try:
            frames = _until_the_stream_ends(resp)
        finally:
            conn.close()
        assert frames[-1]["type"] == "run.failed", [f["type"] for f in frames]
        error = frames[-1]["payload"]["error"]
        assert error["details"] == {"nodeError": "TOOL_ERROR"}
        assert "member sre failed: TOOL_ERROR: MCP server 'ops' could not be reached" in \
            error["message"]
        failed = next(f["payload"] for f in frames if f["type"] == "node.failed")
        assert failed["error"]["details"] == {"server": "ops"}
        if kind == "stdio":  # its stderr is quoted, the secret it printed is not
            assert "its stderr ends: 'cannot start with [REDACTED] [REDACTED]" in \
                failed["error"]["message"]
        assert served.wait_status(run_id, "failed")["status"] == "failed"
        assert model.requests == []
        # The slot is free again: the next run is taken (and, once the server is up, works).
        model.add(ToolCalls(("count", {"label": "second"})), Answer({"summary": "done"}))
        up = mcp_http_server(port, effects) if kind == "http" else contextlib.nullcontext()
        with up:
            status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "down"})
            assert status == 201, created
            second = created["runId"]
            snap = served.wait_status(second, "completed", "failed", timeout=60)
        assert snap["status"] == ("completed" if kind == "http" else "failed")
        if kind == "http":
            assert [e["label"] for e in effects_in(effects)] == ["second"]
        else:  # started once per run
            assert effects_in(effects) == [{"started": 1}, {"started": 1}]
        status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
        assert status == 200
        load_schemas().check_events(page["events"])
    shown = [json.dumps(page), json.dumps(frames), served.logs(),
             served.store.read_bytes().decode("utf-8", "replace")]
    for text in shown:
        for form in [*SECRET_FORMS, MCP_TOKEN]:
            assert form not in text
