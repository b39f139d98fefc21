"""The official OpenWOP client (openwop-client 1.8, v1 wire) drives `wop serve` end to end."""

from __future__ import annotations

import threading
from typing import Any

import pytest

openwop_client = pytest.importorskip("openwop_client", reason="needs openwop-client (dev)")
from openwop_client import (  # noqa: E402
    CancelRunRequest,
    CreateRunRequest,
    ForkRunRequest,
    OpenwopClient,
    ResolveInterruptRequest,
    WopError,
)

from tests.server.conftest import ALICE, Served  # noqa: E402


def _client(served: Served, token: str = ALICE) -> OpenwopClient:
    return OpenwopClient(base_url=served.url, api_key=token, timeout=20)


def _follow(client: OpenwopClient, run_id: str, into: list[Any]) -> threading.Thread:
    def read() -> None:
        into.extend(client.runs_events(run_id, stream_mode="debug", timeout_seconds=30))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_discovery_and_openapi(serve: Any) -> None:
    served = serve()
    client = _client(served)
    caps = client.discovery_capabilities()
    assert caps.protocolVersion == "1.0"
    assert caps.limits.envelopesPerTurn == 1
    assert caps.multiPartyConversation is not None
    assert caps.multiPartyConversation.supported is True
    doc = client.discovery_openapi()
    assert doc["openapi"].startswith("3.")
    assert "/v1/runs/{runId}/interrupts/{nodeId}" in doc["paths"]
    assert client.workflows_get("desk")["rooms"][0]["nodeId"] == "room:chat"


def test_create_stream_resolve_poll(serve: Any) -> None:
    served = serve()
    client = _client(served)
    created = client.runs_create(CreateRunRequest(workflowId="desk",
                                                  inputs={"task": "Help Alice."}))
    assert created.eventsUrl == f"/v1/runs/{created.runId}/events"
    run_id = created.runId
    streamed: list[Any] = []
    thread = _follow(client, run_id, streamed)
    served.wait_status(run_id, "waiting-input")
    snap = client.runs_get(run_id)
    assert snap.status == "waiting-input"
    assert snap.currentNodeId == "room:chat"
    assert snap.variables == {"task": "Help Alice."}

    answer = client.interrupts_resolve_by_run(run_id, "room:chat", ResolveInterruptRequest(
        resumeValue={"operation": "exchange",
                     "turn": {"role": "user", "content": {"text": "Where is @bot?",
                                                          "mentions": ["bot"]}}}))
    assert (answer.runId, answer.nodeId) == (run_id, "room:chat")
    thread.join(20)
    assert not thread.is_alive(), "the SSE stream did not end after the terminal event"
    types = [e.type for e in streamed]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert [e.sequence for e in streamed] == list(range(len(streamed)))
    texts = [e.payload["turn"]["content"]["text"] for e in streamed
             if e.type == "conversation.exchanged"]
    assert texts == ["Hello! What do you need, @visitor?", "Where is @bot?",
                     "You asked: Where is @bot?"]

    polled = client.runs_poll_events(run_id, last_sequence=-1, timeout_seconds=1)
    assert polled.isComplete is True
    assert [e.eventId for e in polled.events] == [e.eventId for e in streamed]
    tail = client.runs_poll_events(run_id, last_sequence=streamed[-1].sequence,
                                   timeout_seconds=1)
    assert tail.events == [] and tail.isComplete is True
    assert client.runs_get(run_id).status == "completed"


def test_cancel_a_waiting_run(serve: Any) -> None:
    served = serve()
    client = _client(served)
    run_id = client.runs_create(CreateRunRequest(workflowId="desk")).runId
    served.wait_status(run_id, "waiting-input")
    cancelled = client.runs_cancel(run_id, CancelRunRequest(reason="visitor left"))
    assert (cancelled.runId, cancelled.status) == (run_id, "cancelled")
    events = list(client.runs_events(run_id, timeout_seconds=10))
    assert events[-1].type == "run.cancelled"
    assert events[-1].payload["reason"] == "visitor left"
    assert client.runs_get(run_id).status == "cancelled"
    with pytest.raises(WopError) as refused:
        client.interrupts_resolve_by_run(run_id, "room:chat",
                                         ResolveInterruptRequest(resumeValue={
                                             "content": {"text": "too late"}}))
    assert refused.value.status in (409, 422)
    assert refused.value.envelope is not None


def test_errors_reach_the_client_as_envelopes(serve: Any) -> None:
    served = serve()
    client = _client(served)
    with pytest.raises(WopError) as missing:
        client.runs_get("no-such-run")
    assert missing.value.status == 404
    assert missing.value.envelope.error == "run_not_found"
    with pytest.raises(WopError) as unknown:
        client.runs_create(CreateRunRequest(workflowId="no-such-council"))
    assert unknown.value.status == 404
    assert unknown.value.envelope.error == "workflow_not_found"
    run_id = client.runs_create(CreateRunRequest(workflowId="desk")).runId
    with pytest.raises(WopError) as node:
        client.interrupts_resolve_by_run(run_id, "room:nowhere",
                                         ResolveInterruptRequest(resumeValue={}))
    assert node.value.status == 404
    assert node.value.envelope.error == "interrupt_not_found"


def test_fork_through_the_client(serve: Any) -> None:
    served = serve()
    client = _client(served)
    run_id = client.runs_create(CreateRunRequest(workflowId="desk")).runId
    served.wait_status(run_id, "waiting-input")
    opened = max(e.sequence for e in client.runs_poll_events(run_id, last_sequence=-1,
                                                              timeout_seconds=0).events
                 if e.type == "conversation.opened")
    forked = client.runs_fork(run_id, ForkRunRequest(fromSeq=opened, mode="branch"))
    assert forked.sourceRunId == run_id and forked.runId != run_id
    snap = served.wait_status(forked.runId, "waiting-input")
    assert snap["channels"]["chat"][0]["content"]["text"].startswith("Hello!")
