"""``streamMode`` and ``bufferMs`` on a real host (v1 stream-modes.md, v2 events.md §The events
channel; the official `stream-modes*` and `v2-stream-mode-refusal` scenarios)."""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.server.conftest import COUNCILS, Served
from tests.server.test_sse import _frames
from wopdsl.server.feed import Frame
from wopdsl.server.modes import MODES, in_updates
from wopdsl.server.sse import windows

V2 = {"OpenWOP-Version": "2.0"}


def _stream(served: Served, path: str, headers: dict[str, str] | None = None,
            ) -> tuple[int, list[dict[str, str]], Any]:
    """Read an SSE answer to its end: (status, event frames, the body when it is JSON)."""
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
    conn.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
    resp = conn.getresponse()
    if resp.status != 200:
        body = json.loads(resp.read())
        conn.close()
        return resp.status, [], body
    assert resp.headers["content-type"].startswith("text/event-stream")
    frames = [f for kind, f in _frames(resp) if kind == "event" and "data" in f]
    conn.close()
    return 200, frames, None


def _finished(served: Served, workflow: str, inputs: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"workflowId": workflow, **({"inputs": inputs} if inputs else {})}
    status, created, _ = served.request("POST", "/v1/runs", body)
    assert status == 201, created
    served.wait_status(created["runId"], "completed", "failed")
    return str(created["runId"])


def _log(served: Served, run_id: str) -> list[dict[str, Any]]:
    return list(served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"])


def test_updates_is_the_default_and_debug_is_every_event(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    run_id = _finished(served, "conformance-noop")
    log = _log(served, run_id)
    updates = [e["sequence"] for e in log if in_updates(e["type"])]
    for query in ("", "?streamMode=updates"):
        _, frames, _ = _stream(served, f"/v1/runs/{run_id}/events{query}")
        assert [int(f["id"]) for f in frames] == updates, query
        kinds = {f["event"] for f in frames}
        assert {"run.started", "conversation.opened", "node.completed",
                "run.completed"} <= kinds
        assert "node.started" not in kinds  # debug only (the mapping table)
    _, frames, _ = _stream(served, f"/v1/runs/{run_id}/events?streamMode=debug")
    assert [int(f["id"]) for f in frames] == [e["sequence"] for e in log]
    assert [json.loads(f["data"]) for f in frames] == log
    # Mixed: the union, in log order, each frame named by its type.
    _, frames, _ = _stream(served, f"/v1/runs/{run_id}/events?streamMode=updates,debug")
    assert [int(f["id"]) for f in frames] == [e["sequence"] for e in log]
    _, frames, _ = _stream(served, f"/v1/runs/{run_id}/events?streamMode=messages,updates")
    assert [int(f["id"]) for f in frames] == updates
    # The JSON form filters only when a mode is named.
    assert _log(served, run_id) == log
    page = served.request("GET", f"/v1/runs/{run_id}/events?streamMode=updates")[1]
    assert [e["sequence"] for e in page["events"]] == updates


@pytest.mark.parametrize("mode", ["does-not-exist", "values,updates", "updates,values",
                                  "updates,bogus", "", "updates,", " updates", "UPDATES",
                                  "updates;debug"])
def test_an_unsupported_stream_mode_is_400_with_the_modes_served(serve: Any, mode: str) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    run_id = _finished(served, "conformance-noop")
    path = f"/v1/runs/{run_id}/events?streamMode={mode.replace(' ', '%20').replace(';', '%3B')}"
    for status, body in (_stream(served, path)[::2],  # SSE asked for ...
                         served.request("GET", path)[:2]):  # ... or JSON: checked first.
        assert status == 400 and body["error"] == "unsupported_stream_mode", body
        assert body["details"]["supported"] == list(MODES) and body["message"]
    # v2: the same refusal, in the v2 envelope.
    v2_path = f"/runs/local~2F{run_id}/events?streamMode={mode.replace(' ', '%20')}"
    status, _, body = _stream(served, v2_path.replace(";", "%3B"), V2)
    assert (status, body["error"], body["details"]["supported"]) == \
        (400, "unsupported_stream_mode", list(MODES))


def test_the_run_is_checked_before_the_mode(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    status, _, body = _stream(served, "/v1/runs/nope/events?streamMode=bogus")
    assert (status, body["error"]) == (404, "run_not_found")


def test_values_sends_a_snapshot_after_each_state_change(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    run_id = _finished(served, "conformance-noop")
    log = _log(served, run_id)
    _, frames, _ = _stream(served, f"/v1/runs/{run_id}/events?streamMode=values")
    assert {f["event"] for f in frames} == {"state.snapshot"}
    assert [int(f["id"]) for f in frames] == [e["sequence"] for e in log if in_updates(e["type"])]
    snapshots = [json.loads(f["data"]) for f in frames]
    assert snapshots[0]["status"] == "running" and snapshots[-1]["status"] == "completed"
    assert snapshots[-1] == served.request("GET", f"/v1/runs/{run_id}")[1]
    # Resumed: the snapshot at Last-Event-ID first, then the ones after it.
    middle = int(frames[2]["id"])
    _, resumed, _ = _stream(served, f"/v1/runs/{run_id}/events?streamMode=values",
                            {"Last-Event-ID": str(middle)})
    assert [int(f["id"]) for f in resumed] == [middle] + [int(f["id"]) for f in frames[3:]]
    assert json.loads(resumed[0]["data"]) == snapshots[2]
    # v2: the v2 snapshot (bound run id, owner).
    _, v2, _ = _stream(served, f"/runs/local~2F{run_id}/events?streamMode=values", V2)
    last = json.loads(v2[-1]["data"])
    assert last == served.request("GET", f"/runs/local~2F{run_id}", headers=V2)[1]
    assert last["runId"] == f"local/{run_id}" and last["owner"]["tenant"] == "local"


def test_buffer_ms_batches_without_losing_or_reordering(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    run_id = _finished(served, "conformance-noop")
    _, plain, _ = _stream(served, f"/v1/runs/{run_id}/events")
    assert all(f["event"] != "batch" for f in plain)
    _, zero, _ = _stream(served, f"/v1/runs/{run_id}/events?bufferMs=0")
    assert zero == plain  # 0 is "no buffering"
    for path in (f"/v1/runs/{run_id}/events?bufferMs=200",
                 f"/runs/local~2F{run_id}/events?streamMode=updates&bufferMs=5000"):
        _, batched, _ = _stream(served, path, V2 if path.startswith("/runs") else None)
        assert batched and {f["event"] for f in batched} == {"batch"}, batched
        docs = [doc for f in batched for doc in json.loads(f["data"])]
        assert [d["sequence"] for d in docs] == [int(f["id"]) for f in plain]
        bound = f"local/{run_id}" if path.startswith("/runs") else run_id
        assert {d["runId"] for d in docs} == {bound}  # v2: every event of a batch projected
        for frame in batched:  # id: the highest sequence in the batch
            assert int(frame["id"]) == json.loads(frame["data"])[-1]["sequence"]
    # Flushed at the suspension: the batch ends with node.suspended, the terminal one too.
    _, batched, _ = _stream(served, f"/v1/runs/{run_id}/events?bufferMs=5000")
    assert [json.loads(f["data"])[-1]["type"] for f in batched] == \
        ["node.suspended", "run.completed"]


@pytest.mark.parametrize("value", ["5001", "-1", "99999", "1.5", "x", ""])
def test_a_buffer_ms_outside_0_to_5000_is_400(serve: Any, value: str) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    run_id = _finished(served, "conformance-noop")
    for status, body in (_stream(served, f"/v1/runs/{run_id}/events?bufferMs={value}")[::2],
                         served.request("GET", f"/v1/runs/{run_id}/events?bufferMs={value}")[:2]):
        assert (status, body["error"], body["details"]["field"]) == \
            (400, "validation_error", "bufferMs")


def _frame(sequence: int, kind: str = "node.completed") -> Frame:
    return Frame(sequence, kind, b"{}")


async def _source(items: list[list[Frame] | None], hold: asyncio.Event | None
                  ) -> AsyncIterator[list[Frame] | None]:
    for item in items:
        yield item
    if hold is not None:
        await hold.wait()  # the run goes on: nothing more for now


def _windows(items: list[list[Frame] | None], window_s: float, *, ends: bool,
             stop: int) -> list[list[int] | None]:
    """The windows of a source of ``items`` (that then ends, or holds), up to ``stop``."""
    async def go() -> list[list[int] | None]:
        gen = windows(_source(items, None if ends else asyncio.Event()), window_s)
        out: list[list[int] | None] = []
        async with asyncio.timeout(30):  # a generous bound: a window of an hour never closes
            async for window in gen:
                out.append(None if window is None else [f.sequence for f in window])
                if len(out) == stop:
                    break
        await gen.aclose()
        return out

    return asyncio.run(go())


def test_a_window_is_flushed_at_a_suspension_a_terminal_event_and_the_end() -> None:
    # A window of an hour: only the suspension, the terminal event or the end flush it.
    assert _windows([[_frame(0), _frame(1, "node.suspended"), _frame(2)], [_frame(3)], None,
                     [_frame(4, "run.completed")]], 3600, ends=False, stop=2) == \
        [[0, 1], [2, 3, 4]]
    assert _windows([[_frame(7)], [_frame(8)]], 3600, ends=True, stop=9) == [[7, 8]]


def test_a_window_closes_on_time_and_keepalives_pass_while_nothing_waits() -> None:
    assert _windows([None, [_frame(5)], None], 0.05, ends=False, stop=2) == [None, [5]]


def _until_idle(served: Served, path: str) -> list[dict[str, str]]:
    """The frames of a live run's stream up to its first keep-alive (the backlog)."""
    conn = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
    conn.request("GET", path, headers={"Accept": "text/event-stream"})
    resp = conn.getresponse()
    assert resp.status == 200
    frames = []
    for kind, frame in _frames(resp):
        if kind == "comment" and "keepalive" in frame:
            break
        if kind == "event" and "data" in frame:
            frames.append(frame)
    conn.close()
    return frames


def test_messages_is_the_streamed_model_output(serve: Any) -> None:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from tests.server.test_web_stream import ANSWER, KEY_ENV, STUDIO
    from wopdsl.testing.model_server import Answer, ScriptedModelServer

    with ScriptedModelServer() as model:
        model.add(Answer(ANSWER, chunks=6), member="writer")
        served = serve(STUDIO, args=("--keepalive", "0.5"),
                       env={"OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test-0000"})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "studio"})
        assert status == 201, created
        run_id = created["runId"]
        served.wait_status(run_id, "waiting-input")  # the writer answered; the founder is next
        log = _log(served, run_id)
        chunks = [e["sequence"] for e in log if e["type"] == "output.chunk"]
        assert chunks  # the writer streamed its answer
        frames = _until_idle(served, f"/v1/runs/{run_id}/events?streamMode=messages")
        assert [int(f["id"]) for f in frames] == chunks
        assert {f["event"] for f in frames} == {"output.chunk"}
        both = _until_idle(served, f"/v1/runs/{run_id}/events?streamMode=updates,messages")
        assert [int(f["id"]) for f in both] == [
            e["sequence"] for e in log if e["type"] == "output.chunk" or in_updates(e["type"])]
        # Negative: the default (updates) carries no chunk.
        assert "output.chunk" not in {f["event"] for f in _until_idle(
            served, f"/v1/runs/{run_id}/events")}
