"""`wop serve --conformance`: the OpenWOP conformance fixtures and the multi-party seam.

A real `wop serve` on loopback. Each test holds one rule of `conformance/fixtures.md` (or of
the scenario that uses the fixture) with its positive and negative case.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from tests.server.conftest import COUNCILS, Served

FIXTURES = {"conformance-noop", "conformance-idempotent", "conformance-delay",
            "conformance-cancellable", "conformance-failure",
            "conformance-conversation-lifecycle", "conformance-conversation-vs-clarification",
            "conformance-conversation-replay", "conformance-multi-party-council",
            "conformance-multi-party-council-oversize", "conformance-approval"}
SEAM = "/v1/host/sample/conversation/multi-party"
V2 = {"OpenWOP-Version": "2.0"}
ACCEPT = {"resumeValue": {"action": "accept"}}


def _conformance(serve: Any) -> Served:
    served: Served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    return served


def _create(served: Served, workflow: str, **inputs: Any) -> str:
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": workflow, "inputs": inputs})
    assert status == 201, body
    return str(body["runId"])


def test_discovery_advertises_the_fixtures_it_serves(serve: Any) -> None:
    served = _conformance(serve)
    doc = served.request("GET", "/.well-known/openwop", token=None)[1]
    assert set(doc["fixtures"]) == FIXTURES and len(doc["fixtures"]) == len(FIXTURES)
    workflows = {w["workflowId"] for w in served.request("GET", "/v1/workflows")[1]["workflows"]}
    assert workflows == FIXTURES | {"desk"}  # Every advertised fixture is served.
    plain = serve(COUNCILS / "desk.toml")
    doc = plain.request("GET", "/.well-known/openwop", token=None)[1]
    assert "fixtures" not in doc  # Negative: nothing advertised without --conformance.
    status = plain.request("POST", f"{SEAM}/open", {"conversationId": "c",
                                                     "participants": []})[0]
    assert status == 404


def test_noop_completes_and_failure_fails_with_a_structured_error(serve: Any) -> None:
    served = _conformance(serve)
    noop = served.wait_status(_create(served, "conformance-noop"), "completed", "failed")
    assert noop["status"] == "completed" and "error" not in noop
    failed = served.wait_status(_create(served, "conformance-failure"), "completed", "failed")
    assert failed["status"] == "failed"
    assert isinstance(failed["error"]["code"], str) and failed["error"]["message"]


def test_delay_is_running_then_completes(serve: Any) -> None:
    served = _conformance(serve)
    run_id = _create(served, "conformance-delay", delayMs=1500)
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "running"
    started = time.monotonic()
    assert served.wait_status(run_id, "completed", timeout=10)["status"] == "completed"
    assert time.monotonic() - started > 0.5  # It did wait.
    for bad in (-1, 30_001, "1000", True):
        status, body, _ = served.request("POST", "/v1/runs", {
            "workflowId": "conformance-delay", "inputs": {"delayMs": bad}})
        assert (status, body["details"]["field"]) == (400, "inputs.delayMs"), bad


def test_cancellable_is_cancelled_mid_run(serve: Any) -> None:
    served = _conformance(serve)
    run_id = _create(served, "conformance-cancellable", delayMs=10_000)
    served.wait_status(run_id, "running", timeout=5)
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/cancel", {"reason": "test"})
    assert status == 200 and body["status"] in ("cancelled", "cancelling")
    assert served.wait_status(run_id, "cancelled", timeout=5)["status"] == "cancelled"
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/cancel", {})
    assert (status, body["status"]) == (200, "cancelled")  # Idempotent on a cancelled run.


def test_cancelling_a_completed_run_is_idempotent_on_v1_and_run_terminal_on_v2(
        serve: Any) -> None:
    served = _conformance(serve)  # The suite's interruptRace (v1) and v2-run-cancel.
    run_id = _create(served, "conformance-noop")
    served.wait_status(run_id, "completed", timeout=10)
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/cancel", {})
    assert (status, body) == (200, {"runId": run_id, "status": "completed"})
    status, body, _ = served.request("POST", f"/runs/{run_id}/cancel", {},
                                     headers={"OpenWOP-Version": "2.0"})
    assert (status, body["error"], body["details"]["status"]) == (409, "run_terminal",
                                                                  "completed")
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "completed"


def test_a_workflow_reads_as_its_definition_with_id_and_nodes(serve: Any) -> None:
    served = _conformance(serve)  # The suite's route-coverage (getWorkflow).
    status, doc, _ = served.request("GET", "/v1/workflows/conformance-conversation-lifecycle")
    assert status == 200 and doc["id"] == doc["workflowId"] == "conformance-conversation-lifecycle"
    assert doc["nodes"][0] == {"id": "room:convo", "typeId": "core.conversationGate"}
    assert {n["typeId"] for n in doc["nodes"][1:]} == {"council.member"}
    run_id = _create(served, "conformance-conversation-lifecycle")
    served.wait_status(run_id, "completed", timeout=10)
    started = {e["nodeId"] for e in served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
               if e["type"] == "node.started"}
    assert started <= {n["id"] for n in doc["nodes"]}  # The nodes the run's events name.
    status, body, _ = served.request("GET", "/v1/workflows/openwop-conformance-missing")
    assert status == 404 and set(body) == {"error", "message", "details"}


def test_idempotent_takes_a_nonce_and_refuses_other_inputs(serve: Any) -> None:
    served = _conformance(serve)
    key = {"Idempotency-Key": "fixture-1"}
    body = {"workflowId": "conformance-idempotent", "inputs": {"nonce": "abc-123"}}
    first = served.request("POST", "/v1/runs", body, headers=key)
    replay = served.request("POST", "/v1/runs", body, headers=key)
    assert first[0] == 201 and replay[1]["runId"] == first[1]["runId"]
    conflict = served.request("POST", "/v1/runs", {**body, "inputs": {"nonce": "DIFFERENT"}},
                              headers=key)
    assert (conflict[0], conflict[1]["error"]) == (409, "idempotency_key_mismatch")
    status, refused, _ = served.request("POST", "/v1/runs", {
        "workflowId": "conformance-idempotent", "inputs": {"colour": "red"}})
    assert (status, refused["details"]["fields"]) == (400, ["colour"])
    status, refused, _ = served.request("POST", "/v1/runs", {
        "workflowId": "desk", "inputs": {"nonce": "x"}})
    assert status == 400  # A council that is no fixture still takes only `task`.


def test_conversation_fixtures_open_exchange_close_and_replay(serve: Any) -> None:
    served = _conformance(serve)
    for fixture in ("conformance-conversation-lifecycle",
                    "conformance-conversation-vs-clarification"):
        run_id = _create(served, fixture)
        assert served.wait_status(run_id, "completed", "failed")["status"] == "completed"
        events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
        kinds = [e["type"] for e in events]
        conversation = [e for e in events if e["type"].startswith("conversation.")]
        assert {"conversation.opened", "conversation.exchanged", "conversation.closed"} <= \
            set(kinds)
        assert len({e["payload"]["conversationId"] for e in conversation}) == 1
        closed = kinds.index("conversation.closed")
        assert "conversation.exchanged" not in kinds[closed:]
        assert not [k for k in kinds if k.startswith("clarification.")]
    source = _create(served, "conformance-conversation-replay")
    channels = served.wait_status(source, "completed")["channels"]
    status, fork, _ = served.request("POST", f"/v1/runs/{source}:fork", {"mode": "replay"})
    assert status == 201 and fork["mode"] == "replay", fork
    forked = served.wait_status(fork["runId"], "completed", "failed")
    assert forked["status"] == "completed" and forked["channels"] == channels
    status, body, _ = served.request("POST", f"/v1/runs/{source}:fork",
                                     {"mode": "replay", "fromSeq": 10_000})
    assert (status, body["error"]) == (422, "fork_point_invalid")  # Negative: not in the log.


def test_the_multi_party_seam_enforces_the_roster(serve: Any) -> None:
    served = _conformance(serve)
    roster = [{"agentId": f"host:advisor-{m}"} for m in ("cfo", "cmo", "cto")]
    status, opened, _ = served.request("POST", f"{SEAM}/open",
                                       {"conversationId": "q1", "participants": roster})
    assert status == 200 and opened["status"] == "waiting-input", opened

    def turn(speaker: str | None, index: int) -> dict[str, Any]:
        body: dict[str, Any] = {"messageId": f"q1:{index}:agent", "content": "A turn.",
                                "ts": 1718900000000 + index, "role": "agent",
                                "turnIndex": index}
        if speaker is not None:
            body |= {"from": speaker, "speakerId": speaker}
        return {"conversationId": "q1", "turn": body}

    status, body, _ = served.request("POST", f"{SEAM}/exchange", turn("host:advisor-cfo", 1))
    assert status == 200 and body["messageId"], body
    for refused, reason in ((turn(None, 2), "validation_error"),
                            (turn("host:advisor-intruder", 3),
                             "conversation_speaker_not_participant")):
        status, body, _ = served.request("POST", f"{SEAM}/exchange", refused)
        assert (status, body["error"], body["details"]["reason"]) == \
            (422, "validation_error", reason), body
    events = served.request("GET", f"/v1/runs/{opened['runId']}/events")[1]["events"]
    assert [e["payload"]["turn"]["speakerId"] for e in events
            if e["type"] == "conversation.exchanged"] == ["host:advisor-cfo"]
    over = [{"agentId": f"host:advisor-{i}"} for i in range(33)]
    status, body, _ = served.request("POST", f"{SEAM}/open",
                                     {"conversationId": "big", "participants": over})
    assert (status, body["error"]) == (422, "validation_error")
    assert (body["details"]["maxParticipants"], body["details"]["reason"]) == \
        (32, "conversation_roster_exceeded")
    status, _, _ = served.request("POST", f"{SEAM}/exchange",
                                  {"conversationId": "never", "turn": {}})
    assert status == 404


def _gate(served: Served, run_id: str, *, v2: bool = False,
          resume: dict[str, Any] | None = None) -> tuple[int, Any]:
    """Resolve ``conformance-approval``'s gate (node ``gate``) over v1 or v2."""
    path = f"/runs/{run_id}/interrupts/gate" if v2 else f"/v1/runs/{run_id}/interrupts/gate"
    status, body, _ = served.request("POST", path, resume or ACCEPT,
                                     headers=V2 if v2 else None)
    return status, body


def _last(served: Served, run_id: str) -> int:
    return int(served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"])


def test_approval_suspends_at_its_gate_and_completes_after_accept(serve: Any) -> None:
    served = _conformance(serve)  # The suite's interrupt-approval (v1) and pause-resume.
    run_id = _create(served, "conformance-approval")
    snap = served.wait_status(run_id, "waiting-approval", timeout=10)
    assert snap["currentNodeId"] == "gate"
    v2_snap = served.request("GET", f"/runs/{run_id}", headers=V2)[1]
    assert (v2_snap["status"], v2_snap["currentNodeId"]) == ("waiting-approval", "gate")
    page = served.request("GET", f"/runs/{run_id}/events/poll", headers=V2)[1]
    assert page["status"] == "waiting-approval" and not page["isTerminal"]
    last = _last(served, run_id)
    # Refused, and nothing appended: an action outside {accept, reject}, a node with no
    # interrupt, and a :pause (the run waits: 409 naming the waiting-* status).
    assert _gate(served, run_id, resume={"resumeValue": {"action": "maybe"}})[0] == 400
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/no-such-node",
                                     ACCEPT)
    assert (status, body["error"]) == (404, "interrupt_not_found")
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}:pause", {"reason": "race"})
    assert (status, body["details"]["runStatus"]) == (409, "waiting-approval"), body
    assert _last(served, run_id) == last
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-approval"
    status, body = _gate(served, run_id)
    assert (status, body["callId"]) == (200, "call/gate/1/0"), body
    done = served.wait_status(run_id, "completed", "failed", timeout=10)
    assert done["status"] == "completed" and "currentNodeId" not in done
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    assert [e["payload"]["resumeValue"] for e in events if e["type"] == "interrupt.resolved"
            and e["payload"]["kind"] == "approval"] == [{"action": "accept",
                                                         "decidedBy": "approver"}]
    assert [e["payload"]["toolName"] for e in events if e["type"] == "agent.toolCalled"] == \
        ["proceed"]


def test_a_rejected_gate_is_the_tools_result_and_the_run_completes(serve: Any) -> None:
    served = _conformance(serve)
    run_id = _create(served, "conformance-approval")
    served.wait_status(run_id, "waiting-approval", timeout=10)
    status, body = _gate(served, run_id, v2=True, resume={
        "resumeValue": {"action": "reject", "comment": "not today"}})
    assert status == 200 and body["runId"] == f"local/{run_id}", body
    done = served.wait_status(run_id, "completed", "failed", timeout=10)
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    assert [e["type"] for e in events if e["type"].startswith("agent.tool")] == [
        "agent.toolCalled", "agent.toolReturned"]
    returned = next(e["payload"] for e in events if e["type"] == "agent.toolReturned")
    assert returned["status"] == "forbidden"  # Not called: the rejection is its result.
    assert done["status"] == "completed"
    assert events[-1]["payload"]["outputs"]["agents"][0]["result"]["summary"].startswith(
        "did not proceed")


def test_a_resolve_after_the_run_ended_is_interrupt_already_resolved_on_v2(
        serve: Any) -> None:
    served = _conformance(serve)  # The suite's v2-interrupt-resolve-terminal (RFC 0213 §C).
    cancelled = _create(served, "conformance-approval")
    served.wait_status(cancelled, "waiting-approval", timeout=10)
    status, body, _ = served.request("POST", f"/runs/{cancelled}/cancel", {}, headers=V2)
    assert (status, body["status"]) == (200, "cancelled"), body
    last = _last(served, cancelled)
    status, body = _gate(served, cancelled, v2=True)
    assert (status, body["error"]) == (409, "interrupt_already_resolved"), body
    assert body["details"] == {"runId": f"local/{cancelled}", "nodeId": "gate",
                               "status": "cancelled"}
    # v1 keeps its own code for a cancelled run.
    assert _gate(served, cancelled)[1]["error"] == "interrupt_cancelled"
    # The same at the run's room: one code per state on v2, whatever the node.
    status, body, _ = served.request("POST", f"/runs/{cancelled}/interrupts/room:convo", {
        "resumeValue": {"content": "late"}}, headers=V2)
    assert (status, body["error"]) == (409, "interrupt_already_resolved"), body
    assert _last(served, cancelled) == last  # Nothing appended.
    # Completed, then resolved again: the same 409 (v1: run_terminal).
    completed = _create(served, "conformance-approval")
    served.wait_status(completed, "waiting-approval", timeout=10)
    assert _gate(served, completed, v2=True)[0] == 200
    served.wait_status(completed, "completed", timeout=10)
    status, body = _gate(served, completed, v2=True)
    assert (status, body["error"]) == (409, "interrupt_already_resolved"), body
    assert _gate(served, completed)[1]["error"] == "run_terminal"
    # Negative: an unknown run is 404 not_found; a node the run never had is 404 too.
    status, body = _gate(served, "openwopconformanceunknown1", v2=True)
    assert (status, body["error"]) == (404, "not_found"), body
    status, body, _ = served.request("POST", f"/runs/{completed}/interrupts/elsewhere", ACCEPT,
                                     headers=V2)
    assert (status, body["error"]) == (404, "interrupt_not_found"), body


def test_a_waiting_approval_outlives_the_host(serve: Any) -> None:
    # The stand-in model listens on a new port after a restart: the gate's calls find it
    # (the council never names the port), and the reopened run keeps its tool.
    served = _conformance(serve)
    run_id = _create(served, "conformance-approval")
    served.wait_status(run_id, "waiting-approval", timeout=10)
    assert served.stop() == 0
    again: Served = serve(COUNCILS / "desk.toml", args=("--conformance",), store=served.store)
    assert again.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-approval"
    status, body = _gate(again, run_id)
    assert status == 200, body
    done = again.wait_status(run_id, "completed", "failed", timeout=10)
    assert done["status"] == "completed", done
    assert "Traceback" not in again.logs()


def test_approval_logs_pass_wop_check_on_both_majors(serve: Any) -> None:
    served = _conformance(serve)
    runs = [_create(served, "conformance-approval") for _ in range(2)]
    for run_id, action in zip(runs, ("accept", "reject"), strict=True):
        served.wait_status(run_id, "waiting-approval", timeout=10)
        assert _gate(served, run_id, resume={"resumeValue": {"action": action}})[0] == 200
        served.wait_status(run_id, "completed", timeout=10)
    v2_events = served.request("GET", f"/runs/{runs[0]}/events", headers=V2)[1]["events"]
    granted = next(e["payload"] for e in v2_events if e["type"] == "approval.granted")
    assert granted == {"nodeId": "gate", "kind": "approval",
                       "interruptId": "local/approval~2Fcall~2Fgate~2F1~2F0",
                       "x-wopdsl-principal": "approver"}
    assert served.stop() == 0
    for run_id in runs:
        for flags in ((), ("--v2",)):
            checked = subprocess.run(
                [sys.executable, "-m", "wopdsl", "check", *flags, "--store", str(served.store),
                 run_id], capture_output=True, text=True, timeout=60, check=False)
            assert checked.returncode == 0, checked.stdout + checked.stderr


# The capability families the official suite's not-run scenarios gate on (docs/openwop.md
# §Conformance): none may be advertised, or those scenarios would apply and have to pass.
UNADVERTISED = {"webhooks", "a2a", "a2ui", "mcp", "agents", "multiAgent", "oauth",
                "envelopeContracts", "envelopes", "aiProviders", "prompts", "secrets",
                "credentials", "observability", "memory", "workspace", "authorization",
                "anonymous", "dispatch", "channels", "budgets", "scheduling", "triggerBridge",
                "toolCatalog", "toolHooks", "nodePackRuntimes", "workflowChainPacks", "runList",
                "runDiff", "streamModes", "httpClient", "deadLetter", "compensation",
                "effectSeams", "artifactTypes", "portability", "profiles", "capabilities",
                "minClientVersion", "interrupt", "restTransport"}


def test_discovery_advertises_only_what_the_host_serves(serve: Any) -> None:
    served = _conformance(serve)
    v1 = served.request("GET", "/.well-known/openwop", token=None)[1]
    v2 = served.request("GET", "/.well-known/openwop", token=None,
                        headers={"OpenWOP-Version": "2.0"})[1]
    served_families = {"limits", "conversationPrimitive", "multiPartyConversation", "replay",
                        "channelPresence"}
    metadata = {"protocolVersion", "protocolVersions", "preferredVersion", "fixtures",
                "implementation", "schemaVersions", "supportedEnvelopes"}
    assert set(v1) == served_families | metadata | {"runs"}
    # v1 `runs.pauseResume`; in v2 pause/resume is core (runs.md §Surface): no family record.
    # The v1 envelope list/map have no v2 record (tests/server/test_v2_discovery_schema.py).
    # channelPresence is served on v1 paths (RFC 0110's seam is a v1 seam; v2 reaches it only
    # through a seams profile this host does not advertise): no v2 record.
    assert set(v2) == set(v1) - {"runs", "supportedEnvelopes", "schemaVersions",
                                 "channelPresence"} | {"eventLogSchemaVersion"}
    assert set(v1["runs"]) == {"pauseResume"}
    assert v2["eventLogSchemaVersion"] == 3  # v2 metadata: the era new runs are written in.
    assert UNADVERTISED.isdisjoint(v1) and UNADVERTISED.isdisjoint(v2) and "runs" not in v2
    # Negative: what is advertised is served (the gate of the scenarios that ran).
    assert v1["conversationPrimitive"] is True and v2["multiPartyConversation"]["status"]
    status, body, _ = served.request("POST", "/v1/runs/none-such-run-0001:pause", {})
    assert (status, body["error"]) == (404, "run_not_found")  # runs.pauseResume: served.
    status, body, _ = served.request(  # channelPresence: served (RFC 0110's seam too).
        "POST", "/v1/host/sample/channel-presence/snapshot",
        {"conversationId": "c", "member": "user:someone"})
    assert (status, body["present"]) == (200, ["user:someone"])
