"""Every event the v2 wire serves validates against the bundled v2 schemas.

Real runs on a real `wop serve --conformance` (tokens: alice, bob), read through the v2 poll
and the v2 SSE stream (`OpenWOP-Version: 2.0`): the v2 envelope
(`v2/run-event.schema.json`) and each payload's def in `v2/run-event-payloads.schema.json`
(closed defs, tenant-bound ids), conversation payloads against
`v2/conversation-event.schema.json` and `v2/conversation-turn.schema.json`.
"""

from __future__ import annotations

import copy
import json
import time
import urllib.request
from typing import Any

from tests.server.conftest import ALICE, COUNCILS, Served
from wopdsl.protocol.check_v2 import v2_event_errors

V2 = {"OpenWOP-Version": "2.0"}
ALONE = ("conformance-noop", "conformance-failure", "conformance-conversation-lifecycle",
         "conformance-conversation-vs-clarification")


def _served(serve: Any, tokens_file: Any) -> Served:
    served: Served = serve(COUNCILS / "desk.toml", args=("--conformance", "--tokens",
                                                        str(tokens_file)), token=ALICE)
    return served


def _create(served: Served, workflow: str, **inputs: Any) -> str:
    status, body, _ = served.request("POST", "/runs", {"workflowId": workflow,
                                                      "inputs": inputs}, headers=V2)
    assert status == 201, body
    return str(body["runId"]).replace("/", "~2F")


def _poll(served: Served, segment: str) -> list[dict[str, Any]]:
    status, page, _ = served.request("GET", f"/runs/{segment}/events/poll", headers=V2)
    assert status == 200, page
    return list(page["events"])


def _sse(served: Served, segment: str) -> list[dict[str, Any]]:
    req = urllib.request.Request(f"{served.url}/runs/{segment}/events?streamMode=debug",
                                 headers={**V2, "Accept": "text/event-stream",
                                          "Authorization": f"Bearer {ALICE}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def _wait(served: Served, segment: str, *statuses: str) -> None:
    for _ in range(400):
        snap = served.request("GET", f"/runs/{segment}", headers=V2)[1]
        if snap["status"] in statuses:
            return
        time.sleep(0.05)
    raise AssertionError(f"{segment} never reached {statuses}")


def _errors(events: list[dict[str, Any]]) -> list[str]:
    return [f"#{e['sequence']} {e['type']}: {check}: {message}"
            for e in events for check, message in v2_event_errors(e)]


def test_every_v2_event_of_real_runs_validates(serve: Any, tokens_file: Any) -> None:
    served = _served(serve, tokens_file)
    logs: dict[str, list[dict[str, Any]]] = {}
    for workflow in ALONE:
        segment = _create(served, workflow)
        _wait(served, segment, "completed", "failed")
        logs[workflow] = _poll(served, segment)
    council = _create(served, "conformance-multi-party-council")
    _wait(served, council, "waiting-input")
    for member in "abc":
        status, body, _ = served.request(
            "POST", f"/runs/{council}/interrupts/convo",
            {"resumeValue": {"role": "agent", "speakerId": f"host:conformance-council-{member}",
                             "content": f"{member} speaks"}}, headers=V2)
        assert status == 200, body
    _wait(served, council, "completed", "failed")
    logs["council"] = _sse(served, council)
    desk = _create(served, "desk", task="Help Alice.")
    _wait(served, desk, "waiting-input")
    served.request("POST", f"/runs/{desk}/interrupts/room:chat", {"resumeValue": {
        "operation": "exchange", "turn": {"role": "user", "content": {"text": "Hi @bot",
                                                                       "mentions": ["bot"]}}}},
                   headers=V2)
    _wait(served, desk, "waiting-input", "completed")
    logs["desk"] = _poll(served, desk)
    types = {e["type"] for events in logs.values() for e in events}
    assert {"run.started", "node.started", "node.suspended", "node.resumed",
            "interrupt.requested", "interrupt.resolved", "conversation.opened",
            "conversation.exchanged", "conversation.closed", "run.completed",
            "run.failed"} <= types
    for name, events in logs.items():
        assert events and not _errors(events), (name, _errors(events))
        assert {e["runId"].split("/")[0] for e in events} == {"alice"}
    speakers = [e["payload"]["turn"]["speakerId"] for e in logs["council"]
                if e["type"] == "conversation.exchanged"]
    assert speakers == [f"host:conformance-council-{m}" for m in "abc"]
    started = next(e for e in logs["council"] if e["type"] == "node.started"
                   and e["payload"]["typeId"] == "council.member")
    assert "x-wopdsl-turn" in started["payload"]  # A council field rides the RFC 0185 hatch.
    suspended = next(e for e in logs["desk"] if e["type"] == "node.suspended")
    assert suspended["payload"]["interruptId"].startswith("alice/")


def test_what_the_v2_schemas_refuse(serve: Any, tokens_file: Any) -> None:
    served = _served(serve, tokens_file)
    segment = _create(served, "conformance-conversation-lifecycle")
    _wait(served, segment, "completed")
    events = _poll(served, segment)
    assert not _errors(events)

    def broken(type_: str, change: Any) -> list[str]:
        event = copy.deepcopy(next(e for e in events if e["type"] == type_))
        change(event["payload"])
        return _errors([event])

    # A council field outside the hatch: the closed v2 def refuses it.
    found = broken("node.started", lambda p: p.update(turn=1))
    assert any("payload-v2" in f and "'turn' was unexpected" in f for f in found), found
    # An interrupt id not bound to a tenant.
    found = broken("node.suspended", lambda p: p.update(interruptId="r-1:room:convo:start"))
    assert any("interruptId" in f for f in found), found
    # A turn that breaks the v2 turn schema (the RFC 0186 seat is checked, not waved through).
    found = broken("conversation.exchanged", lambda p: p["turn"].update(role="robot"))
    assert any("turn-v2" in f for f in found), found
    # engineVersion is an integer everywhere in v2 (RFC 0172).
    found = broken("run.started", lambda p: p.update(engineVersion="1.0"))
    assert any("engineVersion" in f for f in found), found
