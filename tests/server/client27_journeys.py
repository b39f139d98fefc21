"""Run by test_client_v2.py with openwop-client 2.7 on its path (not collected by pytest).

``python client27_journeys.py URL TOKEN JOURNEY`` drives one journey of
docs/guides/serve.md through the official v2 client and prints what it observed as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from openwop_client import OpenwopClient, WopError
from openwop_client.types import (
    CancelRunRequest,
    CreateRunRequest,
    ForkRunRequest,
    ResolveInterruptRequest,
)


def _wait(client: OpenwopClient, run_id: str, *statuses: str) -> str:
    deadline = time.monotonic() + 20
    while (status := client.runs_get(run_id).status) not in statuses:
        if time.monotonic() > deadline:
            raise AssertionError(f"{run_id} is {status}")
        time.sleep(0.05)
    return status


def discovery(client: OpenwopClient) -> dict[str, Any]:
    caps = client.discovery_capabilities()
    return {"versions": caps.protocolVersions, "preferred": caps.preferredVersion,
            "families": sorted(caps.families),
            "maxParticipants": caps.families["multiPartyConversation"].facets[
                "maxParticipants"],
            "fixtures": caps.raw.get("fixtures"),
            "openapi": sorted(client.discovery_openapi()["paths"])[:3]}


def human(client: OpenwopClient) -> dict[str, Any]:
    created = client.runs_create(CreateRunRequest(workflowId="desk",
                                                  inputs={"task": "Help Alice."}))
    _wait(client, created.runId, "waiting-input")
    snap = client.runs_get(created.runId)
    answer = client.interrupts_resolve_by_run(created.runId, "room:chat", ResolveInterruptRequest(
        resumeValue={"operation": "exchange",
                     "turn": {"role": "user", "content": {"text": "Where is @bot?",
                                                          "mentions": ["bot"]}}}))
    streamed = list(client.runs_events(created.runId, stream_mode="debug",
                                     timeout_seconds=20))
    half = streamed[len(streamed) // 2].sequence
    resumed = list(client.runs_events(created.runId, stream_mode="debug",
                                      last_event_id=str(half), timeout_seconds=20))
    polled = client.runs_poll_events(created.runId, after_sequence=-1, timeout_seconds=1)
    tail = client.runs_poll_events(created.runId, after_sequence=polled.lastSequence)
    return {"runId": created.runId, "eventsUrl": created.eventsUrl,
            "owner": snap.owner.tenant, "snapStatus": snap.status,
            "answer": [answer.runId, answer.nodeId],
            "types": [e.type for e in streamed], "runIds": sorted({e.runId for e in streamed}),
            "sequences": [e.sequence for e in streamed],
            "texts": [e.payload["turn"]["content"]["text"] for e in streamed
                      if e.type == "conversation.exchanged"],
            "resumed": [e.sequence for e in resumed], "half": half,
            "polled": [e.eventId for e in polled.events] == [e.eventId for e in streamed],
            "pollTerminal": polled.isTerminal, "pollStatus": polled.status,
            "tail": [len(tail.events), tail.lastSequence == polled.lastSequence],
            "final": client.runs_get(created.runId).status}


def agent(client: OpenwopClient) -> dict[str, Any]:
    run_id = client.runs_create(CreateRunRequest(
        workflowId="conformance-multi-party-council")).runId
    _wait(client, run_id, "waiting-input")
    try:
        client.interrupts_resolve_by_run(run_id, "convo", ResolveInterruptRequest(
            resumeValue={"role": "agent", "speakerId": "host:conformance-intruder",
                         "content": "let me in"}))
        refused: Any = None
    except WopError as exc:
        refused = [exc.status, exc.envelope.error if exc.envelope else None,
                   (exc.envelope.details or {}).get("speakerId") if exc.envelope else None]
    spoken = []
    for member in "abc":
        answer = client.interrupts_resolve_by_run(run_id, "convo", ResolveInterruptRequest(
            resumeValue={"role": "agent", "speakerId": f"host:conformance-council-{member}",
                         "content": f"{member} speaks"}))
        spoken.append(answer.status)
    events = list(client.runs_events(run_id, timeout_seconds=20))
    return {"refused": refused, "spoken": spoken, "last": events[-1].type,
            "speakers": [e.payload["turn"]["speakerId"] for e in events
                         if e.type == "conversation.exchanged"],
            "opened": [p["agentId"] for e in events if e.type == "conversation.opened"
                       for p in e.payload["participants"]]}


def cancel(client: OpenwopClient) -> dict[str, Any]:
    run_id = client.runs_create(CreateRunRequest(workflowId="conformance-cancellable",
                                                 inputs={"delayMs": 10_000})).runId
    _wait(client, run_id, "running")
    cancelled = client.runs_cancel(run_id, CancelRunRequest(reason="enough"))
    events = list(client.runs_events(run_id, timeout_seconds=10))
    return {"cancelled": [cancelled.runId == run_id, cancelled.status],
            "last": [events[-1].type, events[-1].payload.get("reason")],
            "final": client.runs_get(run_id).status}


def fork(client: OpenwopClient) -> dict[str, Any]:
    run_id = client.runs_create(CreateRunRequest(
        workflowId="conformance-conversation-replay")).runId
    _wait(client, run_id, "completed")
    source = client.runs_get(run_id)
    opened = max(e.sequence for e in client.runs_poll_events(run_id).events
                 if e.type == "conversation.opened")
    forked = client.runs_fork(run_id, ForkRunRequest(fromSeq=opened, mode="replay"))
    _wait(client, forked.runId, "completed", "failed")
    return {"source": forked.sourceRunId == run_id, "new": forked.runId != run_id,
            "mode": forked.mode, "status": client.runs_get(forked.runId).status,
            "sameChannels": client.runs_get(forked.runId).channels == source.channels,
            "tenant": forked.runId.split("/")[0]}


def errors(client: OpenwopClient) -> dict[str, Any]:
    seen = {}
    for name, call in (("missing", lambda: client.runs_get("alice/no-such-run-0123456789")),
                       ("foreign", lambda: client.runs_get("mallory/no-such-run-0123456789")),
                       ("workflow", lambda: client.runs_create(
                           CreateRunRequest(workflowId="no-such-council")))):
        try:
            call()
        except WopError as exc:
            seen[name] = [exc.status, exc.envelope.error if exc.envelope else None]
    return seen


if __name__ == "__main__":
    url, token, journey = sys.argv[1:4]
    print(json.dumps(globals()[journey](OpenwopClient(url, token, timeout=20))))
